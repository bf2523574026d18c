// The routing of -ar host/p2p reductions by size (comm/ar_routing.h): each
// threshold and one BF16 element either side of it, the defaults, the
// variables that set them and the errors for values that are not sizes.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "comm/ar_routing.h"
#include "common/error.h"

namespace cohort::comm {
namespace ar_routing_test {

constexpr int64_t kElement = 2;  // bytes of one BF16 element

TEST(ArRouting, DefaultsSendSmallToTheKernelFrom512KiBToCopyEnginesAndNothingToNccl) {
  const ArRouting r;
  EXPECT_EQ(ar_path(16, r), ArPath::kernel);
  EXPECT_EQ(ar_path((512 << 10) - kElement, r), ArPath::kernel);
  EXPECT_EQ(ar_path(512 << 10, r), ArPath::copy_engine);
  EXPECT_EQ(ar_path((512 << 10) + kElement, r), ArPath::copy_engine);
  EXPECT_EQ(ar_path(int64_t{4} << 30, r), ArPath::copy_engine);
}

TEST(ArRouting, EachThresholdAndOneElementEitherSide) {
  const ArRouting r{.ce_min_bytes = 64 << 10, .nccl_min_bytes = 8 << 20};
  EXPECT_EQ(ar_path((64 << 10) - kElement, r), ArPath::kernel);
  EXPECT_EQ(ar_path(64 << 10, r), ArPath::copy_engine);
  EXPECT_EQ(ar_path((8 << 20) - kElement, r), ArPath::copy_engine);
  EXPECT_EQ(ar_path(8 << 20, r), ArPath::nccl);
  EXPECT_EQ(ar_path((8 << 20) + kElement, r), ArPath::nccl);
}

TEST(ArRouting, NcclBelowTheCopyEngineThresholdTakesEverythingFromItsOwn) {
  const ArRouting r{.ce_min_bytes = 1 << 20, .nccl_min_bytes = 4096};
  EXPECT_EQ(ar_path(4096 - kElement, r), ArPath::kernel);
  EXPECT_EQ(ar_path(4096, r), ArPath::nccl);
  EXPECT_EQ(ar_path(2 << 20, r), ArPath::nccl);
}

class ArRoutingEnv : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    unsetenv("COHORT_AR_CE_MIN_BYTES");
    unsetenv("COHORT_AR_NCCL_MIN_BYTES");
  }
};

TEST_F(ArRoutingEnv, UnsetOrEmptyGivesTheDefaults) {
  ArRouting r = ar_routing_from_env();
  EXPECT_EQ(r.ce_min_bytes, 512 << 10);
  EXPECT_EQ(r.nccl_min_bytes, -1);
  setenv("COHORT_AR_CE_MIN_BYTES", "", 1);
  r = ar_routing_from_env();
  EXPECT_EQ(r.ce_min_bytes, 512 << 10);
}

TEST_F(ArRoutingEnv, TheVariablesSetTheThresholdsWithUnits) {
  setenv("COHORT_AR_CE_MIN_BYTES", "1M", 1);
  setenv("COHORT_AR_NCCL_MIN_BYTES", "8200", 1);
  const ArRouting r = ar_routing_from_env();
  EXPECT_EQ(r.ce_min_bytes, 1 << 20);
  EXPECT_EQ(r.nccl_min_bytes, 8200);
}

TEST_F(ArRoutingEnv, AValueThatIsNotASizeIsAnErrorNamingTheVariable) {
  for (const char* bad : {"lots", "12Q", "0", "-4K", "5G"}) {
    setenv("COHORT_AR_NCCL_MIN_BYTES", bad, 1);
    try {
      ar_routing_from_env();
      ADD_FAILURE() << bad << ": no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("COHORT_AR_NCCL_MIN_BYTES"), std::string::npos) << what;
      EXPECT_NE(what.find(bad), std::string::npos) << what;
    }
  }
}

TEST(ParseByteSize, UnitsAreBinaryMultiples) {
  EXPECT_EQ(parse_byte_size("--sizes", "8"), 8);
  EXPECT_EQ(parse_byte_size("--sizes", "8K"), 8192);
  EXPECT_EQ(parse_byte_size("--sizes", "8k"), 8192);
  EXPECT_EQ(parse_byte_size("--sizes", "4M"), 4 << 20);
  EXPECT_EQ(parse_byte_size("--sizes", "4G"), int64_t{4} << 30);
}

}  // namespace ar_routing_test
}  // namespace cohort::comm
