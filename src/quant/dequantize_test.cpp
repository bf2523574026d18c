#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_testing.h"

namespace cohort::quant {
namespace dequantize_test {

using namespace testing;

// Dequantizes one value of `Block` with every runnable ISA; the results must agree.
template <typename Block>
std::vector<float> dequantize_all_isas(TensorType type, const Block& block) {
  IsaGuard guard;
  std::vector<float> first;
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    std::vector<float> out(gguf::traits(type).block_size);
    dequantize(type, &block, out.data(), static_cast<int64_t>(out.size()));
    if (first.empty()) first = out;
    for (size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(same_float(out[i], first[i])) << isa_name(isa) << " " << i;
  }
  return first;
}

TEST(Blocks, SizesMatchTheTypeTable) {
  EXPECT_EQ(sizeof(BlockQ4_0), gguf::traits(TensorType::Q4_0).type_size);
  EXPECT_EQ(sizeof(BlockQ4_1), gguf::traits(TensorType::Q4_1).type_size);
  EXPECT_EQ(sizeof(BlockQ8_0), gguf::traits(TensorType::Q8_0).type_size);
  EXPECT_EQ(sizeof(BlockQ4_K), gguf::traits(TensorType::Q4_K).type_size);
  EXPECT_EQ(sizeof(BlockQ5_K), gguf::traits(TensorType::Q5_K).type_size);
  EXPECT_EQ(sizeof(BlockQ6_K), gguf::traits(TensorType::Q6_K).type_size);
  EXPECT_EQ(gguf::traits(TensorType::Q4_K).block_size, static_cast<uint32_t>(kQKK));
  EXPECT_EQ(gguf::traits(TensorType::Q8_0).block_size, static_cast<uint32_t>(kQK));
}

TEST(Dequantize, Q4_0LowNibblesFirstThenHighOffsetByEight) {
  BlockQ4_0 b{};
  b.d = f32_to_f16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto v = dequantize_all_isas(TensorType::Q4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], 0.5f * static_cast<float>(j - 8));
    EXPECT_EQ(v[j + 16], 0.5f * static_cast<float>(7 - j));
  }
}

TEST(Dequantize, Q4_1AddsTheMin) {
  BlockQ4_1 b{};
  b.d = f32_to_f16(0.25f);
  b.m = f32_to_f16(-1.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (j << 4));
  const auto v = dequantize_all_isas(TensorType::Q4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], 0.25f * static_cast<float>(j) - 1.0f);
    EXPECT_EQ(v[j + 16], v[j]);
  }
}

TEST(Dequantize, Q8_0IsSignedBytesTimesScale) {
  BlockQ8_0 b{};
  b.d = f32_to_f16(2.0f);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(i * 8 - 128);
  const auto v = dequantize_all_isas(TensorType::Q8_0, b);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(v[i], 2.0f * static_cast<float>(i * 8 - 128));
}

TEST(Dequantize, UnpackScaleMinMatchesTheGgmlPacking) {
  uint8_t packed[12] = {};
  packed[0] = 0xC1;  // sc[0] = 1; bits 4-5 of sc[4] = 3
  packed[4] = 0x47;  // m[0] = 7; bits 4-5 of m[4] = 1
  packed[8] = 0x52;  // low bits: sc[4] = 2, m[4] = 5
  uint8_t sc = 0, m = 0;
  unpack_scale_min(packed, 0, sc, m);
  EXPECT_EQ(sc, 1);
  EXPECT_EQ(m, 7);
  unpack_scale_min(packed, 4, sc, m);
  EXPECT_EQ(sc, 0x32);
  EXPECT_EQ(m, 0x15);
}

TEST(Dequantize, PackScaleMinRoundTripsEveryValue) {
  for (int v = 0; v < 64; ++v) {
    uint8_t sc[8], m[8], packed[12];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>((v + 7 * j) % 64);
      m[j] = static_cast<uint8_t>((63 - v + 3 * j) % 64);
    }
    pack_scale_min(sc, m, packed);
    for (int j = 0; j < 8; ++j) {
      uint8_t s = 0, mm = 0;
      unpack_scale_min(packed, j, s, mm);
      EXPECT_EQ(s, sc[j]);
      EXPECT_EQ(mm, m[j]);
    }
  }
}

TEST(Dequantize, Q4_KSubBlockScalesMinsAndNibbleOrder) {
  BlockQ4_K b{};
  b.d = f32_to_f16(1.0f);
  b.dmin = f32_to_f16(0.5f);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(j + 1);
    m[j] = static_cast<uint8_t>(2 * j);
  }
  pack_scale_min(sc, m, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | ((15 - i % 16) << 4));
  const auto v = dequantize_all_isas(TensorType::Q4_K, b);
  for (int j = 0; j < 8; ++j) {
    for (int i = 0; i < 32; ++i) {
      const int q = j % 2 == 0 ? i % 16 : 15 - i % 16;  // even sub-blocks: low nibbles
      EXPECT_EQ(v[32 * j + i], static_cast<float>((j + 1) * q - j)) << j << " " << i;
    }
  }
}

TEST(Dequantize, Q5_KHighBitJOfQhByteIBelongsToSubBlockJ) {
  BlockQ5_K b{};
  b.d = f32_to_f16(1.0f);
  b.dmin = f32_to_f16(0.0f);
  uint8_t sc[8] = {1, 1, 1, 1, 1, 1, 1, 1}, m[8] = {};
  pack_scale_min(sc, m, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = 0x21;  // even sub-blocks 1, odd 2
  for (int i = 0; i < 32; ++i) b.qh[i] = static_cast<uint8_t>(1u << (i % 8));
  const auto v = dequantize_all_isas(TensorType::Q5_K, b);
  for (int j = 0; j < 8; ++j) {
    for (int i = 0; i < 32; ++i) {
      const int q = (j % 2 == 0 ? 1 : 2) + (i % 8 == j ? 16 : 0);
      EXPECT_EQ(v[32 * j + i], static_cast<float>(q)) << j << " " << i;
    }
  }
}

TEST(Dequantize, Q6_KElementLayoutAndPerSixteenScales) {
  BlockQ6_K b{};
  b.d = f32_to_f16(1.0f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s - 8);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i * 37 + 11);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i * 91 + 5);
  const auto v = dequantize_all_isas(TensorType::Q6_K, b);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, r = i % 128;
    const int lo = (b.ql[64 * h + r % 64] >> (4 * (r / 64))) & 0xF;
    const int hi = (b.qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
    EXPECT_EQ(v[i], static_cast<float>((i / 16 - 8) * ((lo | (hi << 4)) - 32))) << i;
  }
}

TEST(Dequantize, ScalarAndAvx2GiveIdenticalBits) {
  if (best_isa() != Isa::avx2) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  IsaGuard guard;
  std::mt19937 rng(7);
  for (TensorType type : kSupportedTypes) {
    for (bool raw : {false, true}) {
      // 37 blocks: the element formats get a vector body and a scalar tail.
      const int64_t n_blocks = 37;
      const auto bytes = random_blocks(type, n_blocks, rng, raw);
      const auto n = n_blocks * gguf::traits(type).block_size;
      std::vector<float> scalar(static_cast<size_t>(n)), avx2(static_cast<size_t>(n));
      set_isa(Isa::scalar);
      dequantize(type, bytes.data(), scalar.data(), n);
      set_isa(Isa::avx2);
      dequantize(type, bytes.data(), avx2.data(), n);
      for (size_t i = 0; i < scalar.size(); ++i) {
        ASSERT_TRUE(same_float(scalar[i], avx2[i]))
            << gguf::type_name(type) << (raw ? " raw" : "") << " element " << i;
      }
    }
  }
}

TEST(Dequantize, F16KeepsNanPayloadsAsNumpyDoes) {
  IsaGuard guard;
  // 16 halves so that the AVX2 path converts them in vectors, not the tail.
  std::vector<uint16_t> h(16, 0x3c00);
  h[3] = 0x7c01;   // signalling NaN
  h[9] = 0xfe55;   // negative quiet NaN with payload
  h[12] = 0x7c00;  // +inf
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    std::vector<float> out(16);
    dequantize(TensorType::F16, h.data(), out.data(), 16);
    uint32_t bits[16];
    std::memcpy(bits, out.data(), sizeof(bits));
    EXPECT_EQ(bits[3], 0x7f802000u) << isa_name(isa);
    EXPECT_EQ(bits[9], 0xffcaa000u) << isa_name(isa);
    EXPECT_EQ(bits[12], 0x7f800000u) << isa_name(isa);
    EXPECT_EQ(out[0], 1.0f);
  }
}

TEST(Dequantize, RejectsUnsupportedTypesAndPartialBlocks) {
  std::vector<uint8_t> bytes(64);
  std::vector<float> out(64);
  EXPECT_FALSE(is_supported(TensorType::Q5_0));
  EXPECT_THROW(dequantize(TensorType::Q5_0, bytes.data(), out.data(), 32), Error);
  EXPECT_THROW(dequantize(TensorType::Q4_0, bytes.data(), out.data(), 31), Error);
  EXPECT_THROW(dequantize(TensorType::Q4_0, bytes.data(), out.data(), -32), Error);
  for (TensorType type : kSupportedTypes) EXPECT_TRUE(is_supported(type)) << gguf::type_name(type);
}

TEST(Isa, BestIsRunnableAndSetIsaSwitches) {
  IsaGuard guard;
  set_isa(Isa::scalar);
  EXPECT_EQ(active_isa(), Isa::scalar);
  set_isa(best_isa());
  EXPECT_EQ(active_isa(), best_isa());
  if (best_isa() == Isa::scalar) {
    EXPECT_THROW(set_isa(Isa::avx2), Error);
  }
}

}  // namespace dequantize_test
}  // namespace cohort::quant
