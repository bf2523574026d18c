// Helpers of the AVX2 tile kernels (internal to quant/; include only from
// *_avx2.cpp files, which are compiled with -mavx2 -mfma -mf16c).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

// Kernel helpers must inline into the loops that call them: a call makes
// every ymm register caller-saved and pushes the accumulators to memory.
#define COHORT_AVX2_INLINE inline __attribute__((always_inline))
#define COHORT_AVX2_LAMBDA_INLINE __attribute__((always_inline))

namespace cohort::quant::kernels::avx2 {

// Sum of the 8 lanes as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)); the
// scalar reference (vec_dot_scalar.cpp, reduce()) adds in this order too.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane i of the result: the sum of the 8 int32 lanes of v[i] (exact, so the
// order of the additions does not matter).
COHORT_AVX2_INLINE __m256i hsum8_epi32(const __m256i (&v)[8]) {
  const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20),
                          _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

inline __m256i loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Calls micro.template operator()<nr, nt>(r0, t0) with the compile-time
// tile shape nr x nt (nr <= R, nt <= T) equal to the run-time (n_rows, n_acts).
template <int R, int T, typename Micro>
void with_shape(int n_rows, int n_acts, Micro& micro, int64_t r0, int64_t t0) {
  if constexpr (R > 1) {
    if (n_rows < R) return with_shape<R - 1, T>(n_rows, n_acts, micro, r0, t0);
  }
  if constexpr (T > 1) {
    if (n_acts < T) return with_shape<R, T - 1>(n_rows, n_acts, micro, r0, t0);
  }
  micro.template operator()<R, T>(r0, t0);
}

// Walks the tokens [t0, t1) of a row group in micro-tiles of T activations
// (R rows, of which n_rows are real).
template <int R, int T, typename Micro>
void over_acts(int n_rows, int64_t r0, int64_t t0, int64_t t1, Micro& micro) {
  for (int64_t t = t0; t < t1; t += T) {
    with_shape<R, T>(n_rows, static_cast<int>(std::min<int64_t>(T, t1 - t)), micro, r0, t);
  }
}

template <typename Block>
const Block* row_at(const void* base, size_t stride, int64_t i) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(base) + static_cast<size_t>(i) * stride);
}

}  // namespace cohort::quant::kernels::avx2
