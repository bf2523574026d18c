// Decoder::submit/wait: the same logits as decode(), bit for bit, under one
// rank and under tensor-parallel CPU ranks; a step's logits stay readable
// while the next one computes; misuse and a bad batch are errors before
// anything runs.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "engine/decoder.h"
#include "engine/decoder_testing.h"
#include "model/model.h"

namespace cohort::engine {
namespace decoder_submit_test {

DecoderOptions small(const std::string& devices = "cpu") { return options_on(devices); }

class DecoderSubmit : public ModelFileTest<gguf::TensorType::Q8_0> {};

TEST_F(DecoderSubmit, GivesDecodesLogitsBitForBit) {
  const std::vector<float> sync = stepped_logits(*model_, small(), Drive::decode);
  EXPECT_EQ(stepped_logits(*model_, small(), Drive::submit), sync);
  EXPECT_EQ(stepped_logits(*model_, small(), Drive::overlap), sync);
}

TEST_F(DecoderSubmit, GivesDecodesLogitsOnTensorParallelRanks) {
  const std::vector<float> sync = stepped_logits(*model_, small("cpu,cpu,cpu"), Drive::decode);
  EXPECT_EQ(stepped_logits(*model_, small("cpu,cpu,cpu"), Drive::overlap), sync);
}

TEST_F(DecoderSubmit, WarmUpIsNothingOnTheCpu) {  // it captures graphs, which the CPU has not
  Decoder dec(*model_, small());
  EXPECT_EQ(dec.warm_up(4), 0);
  EXPECT_EQ(dec.blocks().n_seqs(), 0);
}

// Batch::best_k: each logit row's best pairs, as the host sampler would
// select them from the same step's logits, on one rank and on two.
TEST_F(DecoderSubmit, BestLogitsAreTheRowsSelection) {
  const size_t n_vocab = static_cast<size_t>(model_->hparams().n_vocab);
  for (const std::string dev : {"cpu", "cpu,cpu"}) {
    SCOPED_TRACE(dev);
    const std::vector<float> logits = stepped_logits(*model_, options_on(dev), Drive::decode);
    for (int k : {1, 40}) {
      for (Drive drive : {Drive::decode, Drive::submit}) {
        std::vector<TokenLogit> best;
        workload_logits(*model_, options_on(dev), {60, 40, 8, 11, 7}, drive, k, &best);
        EXPECT_TRUE(same_best(best, select_rows(logits, n_vocab, k))) << "k = " << k;
      }
    }
  }
  Decoder dec(*model_, small());
  dec.reserve(0, 4);
  Batch b;
  b.add(1, 0, 0, true);
  b.best_k = backend::kMaxBestLogits + 1;
  EXPECT_THROW(dec.decode(b), Error);
  b.best_k = -1;
  EXPECT_THROW(dec.decode(b), Error);
}

TEST_F(DecoderSubmit, MisuseAndABadBatchAreErrorsBeforeAnythingRuns) {
  Decoder dec(*model_, small());
  EXPECT_THROW(dec.wait(), Error);  // nothing submitted
  dec.reserve(0, 4);
  Batch bad;
  bad.add(1, 1, 0, true);  // does not start at the committed length 0
  EXPECT_THROW(dec.submit(bad), Error);
  EXPECT_THROW(dec.wait(), Error);  // the bad batch was never started
  EXPECT_EQ(dec.blocks().n_committed(0), 0);
  Batch ok;
  ok.add(1, 0, 0, true);
  dec.submit(ok);
  EXPECT_THROW(dec.submit(ok), Error);  // one step in flight at a time
  EXPECT_THROW(dec.decode(ok), Error);
  EXPECT_EQ(dec.wait().size(), static_cast<size_t>(dec.n_vocab()));
  EXPECT_EQ(dec.blocks().n_committed(0), 1);
}

}  // namespace decoder_submit_test
}  // namespace cohort::engine
