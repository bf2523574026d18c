// Decoder::submit/wait on the GPU: the runner thread drives the CUDA
// backend (its device set there, its graphs replayed from there), and the
// logits are decode()'s bit for bit, on one GPU and on two ranks sharing it.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "engine/decoder.h"
#include "engine/decoder_testing.h"
#include "model/model.h"

namespace cohort::cuda {
namespace cuda_decoder_submit_test {

TEST(CudaDecoderSubmit, GivesDecodesLogitsBitForBit) {
  COHORT_REQUIRE_CUDA_DEVICE();
  const std::string path = engine::write_model(gguf::TensorType::Q8_0, model::Family::llama);
  const auto m = model::Model::load(path);
  for (const std::string dev : {"cuda0", "cuda0,cuda0"}) {
    SCOPED_TRACE(dev);
    engine::DecoderOptions o;
    o.device = dev;
    if (dev.find(',') != std::string::npos) o.split_mode = "tensor";
    const std::vector<float> sync = engine::stepped_logits(*m, o, engine::Drive::decode);
    EXPECT_EQ(engine::stepped_logits(*m, o, engine::Drive::submit), sync);
    EXPECT_EQ(engine::stepped_logits(*m, o, engine::Drive::overlap), sync);
  }
  std::filesystem::remove(path);
}

// Batch::best_k: the pairs the GPU selects are the host's selection of the
// same step's logits (which a best_k step does not copy), bit for bit.
// Prompt reuse on the GPU: the rows a new sequence copies from an ended
// one's partly filled block (device-to-device, before the step) give the
// logits the same step gave over the rows computed in place, bit for bit,
// in every KV cache type (Q8_0 copies its scales too), on one GPU and on
// two ranks sharing it.
TEST(CudaDecoderSubmit, CopiedPromptRowsGiveTheLogitsOfTheComputedOnes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  const std::string path = engine::write_model(gguf::TensorType::Q4_K, model::Family::llama);
  const auto m = model::Model::load(path);
  for (const std::string dev : {"cuda0", "cuda0,cuda0"}) {
    for (const char* type : {"f16", "bf16", "q8_0"}) {
      SCOPED_TRACE(dev + " " + type);
      engine::DecoderOptions o;
      o.device = dev;
      if (dev.find(',') != std::string::npos) o.split_mode = "tensor";
      o.cache_type_k = o.cache_type_v = type;
      o.n_ctx = 256;
      engine::Decoder dec(*m, o);
      const engine::ReusedPrompt r = engine::reused_prompt_logits(dec, 5);
      EXPECT_EQ(r.n_cached, 25);
      EXPECT_EQ(r.reused, r.computed);
    }
  }
  std::filesystem::remove(path);
}

TEST(CudaDecoderSubmit, BestLogitsAreTheRowsSelection) {
  COHORT_REQUIRE_CUDA_DEVICE();
  const std::string path = engine::write_model(gguf::TensorType::Q4_K, model::Family::llama);
  const auto m = model::Model::load(path);
  const size_t n_vocab = static_cast<size_t>(m->hparams().n_vocab);
  for (const std::string dev : {"cuda0", "cuda0,cuda0"}) {
    SCOPED_TRACE(dev);
    engine::DecoderOptions o;
    o.device = dev;
    if (dev.find(',') != std::string::npos) o.split_mode = "tensor";
    const std::vector<float> logits = engine::stepped_logits(*m, o, engine::Drive::decode);
    for (int k : {1, 40, backend::kMaxBestLogits}) {
      for (engine::Drive drive : {engine::Drive::decode, engine::Drive::submit}) {
        std::vector<engine::TokenLogit> best;
        engine::workload_logits(*m, o, {60, 40, 8, 11, 7}, drive, k, &best);
        EXPECT_TRUE(engine::same_best(best, engine::select_rows(logits, n_vocab, k))) << "k = " << k;
      }
    }
  }
  std::filesystem::remove(path);
}

// The server's warm-up: two steps of each batch size, their sequences freed,
// and the logits of later steps as without it.
TEST(CudaDecoderSubmit, WarmUpRunsEachBatchSizeTwiceAndChangesNoLogits) {
  COHORT_REQUIRE_CUDA_DEVICE();
  const std::string path = engine::write_model(gguf::TensorType::Q4_K, model::Family::llama);
  const auto m = model::Model::load(path);
  engine::DecoderOptions o;
  o.device = "cuda0";
  o.n_ctx = 256;
  {
    engine::Decoder dec(*m, o);
    const int free = dec.blocks().n_free_blocks();
    EXPECT_EQ(dec.warm_up(5), 10);
    EXPECT_EQ(dec.blocks().n_free_blocks(), free);
    EXPECT_EQ(dec.blocks().audit(), "");
    EXPECT_EQ(dec.blocks().n_seqs(), 0);
  }
  EXPECT_EQ(engine::stepped_logits(*m, o, engine::Drive::warmed),
            engine::stepped_logits(*m, o, engine::Drive::decode));
  std::filesystem::remove(path);
}

}  // namespace cuda_decoder_submit_test
}  // namespace cohort::cuda
