// GPU ranks sharing one device reduce through the host: every rank's BF16
// device buffer receives bf16(sum in rank order of its contributions), the
// rounding done here in double arithmetic, bit for bit on every rank, at
// sizes from one element to the staging buffer's capacity, for 2 to 4 ranks
// and many calls in a row; too large a reduction is a clear error.
#include "backend/cuda/staged_communicator.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

constexpr size_t kCapacity = size_t{1} << 20;  // F32 elements of staging per rank

// A BF16 value (as bits) of rank r's element i: signs and magnitudes over
// 2^-12 .. 2^12, so that sums round.
uint16_t input(int r, int64_t i) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(r + 1) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  const uint32_t exponent = 115 + h % 25, mantissa = (h >> 8) & 0x7f, sign = (h >> 31) & 1;
  return static_cast<uint16_t>(sign << 15 | exponent << 7 | mantissa);
}

float f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// x rounded to BF16 (ties to even) with double arithmetic, as bits.
uint16_t bf16_reference(float x) {
  if (x == 0.0f) return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16);
  const int e = std::ilogb(x);
  const double scale = std::ldexp(1.0, 7 - e);
  const auto r = static_cast<float>(std::nearbyint(static_cast<double>(x) * scale) / scale);
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(r) >> 16);
}

TEST(CudaStagedCommunicator, RanksSharingOneGpuGetTheRankOrderSum) {
  COHORT_REQUIRE_CUDA_DEVICE();
  for (int n_ranks : {2, 3, 4}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{4096}, int64_t{kCapacity * 2}}) {  // BF16: 2 per F32 slot
      std::vector<uint16_t> expect(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        float acc = f32(input(0, i));
        for (int r = 1; r < n_ranks; ++r) acc += f32(input(r, i));
        expect[static_cast<size_t>(i)] = bf16_reference(acc);
      }
      comm::CpuGroup group(n_ranks);
      std::vector<std::vector<uint16_t>> got(static_cast<size_t>(n_ranks));
      std::vector<std::thread> threads;
      for (int r = 0; r < n_ranks; ++r) {
        threads.emplace_back([&, r] {
          CUDA_CHECK(cudaSetDevice(0));
          cudaStream_t stream = nullptr;
          CUDA_CHECK(cudaStreamCreate(&stream));
          {
            StagedCommunicator c(group, r, stream, kCapacity);
            std::vector<uint16_t> mine(static_cast<size_t>(n));
            DeviceBuffer<uint16_t> x(static_cast<size_t>(n));
            for (int call = 0; call < 3; ++call) {  // the buffer is reused call after call
              for (int64_t i = 0; i < n; ++i) mine[static_cast<size_t>(i)] = input(r, i);
              x.upload(mine);
              c.all_reduce_sum(comm::Buffer{x.data(), comm::DType::bf16, n}, comm::Queue{stream});
              CUDA_CHECK(cudaStreamSynchronize(stream));
            }
            got[static_cast<size_t>(r)] = x.download();
          }
          CUDA_CHECK(cudaStreamDestroy(stream));
        });
      }
      for (std::thread& t : threads) t.join();
      for (int r = 0; r < n_ranks; ++r) {
        EXPECT_EQ(got[static_cast<size_t>(r)], expect) << n_ranks << " ranks, " << n << " elements, rank " << r;
      }
    }
  }
}

TEST(CudaStagedCommunicator, TooLargeAReductionIsAClearError) {
  COHORT_REQUIRE_CUDA_DEVICE();
  CUDA_CHECK(cudaSetDevice(0));
  comm::CpuGroup group(1);
  StagedCommunicator c(group, 0, nullptr, 16);
  DeviceBuffer<float> x(17);
  try {
    c.all_reduce_sum(comm::Buffer{x.data(), comm::DType::f32, 17}, comm::Queue{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the rank's staging buffer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cohort::cuda
