// DecoderOptions: where --exact computes.
#include <string>

#include <gtest/gtest.h>

#include "common/error.h"
#include "engine/decoder.h"

namespace cohort::engine {
namespace decoder_options_test {

TEST(DecoderOptions, ExactComputesOnTheCpuWithoutDev) {
  DecoderOptions o;
  o.exact = true;
  o.n_gpu_layers = 99;  // a GPU would be chosen without --exact where one is visible
  EXPECT_EQ(o.device_of("").device, backend::Device::cpu);
  EXPECT_NO_THROW(o.validate());
}

TEST(DecoderOptions, ExactOnANamedGpuIsAnErrorNamingBoth) {
  DecoderOptions o;
  o.exact = true;
  o.device = "cuda0";
  try {
    o.validate();
    FAIL() << "--exact -dev cuda0 was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--exact"), std::string::npos) << what;
    EXPECT_NE(what.find("-dev cuda0"), std::string::npos) << what;
  }
  o.exact = false;
  EXPECT_EQ(o.device_of("cuda1").device, backend::Device::cuda);
  EXPECT_EQ(o.device_of("cuda1").index, 1);
}

}  // namespace decoder_options_test
}  // namespace cohort::engine
