#include "tokenizer/string_index.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cohort::tokenizer {
namespace string_index_test {

// Keys of every length up to 40 that differ from each other in one byte at
// each position, or only in length, or only in a NUL: the cases where a
// shortcut compare or hash of short keys would go wrong.
std::vector<std::string> tricky_keys() {
  std::vector<std::string> keys{""};
  for (size_t n = 1; n <= 40; ++n) {
    const std::string base(n, 'a');
    keys.push_back(base);
    keys.push_back(std::string(n - 1, 'a') + '\0');
    for (size_t i = 0; i < n; ++i) {
      std::string k = base;
      k[i] = 'b';
      keys.push_back(k);
      k[i] = static_cast<char>(0xE2);
      keys.push_back(k);
    }
  }
  return keys;
}

TEST(StringIndex, FindsEveryKeyAndNothingElse) {
  const std::vector<std::string> keys = tricky_keys();
  StringIndex index;
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(index.insert(keys[i], static_cast<int32_t>(i)), static_cast<int32_t>(i));
  ASSERT_EQ(index.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(index.find(keys[i]), static_cast<int32_t>(i)) << i;
  EXPECT_EQ(index.find("c"), StringIndex::kAbsent);
  EXPECT_EQ(index.find(std::string(41, 'a')), StringIndex::kAbsent);
  EXPECT_EQ(index.find(std::string(7, 'a') + 'c'), StringIndex::kAbsent);
  EXPECT_EQ(index.find(std::string("aa\0b", 4)), StringIndex::kAbsent);
}

TEST(StringIndex, RandomKeysAgainstAStandardMap) {
  std::mt19937 rng(11);
  std::map<std::string, int32_t> want;
  StringIndex index;
  for (int32_t i = 0; i < 20000; ++i) {
    std::string k(rng() % 24, '\0');
    for (char& c : k) c = static_cast<char>("ab \xE2\x96"[rng() % 5]);
    const int32_t stored = index.insert(k, i);
    const int32_t first = want.emplace(k, i).first->second;  // the first id given to k
    EXPECT_EQ(stored, first);
  }
  EXPECT_EQ(index.size(), want.size());
  for (const auto& [key, id] : want) EXPECT_EQ(index.find(key), id);
}

TEST(StringIndex, AssignAllKeepsTheLastOfEqualKeys) {
  StringIndex index;
  index.assign_all(std::vector<std::string>{"x", "yy", "x", ""});
  EXPECT_EQ(index.find("x"), 2);
  EXPECT_EQ(index.find("yy"), 1);
  EXPECT_EQ(index.find(""), 3);
  EXPECT_EQ(index.size(), 3u);
}

}  // namespace string_index_test
}  // namespace cohort::tokenizer
