// UTF-8 helpers and the GPT-2 byte table.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/utf8.h"

namespace cohort::tokenizer {
namespace utf8_test {

TEST(ByteTable, EveryByteRoundTripsThroughADistinctCodepoint) {
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cpt = byte_to_codepoint(static_cast<uint8_t>(b));
    EXPECT_EQ(codepoint_to_byte(cpt), b);
    seen.insert(cpt);
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(byte_to_codepoint(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(byte_to_codepoint('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(byte_to_codepoint('a'), static_cast<uint32_t>('a'));
  EXPECT_EQ(codepoint_to_byte(0x20AC), -1);
}

TEST(ByteTable, TextOfAllBytesRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string text = bytes_to_table_text(all);
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(table_text_to_bytes(text), all);
}

TEST(ByteTable, TextOutsideTheTableIsRejected) {
  EXPECT_EQ(table_text_to_bytes("\xE2\x82\xAC"), std::nullopt);  // '€' is no byte
  EXPECT_EQ(table_text_to_bytes("\xC1\xA1"), std::nullopt);      // overlong 'a'
  EXPECT_EQ(table_text_to_bytes("\xC4\xA0hi"), " hi");
}

TEST(Utf8, NormalizeMatchesLlamaCppLeniency) {
  EXPECT_EQ(normalize_utf8("plain caf\xC3\xA9"), "plain caf\xC3\xA9");
  EXPECT_EQ(normalize_utf8("\xFF"), "\xEF\xBF\xBD");
  EXPECT_EQ(normalize_utf8("a\xC3"), "a\xEF\xBF\xBD");
  EXPECT_EQ(normalize_utf8("\x80x"), "\xEF\xBF\xBDx");
  EXPECT_EQ(normalize_utf8(std::string("\xC0\x80", 2)), std::string(1, '\0'));  // overlong NUL
  EXPECT_EQ(normalize_utf8("\xED\xA0\x80"), "\xED\xA0\x80");  // surrogates pass
  EXPECT_EQ(normalize_utf8("\xF4\x90\x80\x80"), "\xEF\xBF\xBD");  // above U+10FFFF
  EXPECT_EQ(normalize_utf8("\xE2\x82z"), "\xEF\xBF\xBD\xEF\xBF\xBDz");
}

TEST(Utf8, ValidityIsStrict) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80 ok"));
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("abcdefgh\xE2\x82"));
}

TEST(Utf8, EmittablePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  EXPECT_EQ(utf8_emittable_prefix("abc"), 3u);
  EXPECT_EQ(utf8_emittable_prefix("abc\xE2\x82"), 3u);
  EXPECT_EQ(utf8_emittable_prefix("\xE2\x82\xAC"), 3u);
  EXPECT_EQ(utf8_emittable_prefix("\xF0\x9F"), 0u);
  EXPECT_EQ(utf8_emittable_prefix("x\xFF"), 2u);    // can never complete: emit (as U+FFFD)
  EXPECT_EQ(utf8_emittable_prefix("x\xE2" "a"), 3u);
}

TEST(Utf8, ToValidReplacesEachMaximalIllFormedSubpartOnce) {
  EXPECT_EQ(to_valid_utf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(to_valid_utf8("\xE2\x82"), "\xEF\xBF\xBD");
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\x98" "A"), "\xEF\xBF\xBD" "A");
  EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(to_valid_utf8("\xE2\x82\xAC"), "\xE2\x82\xAC");
}

}  // namespace utf8_test
}  // namespace cohort::tokenizer
