// AVX2 encoders of activation rows; the same bytes as act_quantize.cpp for
// finite input (same scale formulas, vcvtps2dq rounds ties to even as
// round_clamp does, and max is exact in any order).
#include <immintrin.h>

#include "common/half.h"
#include "quant/avx2_tile.h"
#include "quant/blocks.h"
#include "quant/vec_dot_kernels.h"

namespace cohort::quant::kernels {
namespace {

using avx2::loadu;

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Largest |x| of 32 values.
inline float amax32(const float* x) {
  const __m256 m01 = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x)), abs_ps(_mm256_loadu_ps(x + 8)));
  const __m256 m23 = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + 16)), abs_ps(_mm256_loadu_ps(x + 24)));
  return hmax(_mm256_max_ps(m01, m23));
}

// q = round(x * id) for 32 values, written as bytes in element order;
// q[k] gets elements 8k..8k+7 as int32 for the caller's sums.
inline void encode32(const float* x, float id, int8_t* out, __m256i* q) {
  const __m256 m = _mm256_set1_ps(id);
  for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), m));
  // packs work within 128-bit halves: dword i of the packed vector holds
  // elements of q[i % 4] (low half for i < 4); the permutation restores order.
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  const __m256i ordered = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
}

}  // namespace

void act_quantize_q8_0_avx2(const float* x, void* out, int64_t n_blocks) {
  auto* b = static_cast<BlockQ8_0*>(out);
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQK) {
    const ActScale s = act_scale(amax32(x));
    __m256i q[4];
    encode32(x, s.id, b[ib].qs, q);
    b[ib].d = f32_to_f16(s.d);
  }
}

void act_quantize_q8_1_avx2(const float* x, void* out, int64_t n_blocks) {
  auto* b = static_cast<BlockQ8_1*>(out);
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQK) {
    const ActScale s = act_scale(amax32(x));
    __m256i q[4];
    encode32(x, s.id, b[ib].qs, q);
    const int sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    b[ib].d = f32_to_f16(s.d);
    b[ib].s = f32_to_f16(s.d * static_cast<float>(sum));
  }
}

void act_quantize_q8_k_avx2(const float* x, void* out, int64_t n_blocks) {
  auto* b = static_cast<BlockQ8_K*>(out);
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQKK) {
    float amax = 0.0f;
    for (int g = 0; g < kQKK / kQK; ++g) amax = std::max(amax, amax32(x + kQK * g));
    const float id = act_scale(amax).id;
    b[ib].d = id != 0.0f ? 1.0f / id : 0.0f;
    for (int g = 0; g < kQKK / kQK; ++g) {
      __m256i q[4];
      encode32(x + kQK * g, id, b[ib].qs + kQK * g, q);
      b[ib].bsums[2 * g] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      b[ib].bsums[2 * g + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
    }
  }
}

void act_quantize_f16_avx2(const float* x, void* out, int64_t n_blocks) {
  auto* h = static_cast<uint16_t*>(out);
  int64_t i = 0;
  for (; i + 8 <= n_blocks; i += 8) {
    const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), v);
  }
  for (; i < n_blocks; ++i) h[i] = f32_to_f16(x[i]);
}

void act_quantize_bf16_avx2(const float* x, void* out, int64_t n_blocks) {
  auto* h = static_cast<uint16_t*>(out);
  // As f32_to_bf16: round to nearest even on the bits; NaN keeps its top
  // bits and is made quiet.
  auto round8 = [](__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    return _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(nan));
  };
  int64_t i = 0;
  for (; i + 16 <= n_blocks; i += 16) {
    const __m256i lo = round8(_mm256_loadu_ps(x + i)), hi = round8(_mm256_loadu_ps(x + i + 8));
    // packus works within 128-bit halves; 64-bit groups 0,2,1,3 restore order
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + i), packed);
  }
  for (; i < n_blocks; ++i) h[i] = f32_to_bf16(x[i]);
}

}  // namespace cohort::quant::kernels
