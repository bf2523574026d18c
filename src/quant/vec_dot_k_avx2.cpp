// AVX2 tile kernels of the K formats against Q8_K activations (Q4_K, Q5_K,
// Q6_K), in micro-tiles of R weight rows x T activation rows.
//
// Per super-block, each 32-element group of weights is unpacked to bytes
// once per row and multiplied with T activation groups: vpmaddubsw (bytes
// to int16 pairs), vpmaddwd with the group's integer scale (int32 lanes of
// 4 elements), vpaddd into the super-block's int32 lanes. The mins (Q4_K,
// Q5_K) and the offset -32 (Q6_K) come from the activations' bsums through
// one more vpmaddwd. Then the F32 steps per super-block, in the order
// vec_dot_scalar.cpp defines (llama.cpp's): Q6_K one FMA per lane; Q5_K one
// per lane plus one on the pair's chain of mins; Q4_K two on the pair's two
// chains of whole-super-block sums. A pair's whole sums are found for the
// up to 8 pairs of a micro-tile at once (hsum8_epi32), pair (r, t) in lane
// 2t + r, and its chains live in that lane. All integer sums are exact.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "quant/avx2_tile.h"
#include "quant/blocks.h"
#include "quant/vec_dot_kernels.h"

namespace cohort::quant::kernels {
namespace {

using namespace avx2;

enum class Kind { q4_k, q5_k, q6_k };

template <Kind> struct Fmt;
template <> struct Fmt<Kind::q4_k> { using W = BlockQ4_K; };
template <> struct Fmt<Kind::q5_k> { using W = BlockQ5_K; };
template <> struct Fmt<Kind::q6_k> { using W = BlockQ6_K; };

// Calls f(std::integral_constant<int, i>{}) for i = 0 .. N-1: loops whose
// index picks immediates (shift counts, shuffle masks) unroll at compile time.
template <int N, typename F, int... I>
COHORT_AVX2_INLINE void static_for(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, typename F>
COHORT_AVX2_INLINE void static_for(F&& f) {
  static_for<N>(f, std::make_integer_sequence<int, N>());
}

// Per-row data of one super-block: integer scale vectors and F32 scales.
struct RowScales {
  __m256i group[8];  // int16 multipliers of each 32-element group's 16 pairs
  __m256i bsum;      // int16 multipliers of the activations' 16 bsums
  __m256i qh;        // Q5_K: the high bits, loaded once
  float d;           // super-block scale
  float dmin;        // Q4_K/Q5_K: scale of the mins
};

// Q4_K/Q5_K: the 8 scales and mins (see unpack_scale_min), all at once.
COHORT_AVX2_INLINE void unpack_k_scales(const uint8_t* packed, RowScales& s) {
  uint32_t u[3];
  std::memcpy(u, packed, sizeof(u));
  const uint32_t sc_lo = u[0] & 0x3f3f3f3fu;
  const uint32_t sc_hi = (u[2] & 0x0f0f0f0fu) | ((u[0] >> 2) & 0x30303030u);
  const uint32_t m_lo = u[1] & 0x3f3f3f3fu;
  const uint32_t m_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 2) & 0x30303030u);
  const __m128i sc = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)));
  const __m128i m = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(m_hi), static_cast<int>(m_lo)));
  const __m256i sc2 = _mm256_broadcastsi128_si256(sc);
  static_for<8>([&](auto j) COHORT_AVX2_LAMBDA_INLINE {  // bytes 2j, 2j+1 (int16 j) into every int16
    s.group[j] = _mm256_shuffle_epi8(sc2, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * j)));
  });
  // m_j twice: bsums come per 16 elements, mins per 32.
  s.bsum = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
}

// Q6_K: group v has scale 2v on its first 16 elements, 2v+1 on the others.
COHORT_AVX2_INLINE void unpack_q6_scales(const int8_t* scales, RowScales& s) {
  const __m128i lo = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales)));
  const __m128i hi = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + 8)));
  const __m256i lo2 = _mm256_broadcastsi128_si256(lo), hi2 = _mm256_broadcastsi128_si256(hi);
  static_for<8>([&](auto v) COHORT_AVX2_LAMBDA_INLINE {
    constexpr int w = v % 4;  // int16 2w (low half) and 2w+1 (high half) of lo or hi
    const __m256i pick = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(0x0302 + 0x0404 * w)),
                                          _mm_set1_epi16(static_cast<int16_t>(0x0100 + 0x0404 * w)));
    s.group[v] = _mm256_shuffle_epi8(v < 4 ? lo2 : hi2, pick);
  });
  s.bsum = _mm256_set_m128i(hi, lo);
}

template <Kind k>
COHORT_AVX2_INLINE void row_scales(const typename Fmt<k>::W& b, RowScales& s) {
  s.d = _cvtsh_ss(b.d);
  if constexpr (k == Kind::q6_k) {
    unpack_q6_scales(b.scales, s);
    s.dmin = 0.0f;
  } else {
    unpack_k_scales(b.scales, s);
    s.dmin = _cvtsh_ss(b.dmin);
    if constexpr (k == Kind::q5_k) s.qh = loadu(b.qh);
  }
}

// The 32 weights of group v (elements 32v..32v+31) as bytes; Q6_K without
// its offset. Shifts are epi16: masks keep bits from crossing into the
// neighbouring byte's field.
template <Kind k, int v>
COHORT_AVX2_INLINE __m256i group_bytes(const typename Fmt<k>::W& b, const RowScales& s) {
  const __m256i low4 = _mm256_set1_epi8(0xF);
  if constexpr (k == Kind::q6_k) {
    constexpr int h = v / 4, t = v % 4;  // half and quarter (see blocks.h)
    const __m256i ql = loadu(b.ql + 64 * h + 32 * (t % 2));
    const __m256i qh = loadu(b.qh + 32 * h);
    const __m256i lo = t < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
    __m256i hi;  // bits 2t, 2t+1 of qh at bits 4, 5
    if constexpr (t == 0) hi = _mm256_slli_epi16(qh, 4);
    if constexpr (t == 1) hi = _mm256_slli_epi16(qh, 2);
    if constexpr (t == 2) hi = qh;
    if constexpr (t == 3) hi = _mm256_srli_epi16(qh, 2);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(0x30)));
  } else {
    const __m256i q = loadu(b.qs + 32 * (v / 2));
    __m256i x = v % 2 == 0 ? _mm256_and_si256(q, low4) : _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    if constexpr (k == Kind::q5_k) {  // bit v of each qh byte to bit 4
      __m256i h;
      if constexpr (v <= 4) h = _mm256_slli_epi16(s.qh, 4 - v);
      else h = _mm256_srli_epi16(s.qh, v - 4);
      x = _mm256_or_si256(x, _mm256_and_si256(h, _mm256_set1_epi8(0x10)));
    }
    return x;
  }
}

// m[s] lane p: lanes 2s and 2s + 1 of pm[p] added (the mins of sub-blocks
// 2s and 2s + 1 of pair p), for s = 0..3.
COHORT_AVX2_INLINE void sum_lane_pairs(const __m256i (&pm)[8], __m256i (&m)[4]) {
  // hadd: [p s0, p s1, p' s0, p' s1 | p s2, p s3, p' s2, p' s3]; the shuffle
  // puts the pairs side by side: [p s0, p' s0, p s1, p' s1 | ...s2, ...s3].
  auto two = [](__m256i x, __m256i y) COHORT_AVX2_LAMBDA_INLINE {
    return _mm256_shuffle_epi32(_mm256_hadd_epi32(x, y), _MM_SHUFFLE(3, 1, 2, 0));
  };
  const __m256i h01 = two(pm[0], pm[1]), h23 = two(pm[2], pm[3]);
  const __m256i h45 = two(pm[4], pm[5]), h67 = two(pm[6], pm[7]);
  const __m256i a = _mm256_unpacklo_epi64(h01, h23), b = _mm256_unpackhi_epi64(h01, h23);  // 0-3
  const __m256i c = _mm256_unpacklo_epi64(h45, h67), d = _mm256_unpackhi_epi64(h45, h67);  // 4-7
  m[0] = _mm256_permute2x128_si256(a, c, 0x20);
  m[1] = _mm256_permute2x128_si256(b, d, 0x20);
  m[2] = _mm256_permute2x128_si256(a, c, 0x31);
  m[3] = _mm256_permute2x128_si256(b, d, 0x31);
}

// Lane 2t + r of the result: the sum of the int32 lanes of v[2t + r], for
// the pairs of an R x T micro-tile (a 1 x 1 tile: lane 0 only, the other
// lanes are junk that the caller multiplies by 0).
template <int R, int T>
COHORT_AVX2_INLINE __m256i pair_totals(const __m256i (&v)[8]) {
  if constexpr (R * T == 1) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v[0]), _mm256_extracti128_si256(v[0], 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm256_zextsi128_si256(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
  } else {
    return hsum8_epi32(v);
  }
}

// The 8 floats as one vector (built in registers: a store and a vector load
// of just-written floats would stall on store forwarding).
template <int R, int T>
COHORT_AVX2_INLINE __m256 pair_floats(const float (&f)[8]) {
  if constexpr (R * T == 1) return _mm256_zextps128_ps256(_mm_set_ss(f[0]));
  return _mm256_setr_ps(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]);
}

// kBatched: the order of llama.cpp's batch kernels (Order::batched). Q4_K
// (its 4-token gemm): the chains step after every two sub-blocks instead of
// once per super-block. Q5_K, Q6_K (its tiled matmul): one chain per pair,
// chain += r * da with r = P * d (- dmin * M, fused).
template <Kind k, bool kBatched = false>
struct MicroK {
  using W = typename Fmt<k>::W;
  static constexpr bool kTiled = kBatched && k != Kind::q4_k;

  const void* rows;
  size_t row_stride;
  const void* acts;
  size_t act_stride;
  int64_t n_blocks;
  float* y;
  int64_t y_stride;

  template <int R, int T>
  void operator()(int64_t r0, int64_t t0) const {
    const W* w[R];
    const BlockQ8_K* a[T];
    for (int r = 0; r < R; ++r) w[r] = row_at<W>(rows, row_stride, r0 + r);
    for (int t = 0; t < T; ++t) a[t] = row_at<BlockQ8_K>(acts, act_stride, t0 + t);
    static_assert(R <= 2 && T <= 4);
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    }
    // Q4_K: the chains of sums and of mins; Q5_K: the chains of mins.
    __m256 chain = _mm256_setzero_ps(), chain_min = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      RowScales s[R];
      for (int r = 0; r < R; ++r) {
        row_scales<k>(w[r][b], s[r]);
      }
      __m256i sum[R][T];
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) sum[r][t] = _mm256_setzero_si256();
      }
      [[maybe_unused]] __m256i step_sums[4];  // Q4_K kBatched: per pair, the sums of sub-blocks 2s, 2s + 1
      static_for<8>([&](auto v) COHORT_AVX2_LAMBDA_INLINE {
        __m256i q[R];
        for (int r = 0; r < R; ++r) q[r] = group_bytes<k, v>(w[r][b], s[r]);
        for (int t = 0; t < T; ++t) {
          const __m256i av = loadu(a[t][b].qs + 32 * v);
          for (int r = 0; r < R; ++r) {
            const __m256i p = _mm256_madd_epi16(s[r].group[v], _mm256_maddubs_epi16(q[r], av));
            sum[r][t] = _mm256_add_epi32(sum[r][t], p);
          }
        }
        if constexpr (kBatched && k == Kind::q4_k && v % 2 == 1) {
          __m256i whole[8];
          for (__m256i& x : whole) x = _mm256_setzero_si256();
          for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) {
              whole[2 * t + r] = sum[r][t];
              sum[r][t] = _mm256_setzero_si256();
            }
          }
          step_sums[v / 2] = pair_totals<R, T>(whole);
        }
      });
      __m256i whole[8], mins[8];  // per pair (lane 2t + r): the lanes to sum
      float dd[8] = {}, dm[8] = {}, da[8] = {};
      for (int v = 0; v < 8; ++v) whole[v] = mins[v] = _mm256_setzero_si256();
      for (int t = 0; t < T; ++t) {
        const __m256i bsums = loadu(a[t][b].bsums);
        const float ad = a[t][b].d;
        for (int r = 0; r < R; ++r) {
          const __m256i pm = _mm256_madd_epi16(s[r].bsum, bsums);
          if constexpr (kTiled) {  // dd, dm: the row's d, dmin
            whole[2 * t + r] = k == Kind::q6_k ? _mm256_sub_epi32(sum[r][t], _mm256_slli_epi32(pm, 5)) : sum[r][t];
            mins[2 * t + r] = pm;
            dd[2 * t + r] = s[r].d;
            dm[2 * t + r] = s[r].dmin;
            da[2 * t + r] = ad;
          } else if constexpr (k == Kind::q6_k) {
            const __m256i p = _mm256_sub_epi32(sum[r][t], _mm256_slli_epi32(pm, 5));
            acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(s[r].d * ad), _mm256_cvtepi32_ps(p), acc[r][t]);
          } else if constexpr (k == Kind::q5_k) {
            acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(ad * s[r].d), _mm256_cvtepi32_ps(sum[r][t]), acc[r][t]);
            mins[2 * t + r] = pm;
            dm[2 * t + r] = -ad * s[r].dmin;
          } else {
            whole[2 * t + r] = sum[r][t];
            mins[2 * t + r] = pm;
            dd[2 * t + r] = s[r].d * ad;
            dm[2 * t + r] = s[r].dmin * ad;
          }
        }
      }
      if constexpr (kTiled) {
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(pair_totals<R, T>(whole)), pair_floats<R, T>(dd));
        if constexpr (k == Kind::q5_k) {
          v = _mm256_fnmadd_ps(pair_floats<R, T>(dm), _mm256_cvtepi32_ps(pair_totals<R, T>(mins)), v);
        }
        chain = _mm256_fmadd_ps(v, pair_floats<R, T>(da), chain);
      } else if constexpr (k == Kind::q5_k) {
        chain_min = _mm256_fmadd_ps(pair_floats<R, T>(dm), _mm256_cvtepi32_ps(pair_totals<R, T>(mins)), chain_min);
      } else if constexpr (kBatched) {
        __m256i m[4];
        sum_lane_pairs(mins, m);
        const __m256 vd = pair_floats<R, T>(dd), vm = pair_floats<R, T>(dm);
        for (int i = 0; i < 4; ++i) {
          chain = _mm256_fmadd_ps(_mm256_cvtepi32_ps(step_sums[i]), vd, chain);
          chain_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m[i]), vm, chain_min);
        }
      } else if constexpr (k == Kind::q4_k) {
        __m256 ts, tm;  // the pairs' whole sums and mins
        if constexpr (R * T == 1) {  // both totals in one reduction: [S, M, S, M]
          const __m256i h = _mm256_hadd_epi32(whole[0], mins[0]);
          const __m128i q = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
          const __m128 f = _mm_cvtepi32_ps(_mm_hadd_epi32(q, q));
          ts = _mm256_zextps128_ps256(f);
          tm = _mm256_zextps128_ps256(_mm_movehdup_ps(f));
        } else {
          ts = _mm256_cvtepi32_ps(pair_totals<R, T>(whole));
          tm = _mm256_cvtepi32_ps(pair_totals<R, T>(mins));
        }
        chain = _mm256_fmadd_ps(ts, pair_floats<R, T>(dd), chain);
        chain_min = _mm256_fmadd_ps(tm, pair_floats<R, T>(dm), chain_min);
      }
    }
    alignas(32) float c[8], cm[8];
    _mm256_store_ps(c, chain);
    _mm256_store_ps(cm, chain_min);
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        float v;
        if constexpr (kTiled) v = c[2 * t + r];
        else if constexpr (k == Kind::q4_k) v = c[2 * t + r] - cm[2 * t + r];
        else if constexpr (k == Kind::q5_k) v = hsum(acc[r][t]) + cm[2 * t + r];
        else v = hsum(acc[r][t]);
        y[(t0 + t) * y_stride + r0 + r] = v;
      }
    }
  }
};

template <Kind k, bool kBatched = false>
void tile_k(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
            size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride) {
  MicroK<k, kBatched> micro{rows, row_stride, acts, act_stride, n_blocks, y, y_stride};
  if (n_acts == 1) {
    // A matvec: row by row, which streams a matrix from memory faster than
    // interleaved rows (see vec_dot_avx2.cpp).
    for (int64_t r0 = 0; r0 < n_rows; ++r0) micro.template operator()<1, 1>(r0, 0);
    return;
  }
  for (int64_t r0 = 0; r0 < n_rows; r0 += 2) {
    over_acts<2, 4>(static_cast<int>(std::min<int64_t>(2, n_rows - r0)), r0, 0, n_acts, micro);
  }
}

}  // namespace

void tile_q4_k_q8_k_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                         size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                         int64_t y_stride) {
  tile_k<Kind::q4_k>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

void tile_q4_k_q8_k_batched_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                              size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                              int64_t y_stride) {
  tile_k<Kind::q4_k, true>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

void tile_q5_k_q8_k_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                         size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                         int64_t y_stride) {
  tile_k<Kind::q5_k>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

void tile_q5_k_q8_k_batched_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                                 size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                                 int64_t y_stride) {
  tile_k<Kind::q5_k, true>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

void tile_q6_k_q8_k_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                         size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                         int64_t y_stride) {
  tile_k<Kind::q6_k>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

void tile_q6_k_q8_k_batched_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                                 size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                                 int64_t y_stride) {
  tile_k<Kind::q6_k, true>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

}  // namespace cohort::quant::kernels
