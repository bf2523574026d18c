// AVX2 tile kernels of the K formats against Q8_K activations (Q4_K, Q5_K,
// Q6_K), in micro-tiles of R weight rows x T activation rows.
//
// Per super-block, each 32-element group of weights is unpacked to bytes
// once per row and multiplied with T activation groups: vpmaddubsw (bytes
// to int16 pairs), vpmaddwd with the group's integer scale (int32 lanes of
// 4 elements), vpaddd into the super-block's int32 lanes. The mins (Q4_K,
// Q5_K) and the offset -32 (Q6_K) come from the activations' bsums through
// one more vpmaddwd. Then two F32 steps per super-block, in the order
// vec_dot_scalar.cpp defines. All integer sums are exact.
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

template <Kind k>
struct MicroK {
  using W = typename Fmt<k>::W;

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
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      RowScales s[R];
      for (int r = 0; r < R; ++r) {
        row_scales<k>(w[r][b], s[r]);
      }
      __m256i sum[R][T];
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) sum[r][t] = _mm256_setzero_si256();
      }
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
      });
      for (int t = 0; t < T; ++t) {
        const __m256i bsums = loadu(a[t][b].bsums);
        const float ad = a[t][b].d;
        for (int r = 0; r < R; ++r) {
          const __m256i pm = _mm256_madd_epi16(s[r].bsum, bsums);
          if constexpr (k == Kind::q6_k) {
            const __m256i p = _mm256_sub_epi32(sum[r][t], _mm256_slli_epi32(pm, 5));
            acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(s[r].d * ad), _mm256_cvtepi32_ps(p), acc[r][t]);
          } else {
            const float dd = ad * s[r].d, dm = -ad * s[r].dmin;
            acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(sum[r][t]), acc[r][t]);
            acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dm), _mm256_cvtepi32_ps(pm), acc[r][t]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) y[(t0 + t) * y_stride + r0 + r] = hsum(acc[r][t]);
    }
  }
};

template <Kind k>
void tile_k(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
            size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride) {
  MicroK<k> micro{rows, row_stride, acts, act_stride, n_blocks, y, y_stride};
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

void tile_q5_k_q8_k_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                         size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                         int64_t y_stride) {
  tile_k<Kind::q5_k>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

void tile_q6_k_q8_k_avx2(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                         size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                         int64_t y_stride) {
  tile_k<Kind::q6_k>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

}  // namespace cohort::quant::kernels
