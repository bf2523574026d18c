// Pooling and normalisation of embeddings, against vectors computed by hand.
#include "engine/pooling.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::engine {
namespace pooling_test {

// Three rows of two dims: [1, 2], [3, 4], [5, 9].
const std::vector<float> kRows = {1, 2, 3, 4, 5, 9};

TEST(Pooling, MeanAveragesEveryRow) {
  const auto out = pool_rows(kRows, 3, 2, Pooling::mean);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FLOAT_EQ(out[0][0], 3.0f);
  EXPECT_FLOAT_EQ(out[0][1], 5.0f);
}

TEST(Pooling, NoneGivesOneVectorPerRow) {
  const auto out = pool_rows(kRows, 3, 2, Pooling::none);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2], (std::vector<float>{5, 9}));
}

TEST(Pooling, ClsAndLastTakeTheFirstAndTheLastRow) {
  EXPECT_EQ(pool_rows(kRows, 3, 2, Pooling::cls)[0], (std::vector<float>{1, 2}));
  EXPECT_EQ(pool_rows(kRows, 3, 2, Pooling::last)[0], (std::vector<float>{5, 9}));
}

TEST(Pooling, ClsAndLastReadOneRowOfThePrompt) {
  EXPECT_TRUE(pooling_reads_row(Pooling::cls, 0, 5));
  EXPECT_FALSE(pooling_reads_row(Pooling::cls, 4, 5));
  EXPECT_TRUE(pooling_reads_row(Pooling::last, 4, 5));
  EXPECT_FALSE(pooling_reads_row(Pooling::last, 0, 5));
  for (int r = 0; r < 5; ++r) {
    EXPECT_TRUE(pooling_reads_row(Pooling::mean, r, 5));
    EXPECT_TRUE(pooling_reads_row(Pooling::none, r, 5));
  }
  // The single row read is what pool_rows then receives.
  const std::vector<float> last_row = {5, 9};
  EXPECT_EQ(pool_rows(last_row, 1, 2, Pooling::last)[0], last_row);
}

TEST(Pooling, NamesAndGgufValuesAreLlamaCpps) {
  EXPECT_EQ(parse_pooling("mean"), Pooling::mean);
  EXPECT_EQ(parse_pooling("none"), Pooling::none);
  EXPECT_EQ(parse_pooling("cls"), Pooling::cls);
  EXPECT_EQ(parse_pooling("last"), Pooling::last);
  EXPECT_THROW(parse_pooling("rank"), Error);
  EXPECT_EQ(pooling_from_gguf(1), Pooling::mean);
  EXPECT_EQ(pooling_from_gguf(2), Pooling::cls);
  EXPECT_EQ(pooling_from_gguf(-1), std::nullopt);  // unspecified
  EXPECT_EQ(pooling_from_gguf(4), std::nullopt);   // rank: a reranker's head
}

TEST(EmbeddingNormalize, EuclideanGivesUnitLength) {
  std::vector<float> v = {3, -4};
  normalize_embedding(v, 2);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], -0.8f);
}

TEST(EmbeddingNormalize, MinusOneLeavesTheVector) {
  std::vector<float> v = {3, -4};
  normalize_embedding(v, -1);
  EXPECT_EQ(v, (std::vector<float>{3, -4}));
}

TEST(EmbeddingNormalize, ZeroScalesTheLargestMagnitudeToInt16Range) {
  std::vector<float> v = {1, -2};
  normalize_embedding(v, 0);
  EXPECT_FLOAT_EQ(v[1], -32760.0f);
  EXPECT_FLOAT_EQ(v[0], 16380.0f);
}

TEST(EmbeddingNormalize, OtherValuesArePNorms) {
  std::vector<float> v = {1, -3};
  normalize_embedding(v, 1);  // taxicab: divided by 4
  EXPECT_FLOAT_EQ(v[0], 0.25f);
  EXPECT_FLOAT_EQ(v[1], -0.75f);
  std::vector<float> w = {1, 1};
  normalize_embedding(w, 3);
  EXPECT_NEAR(w[0], 1.0 / std::cbrt(2.0), 1e-6);
}

TEST(EmbeddingNormalize, AZeroVectorStaysZero) {
  std::vector<float> v = {0, 0};
  normalize_embedding(v, 2);
  EXPECT_EQ(v, (std::vector<float>{0, 0}));
}

}  // namespace pooling_test
}  // namespace cohort::engine
