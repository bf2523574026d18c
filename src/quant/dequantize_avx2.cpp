// AVX2 dequantizers: 8 elements per vector, the same float32 operations in
// the same order as dequantize.cpp (and numpy), so the two paths give
// identical bits. Scales are converted with common/half.h, as in the scalar
// path, so that NaN scales keep their payload too.
#include <immintrin.h>

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

// 8 consecutive bytes at p, zero-extended to 32-bit lanes.
inline __m256i load_u8x8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// (lanes >> shift) & mask, shift chosen at run time.
inline __m256i bits(__m256i v, int shift, int mask) {
  return _mm256_and_si256(_mm256_srl_epi32(v, _mm_cvtsi32_si128(shift)), _mm256_set1_epi32(mask));
}

inline void store8(float* dst, __m256 v) { _mm256_storeu_ps(dst, v); }

// Converts 8 halves. vcvtph2ps quiets signalling NaNs while numpy keeps their
// bits, so NaN lanes are rebuilt with integer operations (exponent all ones,
// mantissa shifted up unchanged).
inline __m256 f16x8_to_f32(__m128i h) {
  const __m256 f = _mm256_cvtph_ps(h);
  const __m256i w = _mm256_cvtepu16_epi32(h);
  const __m256i abs = _mm256_and_si256(w, _mm256_set1_epi32(0x7fff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7c00));
  if (_mm256_testz_si256(nan, nan)) return f;
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x8000)), 16);
  const __m256i man = _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x3ff)), 13);
  const __m256i exact = _mm256_or_si256(_mm256_or_si256(sign, man), _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_ps(f, _mm256_castsi256_ps(exact), _mm256_castsi256_ps(nan));
}

}  // namespace

void dequantize_f32_avx2(const void* src, float* dst, int64_t n_blocks) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * sizeof(float));
}

void dequantize_f16_avx2(const void* src, float* dst, int64_t n_blocks) {
  const auto* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n_blocks; i += 8) {
    store8(dst + i, f16x8_to_f32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  }
  for (; i < n_blocks; ++i) dst[i] = f16_to_f32(h[i]);
}

void dequantize_bf16_avx2(const void* src, float* dst, int64_t n_blocks) {
  const auto* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n_blocks; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    store8(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n_blocks; ++i) dst[i] = bf16_to_f32(h[i]);
}

void dequantize_q8_0_avx2(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ8_0* b = blocks_of<BlockQ8_0>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQK) {
    const __m256 d = _mm256_set1_ps(f16_to_f32(b[ib].d));
    for (int k = 0; k < kQK; k += 8) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[ib].qs + k));
      const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
      store8(dst + k, _mm256_mul_ps(q, d));  // numpy: x * d
    }
  }
}

void dequantize_q4_0_avx2(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ4_0* b = blocks_of<BlockQ4_0>(src);
  const __m256i eight = _mm256_set1_epi32(8);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQK) {
    const __m256 d = _mm256_set1_ps(f16_to_f32(b[ib].d));
    for (int k = 0; k < kQK / 2; k += 8) {
      const __m256i raw = load_u8x8(b[ib].qs + k);
      const __m256i lo = _mm256_sub_epi32(_mm256_and_si256(raw, _mm256_set1_epi32(0xF)), eight);
      const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(raw, 4), eight);
      store8(dst + k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(lo)));
      store8(dst + k + kQK / 2, _mm256_mul_ps(d, _mm256_cvtepi32_ps(hi)));
    }
  }
}

void dequantize_q4_1_avx2(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ4_1* b = blocks_of<BlockQ4_1>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQK) {
    const __m256 d = _mm256_set1_ps(f16_to_f32(b[ib].d));
    const __m256 m = _mm256_set1_ps(f16_to_f32(b[ib].m));
    for (int k = 0; k < kQK / 2; k += 8) {
      const __m256i raw = load_u8x8(b[ib].qs + k);
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(raw, _mm256_set1_epi32(0xF)));
      const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(raw, 4));
      store8(dst + k, _mm256_add_ps(_mm256_mul_ps(d, lo), m));
      store8(dst + k + kQK / 2, _mm256_add_ps(_mm256_mul_ps(d, hi), m));
    }
  }
}

void dequantize_q4_k_avx2(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ4_K* b = blocks_of<BlockQ4_K>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQKK) {
    const float d = f16_to_f32(b[ib].d);
    const float dmin = f16_to_f32(b[ib].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc = 0, m = 0;
      unpack_scale_min(b[ib].scales, j, sc, m);
      const __m256 dl = _mm256_set1_ps(d * static_cast<float>(sc));
      const __m256 ml = _mm256_set1_ps(dmin * static_cast<float>(m));
      const uint8_t* q = b[ib].qs + 32 * (j / 2);
      for (int k = 0; k < 32; k += 8) {
        const __m256 v = _mm256_cvtepi32_ps(bits(load_u8x8(q + k), 4 * (j % 2), 0xF));
        store8(dst + 32 * j + k, _mm256_sub_ps(_mm256_mul_ps(dl, v), ml));
      }
    }
  }
}

void dequantize_q5_k_avx2(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ5_K* b = blocks_of<BlockQ5_K>(src);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQKK) {
    const float d = f16_to_f32(b[ib].d);
    const float dmin = f16_to_f32(b[ib].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc = 0, m = 0;
      unpack_scale_min(b[ib].scales, j, sc, m);
      const __m256 dl = _mm256_set1_ps(d * static_cast<float>(sc));
      const __m256 ml = _mm256_set1_ps(dmin * static_cast<float>(m));
      const uint8_t* q = b[ib].qs + 32 * (j / 2);
      for (int k = 0; k < 32; k += 8) {
        const __m256i lo = bits(load_u8x8(q + k), 4 * (j % 2), 0xF);
        const __m256i hi = _mm256_slli_epi32(bits(load_u8x8(b[ib].qh + k), j, 1), 4);
        const __m256 v = _mm256_cvtepi32_ps(_mm256_or_si256(lo, hi));
        store8(dst + 32 * j + k, _mm256_sub_ps(_mm256_mul_ps(dl, v), ml));
      }
    }
  }
}

void dequantize_q6_k_avx2(const void* src, float* dst, int64_t n_blocks) {
  const BlockQ6_K* b = blocks_of<BlockQ6_K>(src);
  const __m256i offset = _mm256_set1_epi32(32);
  for (int64_t ib = 0; ib < n_blocks; ++ib, dst += kQKK) {
    const float d = f16_to_f32(b[ib].d);
    // Element 128h + 32t + k: see BlockQ6_K for where its bits live.
    for (int h = 0; h < 2; ++h) {
      for (int t = 0; t < 4; ++t) {
        for (int k = 0; k < 32; k += 8) {
          const int i = 128 * h + 32 * t + k;
          const __m256i lo = bits(load_u8x8(b[ib].ql + 64 * h + 32 * (t % 2) + k), 4 * (t / 2), 0xF);
          const __m256i hi = bits(load_u8x8(b[ib].qh + 32 * h + k), 2 * t, 3);
          const __m256i q = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), offset);
          const __m256 dl = _mm256_set1_ps(d * static_cast<float>(b[ib].scales[i / 16]));
          store8(dst + i, _mm256_mul_ps(dl, _mm256_cvtepi32_ps(q)));
        }
      }
    }
  }
}

}  // namespace cohort::quant::kernels
