// Portable dot products of one quantized row with an F32 vector.
//
// Scales are factored out of each (sub-)block: sum_i d*q_i*x_i is computed
// as d * (sum_i q_i*x_i), and an offset term m * sum_i x_i where the format
// has one. This is how the AVX2 path works too; the two differ only in the
// order of F32 additions. Each block's partial sum is added to the total
// separately, which keeps the rounding error near sqrt(n_blocks) ulps.
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

namespace cohort::quant::kernels {
namespace {

template <typename Block>
const Block* blocks_of(const void* src) {
  return static_cast<const Block*>(src);
}

// sum_i q[i] * x[i] for n small integers q.
template <typename Int>
float sum_qx(const Int* q, const float* x, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += static_cast<float>(q[i]) * x[i];
  return s;
}

float sum_x(const float* x, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += x[i];
  return s;
}

// F32/F16/BF16: partial sums over 32 elements, then the total.
template <typename T, typename Convert>
float dot_float(const T* w, const float* x, int64_t n, Convert convert) {
  float total = 0.0f;
  for (int64_t i = 0; i < n; i += kQK) {
    const int64_t end = i + kQK < n ? i + kQK : n;
    float s = 0.0f;
    for (int64_t j = i; j < end; ++j) s += convert(w[j]) * x[j];
    total += s;
  }
  return total;
}

// Low (shift 0) or high (shift 4) nibbles of 32 bytes: one sub-block of Q4_K/Q5_K.
void nibbles32(const uint8_t* qs, int shift, uint8_t* q) {
  for (int i = 0; i < 32; ++i) q[i] = static_cast<uint8_t>((qs[i] >> shift) & 0xF);
}

}  // namespace

float dot_f32_scalar(const void* row, const float* x, int64_t n_blocks) {
  return dot_float(static_cast<const float*>(row), x, n_blocks, [](float v) { return v; });
}

float dot_f16_scalar(const void* row, const float* x, int64_t n_blocks) {
  return dot_float(static_cast<const uint16_t*>(row), x, n_blocks, f16_to_f32);
}

float dot_bf16_scalar(const void* row, const float* x, int64_t n_blocks) {
  return dot_float(static_cast<const uint16_t*>(row), x, n_blocks, bf16_to_f32);
}

float dot_q8_0_scalar(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ8_0* b = blocks_of<BlockQ8_0>(row);
  float total = 0.0f;
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQK) {
    total += f16_to_f32(b[ib].d) * sum_qx(b[ib].qs, x, kQK);
  }
  return total;
}

float dot_q4_0_scalar(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ4_0* b = blocks_of<BlockQ4_0>(row);
  float total = 0.0f;
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQK) {
    int8_t q[kQK];
    for (int j = 0; j < kQK / 2; ++j) {
      q[j] = static_cast<int8_t>((b[ib].qs[j] & 0xF) - 8);
      q[j + kQK / 2] = static_cast<int8_t>((b[ib].qs[j] >> 4) - 8);
    }
    total += f16_to_f32(b[ib].d) * sum_qx(q, x, kQK);
  }
  return total;
}

float dot_q4_1_scalar(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ4_1* b = blocks_of<BlockQ4_1>(row);
  float total = 0.0f;
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQK) {
    uint8_t q[kQK];
    for (int j = 0; j < kQK / 2; ++j) {
      q[j] = b[ib].qs[j] & 0xF;
      q[j + kQK / 2] = b[ib].qs[j] >> 4;
    }
    total += f16_to_f32(b[ib].d) * sum_qx(q, x, kQK) + f16_to_f32(b[ib].m) * sum_x(x, kQK);
  }
  return total;
}

float dot_q4_k_scalar(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ4_K* b = blocks_of<BlockQ4_K>(row);
  float total = 0.0f;
  for (int64_t ib = 0; ib < n_blocks; ++ib) {
    const float d = f16_to_f32(b[ib].d);
    const float dmin = f16_to_f32(b[ib].dmin);
    for (int j = 0; j < 8; ++j, x += 32) {
      uint8_t sc = 0, m = 0, q[32];
      unpack_scale_min(b[ib].scales, j, sc, m);
      nibbles32(b[ib].qs + 32 * (j / 2), 4 * (j % 2), q);
      total += d * static_cast<float>(sc) * sum_qx(q, x, 32) -
               dmin * static_cast<float>(m) * sum_x(x, 32);
    }
  }
  return total;
}

float dot_q5_k_scalar(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ5_K* b = blocks_of<BlockQ5_K>(row);
  float total = 0.0f;
  for (int64_t ib = 0; ib < n_blocks; ++ib) {
    const float d = f16_to_f32(b[ib].d);
    const float dmin = f16_to_f32(b[ib].dmin);
    for (int j = 0; j < 8; ++j, x += 32) {
      uint8_t sc = 0, m = 0, q[32];
      unpack_scale_min(b[ib].scales, j, sc, m);
      nibbles32(b[ib].qs + 32 * (j / 2), 4 * (j % 2), q);
      for (int i = 0; i < 32; ++i) q[i] = static_cast<uint8_t>(q[i] | (((b[ib].qh[i] >> j) & 1) << 4));
      total += d * static_cast<float>(sc) * sum_qx(q, x, 32) -
               dmin * static_cast<float>(m) * sum_x(x, 32);
    }
  }
  return total;
}

float dot_q6_k_scalar(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ6_K* b = blocks_of<BlockQ6_K>(row);
  float total = 0.0f;
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQKK) {
    int8_t q[kQKK];
    for (int i = 0; i < kQKK; ++i) {
      const int h = i / 128, r = i % 128;
      const int lo = (b[ib].ql[64 * h + r % 64] >> (4 * (r / 64))) & 0xF;
      const int hi = (b[ib].qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
      q[i] = static_cast<int8_t>((lo | (hi << 4)) - 32);
    }
    const float d = f16_to_f32(b[ib].d);
    for (int s = 0; s < kQKK / 16; ++s) {
      total += d * static_cast<float>(b[ib].scales[s]) * sum_qx(q + 16 * s, x + 16 * s, 16);
    }
  }
  return total;
}

}  // namespace cohort::quant::kernels
