// DecoderOptions: where --exact computes; a routing variable of the
// reductions that is not a size fails the options, naming it.
#include <cstdlib>
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

TEST(DecoderOptions, ARoutingVariableThatIsNotASizeIsAnErrorNamingIt) {
  DecoderOptions o;
  o.split_mode = "tensor";
  o.device = "cpu,cpu";
  setenv("COHORT_AR_CE_MIN_BYTES", "half", 1);
  try {
    o.validate();
    ADD_FAILURE() << "COHORT_AR_CE_MIN_BYTES=half was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("COHORT_AR_CE_MIN_BYTES: 'half' is not a size"), std::string::npos) << e.what();
  }
  unsetenv("COHORT_AR_CE_MIN_BYTES");
  EXPECT_NO_THROW(o.validate());
}

}  // namespace decoder_options_test
}  // namespace cohort::engine
