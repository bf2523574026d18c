// AVX2/FMA dot products of one quantized row with an F32 vector.
//
// Weights are widened to 32-bit lanes straight from memory (vpmovzxbd /
// vpmovsxbd of 8 bytes), unpacked with shifts and masks, converted to float
// and multiplied with x, 8 elements per instruction. Scales are factored out
// of each (sub-)block as in dot.cpp: the block's sum of q*x is formed in a
// vector, then multiplied by the broadcast scale into a running accumulator
// (Q4_1 instead forms its weights in registers; see there). Nothing is
// written to memory but a few per-block scale floats.
//
// Several accumulators run side by side so that consecutive blocks do not
// wait on each other's FMA latency (4 cycles, 2 per cycle on recent cores).
// Measured single-thread on a 256x4096 matrix held in L2 (Zen 4 class core):
// Q8_0 19, Q4_0 16, Q4_1 15, Q4_K 12, Q6_K 10.6, Q5_K 9.4 Gweights/s (a
// Xeon virtual machine gave roughly half of that). Making
// Q4_0/Q4_K/Q5_K dequantize in registers like Q4_1 was no faster (Q5_K slower).
#include <immintrin.h>

#include <bit>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace cohort::quant::kernels {
namespace {

template <typename Block>
const Block* blocks_of(const void* src) {
  return static_cast<const Block*>(src);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline __m256i load_u8x8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

inline __m256i load_i8x8(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 to_ps(__m256i v) { return _mm256_cvtepi32_ps(v); }
inline __m256i mask(int m) { return _mm256_set1_epi32(m); }

// sum_k q[k] * x[8k .. 8k+8) for four groups of 8, as a vector (tree order).
inline __m256 sum4(__m256 q0, __m256 q1, __m256 q2, __m256 q3, const float* x) {
  const __m256 a = _mm256_fmadd_ps(q1, _mm256_loadu_ps(x + 8), _mm256_mul_ps(q0, _mm256_loadu_ps(x)));
  const __m256 b = _mm256_fmadd_ps(q3, _mm256_loadu_ps(x + 24), _mm256_mul_ps(q2, _mm256_loadu_ps(x + 16)));
  return _mm256_add_ps(a, b);
}

inline __m256 sum_x32(const float* x) {
  return _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)),
                       _mm256_add_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)));
}

// Dense rows: 32 elements per step in four accumulators, then 8, then scalar.
// load8(p) widens 8 elements at p to floats; one(v) converts a single element.
template <typename T, typename Load8, typename One>
float dot_dense(const T* w, const float* x, int64_t n, Load8 load8, One one) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), a0);
    a1 = _mm256_fmadd_ps(load8(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
    a2 = _mm256_fmadd_ps(load8(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
    a3 = _mm256_fmadd_ps(load8(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), a0);
  float total = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; i < n; ++i) total += one(w[i]) * x[i];
  return total;
}

inline __m128i load_u16x8(const uint16_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Runs step(ib, acc) over the blocks of a row, alternating two accumulators
// so that two blocks' dependency chains overlap.
template <typename Step>
float dot_blocks(int64_t n_blocks, Step step) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
  int64_t ib = 0;
  for (; ib + 2 <= n_blocks; ib += 2) {
    acc0 = step(ib, acc0);
    acc1 = step(ib + 1, acc1);
  }
  if (ib < n_blocks) acc0 = step(ib, acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

// Q8_0 block: sum q*x over 32 elements.
inline __m256 q8_0_sum(const BlockQ8_0& b, const float* x) {
  return sum4(to_ps(load_i8x8(b.qs)), to_ps(load_i8x8(b.qs + 8)), to_ps(load_i8x8(b.qs + 16)),
              to_ps(load_i8x8(b.qs + 24)), x);
}

// Q4_0 block: sum (q - 8) * x. Element j is the low nibble of byte j, j+16 the high.
inline __m256 q4_0_sum(const BlockQ4_0& b, const float* x) {
  const __m256i v0 = load_u8x8(b.qs), v1 = load_u8x8(b.qs + 8), eight = mask(8);
  const __m256i q0 = _mm256_sub_epi32(_mm256_and_si256(v0, mask(0xF)), eight);
  const __m256i q1 = _mm256_sub_epi32(_mm256_and_si256(v1, mask(0xF)), eight);
  const __m256i q2 = _mm256_sub_epi32(_mm256_srli_epi32(v0, 4), eight);
  const __m256i q3 = _mm256_sub_epi32(_mm256_srli_epi32(v1, 4), eight);
  return sum4(to_ps(q0), to_ps(q1), to_ps(q2), to_ps(q3), x);
}

// Eight running sums for kernels that dequantize each group of 8 weights
// in registers and multiply it with x: enough independent FMA chains to
// cover the FMA latency (4 cycles at 2 per cycle).
struct Acc8 {
  __m256 a[8];
  Acc8() {
    for (__m256& v : a) v = _mm256_setzero_ps();
  }
  float result() const {
    const __m256 s0 = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
    const __m256 s1 = _mm256_add_ps(_mm256_add_ps(a[4], a[5]), _mm256_add_ps(a[6], a[7]));
    return hsum(_mm256_add_ps(s0, s1));
  }
};

// acc[k] += (scale * q[k] + offset) * x[8k .. 8k+8) for four groups of 8.
inline void fma4(__m256 scale, __m256 offset, const __m256* q, const float* x, __m256* acc) {
  for (int k = 0; k < 4; ++k) {
    acc[k] = _mm256_fmadd_ps(_mm256_fmadd_ps(scale, q[k], offset), _mm256_loadu_ps(x + 8 * k), acc[k]);
  }
}

// The 8 scales and 8 mins of a Q4_K/Q5_K block, multiplied by d and dmin.
// Unpacks all of them at once with 32-bit masks (see unpack_scale_min).
inline void k_scales(const uint8_t* packed, float d, float dmin, float* dl, float* ml) {
  uint32_t u[3];
  std::memcpy(u, packed, sizeof(u));
  const uint64_t sc = (u[0] & 0x3f3f3f3fu) |
                      static_cast<uint64_t>((u[2] & 0x0f0f0f0fu) | ((u[0] >> 2) & 0x30303030u)) << 32;
  const uint64_t m = (u[1] & 0x3f3f3f3fu) |
                     static_cast<uint64_t>(((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 2) & 0x30303030u)) << 32;
  const __m256i sc8 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(sc)));
  const __m256i m8 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(m)));
  _mm256_storeu_ps(dl, _mm256_mul_ps(_mm256_set1_ps(d), to_ps(sc8)));
  _mm256_storeu_ps(ml, _mm256_mul_ps(_mm256_set1_ps(dmin), to_ps(m8)));
}

// Accumulators of a K-quant row: scaled sums of q*x for even and odd
// sub-blocks, and the scaled sums of x that the mins multiply.
struct KAcc {
  __m256 even = _mm256_setzero_ps(), odd = even, min_even = even, min_odd = even;
  float result() const {
    return hsum(_mm256_sub_ps(_mm256_add_ps(even, odd), _mm256_add_ps(min_even, min_odd)));
  }
};

// Sub-blocks 2c and 2c+1 of a Q4_K/Q5_K block from the 32 bytes at qs;
// hv holds the Q5_K high bits of these 32 elements in bit 0 (low sub-block)
// and bit 1 (high sub-block), or nothing for Q4_K.
template <bool kHigh>
inline void k_pair(const uint8_t* qs, const __m256i* hv, const float* x, const float* dl,
                   const float* ml, KAcc& acc) {
  __m256 lo[4], hi[4];
  for (int k = 0; k < 4; ++k) {
    const __m256i v = load_u8x8(qs + 8 * k);
    __m256i l = _mm256_and_si256(v, mask(0xF)), h = _mm256_srli_epi32(v, 4);
    if constexpr (kHigh) {
      l = _mm256_or_si256(l, _mm256_and_si256(_mm256_slli_epi32(hv[k], 4), mask(16)));
      h = _mm256_or_si256(h, _mm256_and_si256(_mm256_slli_epi32(hv[k], 3), mask(16)));
    }
    lo[k] = to_ps(l);
    hi[k] = to_ps(h);
  }
  acc.even = _mm256_fmadd_ps(_mm256_broadcast_ss(dl), sum4(lo[0], lo[1], lo[2], lo[3], x), acc.even);
  acc.odd = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + 1), sum4(hi[0], hi[1], hi[2], hi[3], x + 32), acc.odd);
  acc.min_even = _mm256_fmadd_ps(_mm256_broadcast_ss(ml), sum_x32(x), acc.min_even);
  acc.min_odd = _mm256_fmadd_ps(_mm256_broadcast_ss(ml + 1), sum_x32(x + 32), acc.min_odd);
}

// Q6_K: the 8 elements at 128h + 32t + 8k, given the ql bytes (already
// widened, shared by t and t+2) and the qh bytes (shared by all four t).
template <int t>
inline __m256 q6_group(__m256i ql, __m256i qh) {
  __m256i lo, hi;  // hi: bits 2t and 2t+1 of qh moved to bits 4 and 5
  if constexpr (t < 2) {
    lo = _mm256_and_si256(ql, mask(0xF));
    hi = _mm256_slli_epi32(qh, 4 - 2 * t);
  } else {
    lo = _mm256_srli_epi32(ql, 4);
    hi = _mm256_srli_epi32(qh, 2 * t - 4);
  }
  const __m256i q = _mm256_or_si256(lo, _mm256_and_si256(hi, mask(0x30)));
  return to_ps(_mm256_sub_epi32(q, mask(32)));
}

// Q6_K: quarter t (32 elements, two scales) of half-block h.
template <int t>
inline void q6_quarter(const __m256i* ql, const __m256i* qh, const float* x, const float* dl,
                       __m256& acc0, __m256& acc1) {
  const __m256 q0 = q6_group<t>(ql[0], qh[0]), q1 = q6_group<t>(ql[1], qh[1]);
  const __m256 q2 = q6_group<t>(ql[2], qh[2]), q3 = q6_group<t>(ql[3], qh[3]);
  const __m256 s0 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(x + 8), _mm256_mul_ps(q0, _mm256_loadu_ps(x)));
  const __m256 s1 = _mm256_fmadd_ps(q3, _mm256_loadu_ps(x + 24), _mm256_mul_ps(q2, _mm256_loadu_ps(x + 16)));
  acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(dl), s0, acc0);
  acc1 = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + 1), s1, acc1);
}

}  // namespace

float dot_f32_avx2(const void* row, const float* x, int64_t n_blocks) {
  return dot_dense(
      static_cast<const float*>(row), x, n_blocks, [](const float* p) { return _mm256_loadu_ps(p); },
      [](float v) { return v; });
}

float dot_f16_avx2(const void* row, const float* x, int64_t n_blocks) {
  return dot_dense(
      static_cast<const uint16_t*>(row), x, n_blocks,
      [](const uint16_t* p) { return _mm256_cvtph_ps(load_u16x8(p)); }, half);
}

float dot_bf16_avx2(const void* row, const float* x, int64_t n_blocks) {
  return dot_dense(
      static_cast<const uint16_t*>(row), x, n_blocks,
      [](const uint16_t* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_u16x8(p)), 16));
      },
      [](uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); });
}

float dot_q8_0_avx2(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ8_0* b = blocks_of<BlockQ8_0>(row);
  return dot_blocks(n_blocks, [b, x](int64_t ib, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_set1_ps(half(b[ib].d)), q8_0_sum(b[ib], x + ib * kQK), acc);
  });
}

float dot_q4_0_avx2(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ4_0* b = blocks_of<BlockQ4_0>(row);
  return dot_blocks(n_blocks, [b, x](int64_t ib, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_set1_ps(half(b[ib].d)), q4_0_sum(b[ib], x + ib * kQK), acc);
  });
}

float dot_q4_1_avx2(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ4_1* b = blocks_of<BlockQ4_1>(row);
  // Weights d * q + m are formed in registers (one FMA), which here beats
  // factoring out d and m: that needs sum(x) per block, 4 more adds.
  Acc8 acc;
  auto step = [b, x](int64_t ib, __m256* a) {
    const __m256i v0 = load_u8x8(b[ib].qs), v1 = load_u8x8(b[ib].qs + 8);
    const __m256 q[4] = {to_ps(_mm256_and_si256(v0, mask(0xF))), to_ps(_mm256_and_si256(v1, mask(0xF))),
                         to_ps(_mm256_srli_epi32(v0, 4)), to_ps(_mm256_srli_epi32(v1, 4))};
    fma4(_mm256_set1_ps(half(b[ib].d)), _mm256_set1_ps(half(b[ib].m)), q, x + ib * kQK, a);
  };
  int64_t ib = 0;
  for (; ib + 2 <= n_blocks; ib += 2) {
    step(ib, acc.a);
    step(ib + 1, acc.a + 4);
  }
  if (ib < n_blocks) step(ib, acc.a);
  return acc.result();
}

float dot_q4_k_avx2(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ4_K* b = blocks_of<BlockQ4_K>(row);
  KAcc acc;
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQKK) {
    alignas(32) float dl[8], ml[8];
    k_scales(b[ib].scales, half(b[ib].d), half(b[ib].dmin), dl, ml);
    for (int c = 0; c < 4; ++c) k_pair<false>(b[ib].qs + 32 * c, nullptr, x + 64 * c, dl + 2 * c, ml + 2 * c, acc);
  }
  return acc.result();
}

float dot_q5_k_avx2(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ5_K* b = blocks_of<BlockQ5_K>(row);
  KAcc acc;
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQKK) {
    alignas(32) float dl[8], ml[8];
    k_scales(b[ib].scales, half(b[ib].d), half(b[ib].dmin), dl, ml);
    // Bit j of qh[i] belongs to sub-block j: each pair consumes the two low bits.
    __m256i hv[4];
    for (int k = 0; k < 4; ++k) hv[k] = load_u8x8(b[ib].qh + 8 * k);
    for (int c = 0; c < 4; ++c) {
      k_pair<true>(b[ib].qs + 32 * c, hv, x + 64 * c, dl + 2 * c, ml + 2 * c, acc);
      for (int k = 0; k < 4; ++k) hv[k] = _mm256_srli_epi32(hv[k], 2);
    }
  }
  return acc.result();
}

float dot_q6_k_avx2(const void* row, const float* x, int64_t n_blocks) {
  const BlockQ6_K* b = blocks_of<BlockQ6_K>(row);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQKK) {
    const __m256 d = _mm256_set1_ps(half(b[ib].d));
    alignas(32) float dl[16];  // d * scales, one per 16 elements
    _mm256_store_ps(dl, _mm256_mul_ps(d, to_ps(load_i8x8(b[ib].scales))));
    _mm256_store_ps(dl + 8, _mm256_mul_ps(d, to_ps(load_i8x8(b[ib].scales + 8))));
    for (int h = 0; h < 2; ++h) {
      __m256i qh[4], ql_a[4], ql_b[4];  // ql_a serves quarters 0 and 2, ql_b 1 and 3
      for (int k = 0; k < 4; ++k) {
        qh[k] = load_u8x8(b[ib].qh + 32 * h + 8 * k);
        ql_a[k] = load_u8x8(b[ib].ql + 64 * h + 8 * k);
        ql_b[k] = load_u8x8(b[ib].ql + 64 * h + 32 + 8 * k);
      }
      const float* xh = x + 128 * h;
      const float* dh = dl + 8 * h;
      q6_quarter<0>(ql_a, qh, xh, dh, acc0, acc1);
      q6_quarter<1>(ql_b, qh, xh + 32, dh + 2, acc0, acc1);
      q6_quarter<2>(ql_a, qh, xh + 64, dh + 4, acc0, acc1);
      q6_quarter<3>(ql_b, qh, xh + 96, dh + 6, acc0, acc1);
    }
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

}  // namespace cohort::quant::kernels
