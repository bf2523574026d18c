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
namespace {

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

}  // namespace
}  // namespace cohort::cuda
