#include "common/comma_list.h"

#include <gtest/gtest.h>

namespace cohort {
namespace comma_list_test {

TEST(CommaList, KeepsEveryEntryAsItIs) {
  EXPECT_EQ(split_commas("cuda0,cuda1"), (std::vector<std::string>{"cuda0", "cuda1"}));
  EXPECT_EQ(split_commas("a"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(split_commas(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_commas(",b,"), (std::vector<std::string>{"", "b", ""}));
}

}  // namespace comma_list_test
}  // namespace cohort
