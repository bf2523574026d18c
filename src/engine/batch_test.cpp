// Batch building and validation.
#include "engine/batch.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::engine {
namespace batch_test {

// Two sequences interleaved; every third row wants logits.
Batch make_batch(int n) {
  Batch b;
  for (int i = 0; i < n; ++i) b.add(100 + i, i / 2, i % 2, i % 3 == 0);
  return b;
}

TEST(Batch, AddAppendsOneRowToEachArray) {
  Batch b;
  b.add(5, 0, 1, false);
  b.add(6, 1, 1, true);
  EXPECT_EQ(b.n_tokens(), 2);
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(b.positions, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(b.seq_ids, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(b.want_logits, (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(b.n_outputs(), 1);
}

TEST(Batch, ClearKeepsCapacity) {
  Batch b = make_batch(10);
  const size_t capacity = b.tokens.capacity();
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.tokens.capacity(), capacity);
}

TEST(Batch, ValidateAcceptsInterleavedSequencesInPositionOrder) {
  Batch b = make_batch(10);
  EXPECT_NO_THROW(validate(b, 200));
  b.add(7, 42, 9, true);  // a new sequence may start anywhere (KV holds 0..41)
  EXPECT_NO_THROW(validate(b, 200));
}

TEST(Batch, ValidateListsSequencesInOrderOfFirstAppearance) {
  Batch b = make_batch(6);  // seq 0: positions 0..2, seq 1: 0..2
  b.add(7, 42, 9, true);
  std::vector<SeqSpan> seqs;
  validate(b, 200, seqs);
  ASSERT_EQ(seqs.size(), 3u);
  EXPECT_EQ(seqs[0].seq, 0);
  EXPECT_EQ(seqs[0].last, 2);
  EXPECT_EQ(seqs[1].seq, 1);
  EXPECT_EQ(seqs[1].first, 0);
  EXPECT_EQ(seqs[2].seq, 9);
  EXPECT_EQ(seqs[2].first, 42);
  EXPECT_EQ(seqs[2].last, 42);
}

TEST(Batch, ValidateRejectsBadRowsNamingThem) {
  auto message = [](const Batch& b) {
    try {
      validate(b, 200);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Batch b = make_batch(4);
  b.tokens[2] = 200;
  EXPECT_NE(message(b).find("row 2: token 200"), std::string::npos);
  b = make_batch(4);
  b.positions[3] = 5;  // seq 1: 0 then 5
  EXPECT_NE(message(b).find("row 3: sequence 1 has position 5 after 0"), std::string::npos);
  b = make_batch(4);
  b.positions[0] = -1;
  EXPECT_NE(message(b).find("negative"), std::string::npos);
  b = make_batch(4);
  b.seq_ids.pop_back();
  EXPECT_NE(message(b).find("differ in length"), std::string::npos);
}

}  // namespace batch_test
}  // namespace cohort::engine
