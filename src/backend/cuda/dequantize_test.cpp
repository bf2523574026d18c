#include "backend/cuda/dequantize.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "common/error.h"
#include "common/half.h"
#include "gguf/gguf_file.h"
#include "quant/quant.h"

namespace cohort::cuda {
namespace dequantize_test {

using gguf::TensorType;

constexpr TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                 TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                                 TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

// Elements where the two results differ in bits (two NaNs count as equal:
// the GPU's half conversion may not keep a NaN's payload).
int64_t count_mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    bad += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]);
  }
  return bad;
}

std::vector<float> on_gpu(TensorType type, const uint8_t* bytes, size_t n_bytes, int64_t n) {
  DeviceBuffer<uint8_t> src(n_bytes);
  src.upload({bytes, n_bytes});
  DeviceBuffer<float> dst(static_cast<size_t>(n));
  // Poison: 0x7f7f7f7f is a finite float no element decodes to, so an
  // element the kernel leaves unwritten shows as a mismatch.
  CUDA_CHECK(cudaMemset(dst.data(), 0x7f, dst.size() * sizeof(float)));
  dequantize(type, src.data(), dst.data(), n, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  return dst.download();
}

std::vector<float> on_cpu(TensorType type, const uint8_t* bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  quant::dequantize(type, bytes, out.data(), n);
  return out;
}

TEST(CudaDequantize, EqualsTheCpuOnRandomBlocksOfEveryType) {
  COHORT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  for (TensorType type : kTypes) {
    SCOPED_TRACE(std::string(gguf::type_name(type)));
    const int64_t n = 4096 * static_cast<int64_t>(gguf::traits(type).block_size);
    std::vector<uint8_t> bytes(gguf::row_bytes(type, n));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    const std::vector<float> want = on_cpu(type, bytes.data(), n);
    EXPECT_EQ(count_mismatches(on_gpu(type, bytes.data(), bytes.size(), n), want), 0);
  }
}

// The BF16 expansion (the GEMM operands of a prefill, 8 elements a thread)
// is the F32 one rounded to BF16, bit for bit; odd-sized tensors take the
// one-element path.
TEST(CudaDequantize, Bf16IsTheCpuValueRounded) {
  COHORT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  for (TensorType type : kTypes) {
    for (int64_t blocks : {4096, 3}) {
      SCOPED_TRACE(std::string(gguf::type_name(type)) + " x " + std::to_string(blocks));
      const int64_t n = blocks * static_cast<int64_t>(gguf::traits(type).block_size);
      std::vector<uint8_t> bytes(gguf::row_bytes(type, n));
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      const std::vector<float> want = on_cpu(type, bytes.data(), n);
      DeviceBuffer<uint8_t> src(bytes.size());
      src.upload(bytes);
      DeviceBuffer<uint16_t> dst(static_cast<size_t>(n));
      CUDA_CHECK(cudaMemset(dst.data(), 0x7f, dst.size() * sizeof(uint16_t)));
      dequantize(type, src.data(), reinterpret_cast<__nv_bfloat16*>(dst.data()), n, nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<uint16_t> got = dst.download();
      int64_t bad = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
          bad += !std::isnan(bf16_to_f32(got[i]));
        } else {
          bad += got[i] != f32_to_bf16(want[i]);
        }
      }
      EXPECT_EQ(bad, 0);
    }
  }
}

// COHORT_TEST_MODEL names a GGUF file (the GPU test script passes the default
// model); every tensor of a supported type must dequantize to the same bits.
TEST(CudaDequantize, EqualsTheCpuOnEveryTensorOfAModel) {
  COHORT_REQUIRE_CUDA_DEVICE();
  const char* path = std::getenv("COHORT_TEST_MODEL");
  if (path == nullptr) GTEST_SKIP() << "COHORT_TEST_MODEL is not set";
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  int checked = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (!can_dequantize(t.type)) continue;
    SCOPED_TRACE(t.name);
    const auto bytes = file.tensor_data(t);
    const auto n = static_cast<int64_t>(t.n_elements);
    const std::vector<float> want = on_cpu(t.type, bytes.data(), n);
    EXPECT_EQ(count_mismatches(on_gpu(t.type, bytes.data(), bytes.size(), n), want), 0);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(file.tensors().size()));
}

TEST(CudaDequantize, RejectsPartialBlocksAndUnsupportedTypes) {
  EXPECT_THROW(dequantize(TensorType::Q4_K, nullptr, static_cast<float*>(nullptr), 100, nullptr), Error);
  EXPECT_THROW(dequantize(TensorType::Q5_0, nullptr, static_cast<float*>(nullptr), 32, nullptr), Error);
  EXPECT_FALSE(can_dequantize(TensorType::Q2_K));
  for (TensorType type : kTypes) EXPECT_EQ(can_dequantize(type), quant::is_supported(type));
}

TEST(CudaDevices, ListsDevicesOrSaysWhyThereAreNone) {
  const DeviceList list = list_devices();
  if (list.devices.empty()) {
    EXPECT_FALSE(list.none_reason.empty());
    return;
  }
  for (const DeviceInfo& d : list.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.total_bytes, 0u);
    EXPECT_LE(d.free_bytes, d.total_bytes);
    EXPECT_GE(d.cc_major, 5);
    EXPECT_GT(d.sm_count, 0);
  }
  ASSERT_EQ(list.peer.size(), list.devices.size());
  for (size_t i = 0; i < list.peer.size(); ++i) EXPECT_FALSE(list.peer[i][i]);
}

}  // namespace dequantize_test
}  // namespace cohort::cuda
