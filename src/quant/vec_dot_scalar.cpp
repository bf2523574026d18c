// Reference integer dot products: the definition of every vec_dot() result.
//
// The order of F32 operations is that of llama.cpp's x86 CPU backend for
// each weight type (as built with AVX2 or AVX-512, FMA contraction on), and
// the AVX2 kernels compute it too; written out here with arrays instead of
// registers:
//   - Integer products are summed exactly in int32. Values stay far below
//     2^24, so their conversion to F32 is exact. Where a lane layout
//     matters, lane j of a 32-element group holds elements 4j..4j+3 (what
//     vpmaddubsw + vpmaddwd produce).
//   - F32 accumulators are chains of fused multiply-adds (std::fma: one
//     rounding, as vfmadd) in block order; reduce() adds 8 lanes in the tree
//     order of the AVX2 hsum().
// Q8_0, Q4_1 (ggml's vec_dot and tinyBLAS): per 32-element block,
// lane += (dw * da) * p in 8 lanes; Q4_1 adds sum_b m_b * s_b, one fused
// multiply-add per block in block order, after the reduction.
// Q4_0 (ggml's repacked q4_0_8x8 gemv/gemm): one chain per dot product,
// acc += p * (dw * da) with p the block's whole integer sum.
// In what follows P is an integer sum of sub-blocks times their scales (Q6_K:
// with the offset -32 folded in through the bsums) and M the matching sum of
// mins m_j * (bsums[2j] + bsums[2j+1]); d, dmin are the weight's scales, da
// the activation's.
// Q4_K (repacked q4_K_8x8 gemv/gemm): two chains per dot product,
// acc += P * (d * da) and accm += M * (dmin * da), result acc - accm. The
// 1-token gemv (Order::single) steps once per super-block (P, M over all 8
// sub-blocks), the 4-token gemm (Order::batched) four times, over
// sub-blocks 2s and 2s + 1 for s = 0..3.
// Q5_K, Order::single (ggml_vec_dot_q5_K_q8_K): 8 lanes, lane += (da * d) * p
// per super-block, and one chain summs += (-da * dmin) * M; result
// reduce(lanes) + summs.
// Q6_K, Order::single (ggml_vec_dot_q6_K_q8_K): 8 lanes, lane += (d * da) * p.
// Q5_K, Q6_K, Order::batched (the tiled K-quant matmul, batches of >= 8
// tokens): one chain, acc += r * da per super-block, r = P * d rounded, then
// for Q5_K r = r - dmin * M fused.
// Floats (F32, F16, BF16): element i goes to lane i % 8 of accumulator
// (i / 8) % 2 (lane += w * a); the two accumulators are added lane by lane
// before the reduction, and the n % 8 trailing elements one by one after it.
// BF16 rows whose length is a multiple of 32 pair elements as vdpbf16ps does:
// lane j of a 32-element group takes element 2j + 1, then element 2j (lanes
// 0-7 in accumulator 0, 8-15 in accumulator 1). Products of two bfloat16 are
// exact in F32, so each FMA rounds exactly like vdpbf16ps's add.
#include <cmath>
#include <initializer_list>

#include "common/half.h"
#include "quant/blocks.h"
#include "quant/vec_dot_kernels.h"

namespace cohort::quant::kernels {
namespace {

using Lanes = float[8];

float reduce(const Lanes v) {
  const float s0 = v[0] + v[4], s1 = v[1] + v[5], s2 = v[2] + v[6], s3 = v[3] + v[7];
  return (s0 + s2) + (s1 + s3);
}

// p[j] += scale * sum of w[i] * a[i] over i in [4j, 4j + 4), for one 32-element group.
void dot_lanes32(const int* w, const int8_t* a, int scale, int* p) {
  for (int j = 0; j < 8; ++j) {
    int s = 0;
    for (int k = 4 * j; k < 4 * j + 4; ++k) s += w[k] * a[k];
    p[j] += scale * s;
  }
}

// Lanes of a 32-element block pair: acc += (dw * da) * p.
void block32(const int* w, const int8_t* a, float dw, float da, Lanes acc) {
  int p[8] = {};
  dot_lanes32(w, a, 1, p);
  const float d = dw * da;
  for (int j = 0; j < 8; ++j) acc[j] = std::fma(d, static_cast<float>(p[j]), acc[j]);
}

// The 4-bit values of a Q4_0/Q4_1 block in element order (see blocks.h).
void nibbles(const uint8_t* qs, int offset, int* w) {
  for (int j = 0; j < kQK / 2; ++j) {
    w[j] = (qs[j] & 0xF) - offset;
    w[j + kQK / 2] = (qs[j] >> 4) - offset;
  }
}

float dot_q4_0(const void* row, const void* act, int64_t nb) {
  const auto* w = static_cast<const BlockQ4_0*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(act);
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int q[kQK];
    nibbles(w[b].qs, 8, q);
    int p = 0;
    for (int i = 0; i < kQK; ++i) p += q[i] * a[b].qs[i];
    acc = std::fma(static_cast<float>(p), f16_to_f32(w[b].d) * f16_to_f32(a[b].d), acc);
  }
  return acc;
}

float dot_q4_1(const void* row, const void* act, int64_t nb) {
  const auto* w = static_cast<const BlockQ4_1*>(row);
  const auto* a = static_cast<const BlockQ8_1*>(act);
  Lanes acc = {};
  float ms = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int q[kQK];
    nibbles(w[b].qs, 0, q);
    block32(q, a[b].qs, f16_to_f32(w[b].d), f16_to_f32(a[b].d), acc);
    ms = std::fma(f16_to_f32(w[b].m), f16_to_f32(a[b].s), ms);
  }
  return reduce(acc) + ms;
}

float dot_q8_0(const void* row, const void* act, int64_t nb) {
  const auto* w = static_cast<const BlockQ8_0*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(act);
  Lanes acc = {};
  for (int64_t b = 0; b < nb; ++b) {
    int q[kQK];
    for (int i = 0; i < kQK; ++i) q[i] = w[b].qs[i];
    block32(q, a[b].qs, f16_to_f32(w[b].d), f16_to_f32(a[b].d), acc);
  }
  return reduce(acc);
}

// Q4_K/Q5_K: the integer sums of one super-block, given its 256 values q
// (0..31) in element order: lanes p (sub-blocks times their scales) and the
// mins term M = sum_j m_j * (bsums[2j] + bsums[2j+1]).
int k_superblock(const int* q, const uint8_t* scales, const BlockQ8_K& a, int* p) {
  int pm = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    unpack_scale_min(scales, j, sc, m);
    dot_lanes32(q + 32 * j, a.qs + 32 * j, sc, p);
    pm += m * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
  }
  return pm;
}

template <bool kGemm>
float dot_q4_k(const void* row, const void* act, int64_t nb) {
  const auto* w = static_cast<const BlockQ4_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  constexpr int kSteps = kGemm ? 4 : 1, kPer = 8 / kSteps;  // sub-blocks per step
  float acc = 0.0f, accm = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const float dd = f16_to_f32(w[b].d) * a[b].d, dm = f16_to_f32(w[b].dmin) * a[b].d;
    for (int step = 0; step < kSteps; ++step) {
      int p = 0, pm = 0;
      for (int j = kPer * step; j < kPer * step + kPer; ++j) {  // nibble j % 2 of qs[32 (j / 2) + i]
        uint8_t sc = 0, m = 0;
        unpack_scale_min(w[b].scales, j, sc, m);
        int s = 0;
        for (int i = 0; i < 32; ++i) {
          s += ((w[b].qs[32 * (j / 2) + i] >> (4 * (j % 2))) & 0xF) * a[b].qs[32 * j + i];
        }
        p += sc * s;
        pm += m * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
      }
      acc = std::fma(static_cast<float>(p), dd, acc);
      accm = std::fma(static_cast<float>(pm), dm, accm);
    }
  }
  return acc - accm;
}

float dot_q5_k(const void* row, const void* act, int64_t nb) {
  const auto* w = static_cast<const BlockQ5_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  Lanes acc = {};
  float summs = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int q[kQKK];
    for (int i = 0; i < kQKK; ++i) {
      const int j = i / 32;
      q[i] = ((w[b].qs[32 * (j / 2) + i % 32] >> (4 * (j % 2))) & 0xF) |
             (((w[b].qh[i % 32] >> j) & 1) << 4);
    }
    int p[8] = {};
    const int pm = k_superblock(q, w[b].scales, a[b], p);
    const float d = a[b].d * f16_to_f32(w[b].d), dmin = -a[b].d * f16_to_f32(w[b].dmin);
    summs = std::fma(dmin, static_cast<float>(pm), summs);
    for (int j = 0; j < 8; ++j) acc[j] = std::fma(d, static_cast<float>(p[j]), acc[j]);
  }
  return reduce(acc) + summs;
}

float dot_q5_k_tiled(const void* row, const void* act, int64_t nb) {
  const auto* w = static_cast<const BlockQ5_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int q[kQKK];
    for (int i = 0; i < kQKK; ++i) {
      const int j = i / 32;
      q[i] = ((w[b].qs[32 * (j / 2) + i % 32] >> (4 * (j % 2))) & 0xF) |
             (((w[b].qh[i % 32] >> j) & 1) << 4);
    }
    int p[8] = {};
    const int pm = k_superblock(q, w[b].scales, a[b], p);
    int total = 0;
    for (const int v : p) total += v;
    float v = static_cast<float>(total) * f16_to_f32(w[b].d);
    v = std::fma(-f16_to_f32(w[b].dmin), static_cast<float>(pm), v);
    acc = std::fma(v, a[b].d, acc);
  }
  return acc;
}

template <bool kTiled>
float dot_q6_k(const void* row, const void* act, int64_t nb) {
  const auto* w = static_cast<const BlockQ6_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  Lanes acc = {};
  for (int64_t b = 0; b < nb; ++b) {
    int q[kQKK];  // 0..63; the offset -32 is applied through bsums
    for (int i = 0; i < kQKK; ++i) {
      const int h = i / 128, r = i % 128;
      const int lo = (w[b].ql[64 * h + r % 64] >> (4 * (r / 64))) & 0xF;
      const int hi = (w[b].qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
      q[i] = lo | (hi << 4);
    }
    // Group v of 32 elements has scale 2v in lanes 0-3 and 2v+1 in lanes 4-7.
    int p[8] = {};
    for (int v = 0; v < 8; ++v) {
      int lo[8] = {}, hi[8] = {};
      dot_lanes32(q + 32 * v, a[b].qs + 32 * v, w[b].scales[2 * v], lo);
      dot_lanes32(q + 32 * v, a[b].qs + 32 * v, w[b].scales[2 * v + 1], hi);
      for (int j = 0; j < 8; ++j) p[j] += j < 4 ? lo[j] : hi[j];
    }
    for (int j = 0; j < 8; ++j) {
      p[j] -= 32 * (w[b].scales[2 * j] * a[b].bsums[2 * j] +
                    w[b].scales[2 * j + 1] * a[b].bsums[2 * j + 1]);
    }
    if constexpr (kTiled) {  // one chain, kept in acc[0]
      int total = 0;
      for (const int v : p) total += v;
      acc[0] = std::fma(static_cast<float>(total) * f16_to_f32(w[b].d), a[b].d, acc[0]);
    } else {
      const float d = f16_to_f32(w[b].d) * a[b].d;
      for (int j = 0; j < 8; ++j) acc[j] = std::fma(d, static_cast<float>(p[j]), acc[j]);
    }
  }
  return kTiled ? acc[0] : reduce(acc);
}

template <typename T, typename Convert>
float dot_float(const void* row, const void* act, int64_t n, Convert convert) {
  const T* w = static_cast<const T*>(row);
  const T* a = static_cast<const T*>(act);
  Lanes acc[2] = {};
  const int64_t n8 = n - n % 8;
  for (int64_t i = 0; i < n8; ++i) {
    float& lane = acc[(i / 8) % 2][i % 8];
    lane = std::fma(convert(w[i]), convert(a[i]), lane);
  }
  Lanes sum;
  for (int j = 0; j < 8; ++j) sum[j] = acc[0][j] + acc[1][j];
  float total = reduce(sum);
  for (int64_t i = n8; i < n; ++i) total = std::fma(convert(w[i]), convert(a[i]), total);
  return total;
}

float dot_f16(const void* row, const void* act, int64_t n) {
  return dot_float<uint16_t>(row, act, n, f16_to_f32);
}

float dot_bf16(const void* row, const void* act, int64_t n) {
  if (n % 32 != 0) return dot_float<uint16_t>(row, act, n, bf16_to_f32);
  const auto* w = static_cast<const uint16_t*>(row);
  const auto* a = static_cast<const uint16_t*>(act);
  Lanes acc[2] = {};
  for (int64_t g = 0; g < n; g += 32) {
    for (int j = 0; j < 16; ++j) {
      float& lane = acc[j / 8][j % 8];
      for (const int64_t i : {g + 2 * j + 1, g + 2 * j}) {
        lane = std::fma(bf16_to_f32(w[i]), bf16_to_f32(a[i]), lane);
      }
    }
  }
  Lanes sum;
  for (int j = 0; j < 8; ++j) sum[j] = acc[0][j] + acc[1][j];
  return reduce(sum);
}

float dot_f32(const void* row, const void* act, int64_t n) {
  return dot_float<float>(row, act, n, [](float v) { return v; });
}

using PairFn = float (*)(const void* row, const void* act, int64_t n_blocks);

void tile(PairFn dot, const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
          size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride) {
  const auto* w = static_cast<const uint8_t*>(rows);
  const auto* a = static_cast<const uint8_t*>(acts);
  for (int64_t t = 0; t < n_acts; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      y[t * y_stride + r] = dot(w + static_cast<size_t>(r) * row_stride,
                                a + static_cast<size_t>(t) * act_stride, n_blocks);
    }
  }
}

}  // namespace

#define COHORT_SCALAR_TILE(name, pair)                                                        \
  void name(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,            \
            size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride) { \
    tile(pair, rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);    \
  }

COHORT_SCALAR_TILE(tile_q4_0_q8_0_scalar, dot_q4_0)
COHORT_SCALAR_TILE(tile_q4_1_q8_1_scalar, dot_q4_1)
COHORT_SCALAR_TILE(tile_q8_0_q8_0_scalar, dot_q8_0)
COHORT_SCALAR_TILE(tile_q4_k_q8_k_scalar, dot_q4_k<false>)
COHORT_SCALAR_TILE(tile_q4_k_q8_k_batched_scalar, dot_q4_k<true>)
COHORT_SCALAR_TILE(tile_q5_k_q8_k_scalar, dot_q5_k)
COHORT_SCALAR_TILE(tile_q5_k_q8_k_batched_scalar, dot_q5_k_tiled)
COHORT_SCALAR_TILE(tile_q6_k_q8_k_scalar, dot_q6_k<false>)
COHORT_SCALAR_TILE(tile_q6_k_q8_k_batched_scalar, dot_q6_k<true>)
COHORT_SCALAR_TILE(tile_f16_f16_scalar, dot_f16)
COHORT_SCALAR_TILE(tile_bf16_bf16_scalar, dot_bf16)
COHORT_SCALAR_TILE(tile_f32_f32_scalar, dot_f32)

#undef COHORT_SCALAR_TILE

}  // namespace cohort::quant::kernels
