// Portable dequantizers. Each performs the same float32 operations in the same
// order as gguf-py's numpy code (gguf/quants.py), so results are bit-exact:
// e.g. Q4_K computes (d * sc) * q - (dmin * m), with the two products rounded
// before the subtraction. No FMA contraction (see kernels.h).
#include <cstring>

#include "common/half.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

namespace cohort::quant::kernels {
namespace {

template <typename Block>
const Block* blocks_of(const void* src) {
  return static_cast<const Block*>(src);
}

}  // namespace

void dequantize_f32_scalar(const void* src, float* dst, int64_t n_blocks) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * sizeof(float));
}

void dequantize_f16_scalar(const void* src, float* dst, int64_t n_blocks) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n_blocks; ++i) dst[i] = f16_to_f32(h[i]);
}

void dequantize_bf16_scalar(const void* src, float* dst, int64_t n_blocks) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n_blocks; ++i) dst[i] = bf16_to_f32(h[i]);
}

void dequantize_q8_0_scalar(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ8_0* b = blocks_of<BlockQ8_0>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQK) {
    const float d = f16_to_f32(b[ib].d);
    for (int i = 0; i < kQK; ++i) dst[i] = static_cast<float>(b[ib].qs[i]) * d;
  }
}

void dequantize_q4_0_scalar(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ4_0* b = blocks_of<BlockQ4_0>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQK) {
    const float d = f16_to_f32(b[ib].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>((b[ib].qs[j] & 0xF) - 8);
      dst[j + kQK / 2] = d * static_cast<float>((b[ib].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_q4_1_scalar(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ4_1* b = blocks_of<BlockQ4_1>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQK) {
    const float d = f16_to_f32(b[ib].d);
    const float m = f16_to_f32(b[ib].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(b[ib].qs[j] & 0xF) + m;
      dst[j + kQK / 2] = d * static_cast<float>(b[ib].qs[j] >> 4) + m;
    }
  }
}

void dequantize_q4_k_scalar(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ4_K* b = blocks_of<BlockQ4_K>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQKK) {
    const float d = f16_to_f32(b[ib].d);
    const float dmin = f16_to_f32(b[ib].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc = 0, m = 0;
      unpack_scale_min(b[ib].scales, j, sc, m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = b[ib].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int i = 0; i < 32; ++i) {
        dst[32 * j + i] = dl * static_cast<float>((q[i] >> shift) & 0xF) - ml;
      }
    }
  }
}

void dequantize_q5_k_scalar(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ5_K* b = blocks_of<BlockQ5_K>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQKK) {
    const float d = f16_to_f32(b[ib].d);
    const float dmin = f16_to_f32(b[ib].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc = 0, m = 0;
      unpack_scale_min(b[ib].scales, j, sc, m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = b[ib].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int i = 0; i < 32; ++i) {
        const int v = ((q[i] >> shift) & 0xF) | (((b[ib].qh[i] >> j) & 1) << 4);
        dst[32 * j + i] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

void dequantize_q6_k_scalar(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ6_K* b = blocks_of<BlockQ6_K>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQKK) {
    const float d = f16_to_f32(b[ib].d);
    for (int i = 0; i < kQKK; ++i) {
      const int h = i / 128, r = i % 128;
      const int lo = (b[ib].ql[64 * h + r % 64] >> (4 * (r / 64))) & 0xF;
      const int hi = (b[ib].qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
      const float dl = d * static_cast<float>(b[ib].scales[i / 16]);
      dst[i] = dl * static_cast<float>((lo | (hi << 4)) - 32);
    }
  }
}

}  // namespace cohort::quant::kernels
