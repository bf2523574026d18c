// Batch building, validation, and the split into micro-batches.
#include "engine/batch.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::engine {
namespace {

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

TEST(Batch, SplitKeepsOrderAndCoversEveryRow) {
  const Batch b = make_batch(10);
  const auto ubs = split_ubatches(b, 4);
  ASSERT_EQ(ubs.size(), 3u);
  const int sizes[] = {4, 4, 2};
  int row = 0;
  int outputs = 0;
  for (size_t u = 0; u < ubs.size(); ++u) {
    EXPECT_EQ(ubs[u].n_tokens(), sizes[u]);
    EXPECT_EQ(ubs[u].offset, row);
    EXPECT_EQ(ubs[u].output_offset, outputs);
    for (int i = 0; i < ubs[u].n_tokens(); ++i, ++row) {
      const auto r = static_cast<size_t>(row);
      const auto k = static_cast<size_t>(i);
      EXPECT_EQ(ubs[u].tokens[k], b.tokens[r]);
      EXPECT_EQ(ubs[u].positions[k], b.positions[r]);
      EXPECT_EQ(ubs[u].seq_ids[k], b.seq_ids[r]);
      EXPECT_EQ(ubs[u].want_logits[k], b.want_logits[r]);
    }
    outputs += ubs[u].n_outputs();
  }
  EXPECT_EQ(row, 10);
  EXPECT_EQ(outputs, b.n_outputs());
  EXPECT_EQ(view(b, 8, 10).output_offset, ubs[2].output_offset);
}

TEST(Batch, SplitEdgeCases) {
  EXPECT_TRUE(split_ubatches(Batch{}, 8).empty());
  EXPECT_EQ(split_ubatches(make_batch(8), 8).size(), 1u);
  EXPECT_EQ(split_ubatches(make_batch(8), 1).size(), 8u);
  EXPECT_EQ(split_ubatches(make_batch(3), 100).size(), 1u);
  EXPECT_THROW(split_ubatches(make_batch(3), 0), Error);
}

TEST(Batch, ValidateAcceptsInterleavedSequencesInPositionOrder) {
  Batch b = make_batch(10);
  EXPECT_NO_THROW(validate(b, 200));
  b.add(7, 42, 9, true);  // a new sequence may start anywhere (KV holds 0..41)
  EXPECT_NO_THROW(validate(b, 200));
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

}  // namespace
}  // namespace cohort::engine
