// The bodies of llama_numerics.h, included once by llama_numerics.cpp
// (portable build) and once by llama_numerics_avx2.cpp (compiled with FMA),
// each time in its own namespace COHORT_NUMERICS_NS. Every fused
// multiply-add is written as std::fma and both files are compiled without
// implicit contraction (src/CMakeLists.txt), so both builds return the same bits.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "backend/cpu/llama_numerics.h"

namespace cohort::cpu::COHORT_NUMERICS_NS {

inline float sum_lanes(const float* v) {
  float t[8];
  for (int i = 0; i < 8; ++i) t[i] = v[i] + v[i + 8];
  const float s0 = t[0] + t[4], s1 = t[1] + t[5], s2 = t[2] + t[6], s3 = t[3] + t[7];
  return (s0 + s2) + (s1 + s3);
}

// The four 16-lane accumulators of a wide sum folded into one.
inline void fold_wide(const float* wide, float* folded, int64_t stride) {
  for (int l = 0; l < kSumLanes; ++l) {
    folded[l] = (wide[l * stride] + wide[(l + 2 * kSumLanes) * stride]) +
                (wide[(l + kSumLanes) * stride] + wide[(l + 3 * kSumLanes) * stride]);
  }
}

inline float exp_poly(float x) {
  // exp(x) = 2^n * exp(b), n = round(x / ln 2), b = x - n ln 2 (ln 2 in two
  // parts), exp(b) by a degree-5 polynomial; each step one F32 rounding.
  const float shift = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, shift);
  const float n = z - shift;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  if (std::fabs(n) > 192.0f) return n > 0.0f ? INFINITY : 0.0f;
  const float u = b * b;
  const float hi = std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                            std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f));
  const float j = std::fma(hi, u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  const int e = static_cast<int>(n);
  if (e < -126 || e > 127) return std::ldexp(j, e);  // subnormal or overflowing results
  return j * std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23);  // exact: 2^e
}

inline float dot_f32_wide(const float* x, const float* y, int64_t n) {
  float acc[kWideLanes] = {};
  const int64_t n_wide = n - n % kWideLanes;
  for (int64_t i = 0; i < n_wide; i += kWideLanes) {
    for (int l = 0; l < kWideLanes; ++l) acc[l] = std::fma(x[i + l], y[i + l], acc[l]);
  }
  float folded[kSumLanes];
  fold_wide(acc, folded, 1);
  float sum = sum_lanes(folded);
  for (int64_t i = n_wide; i < n; ++i) sum = std::fma(x[i], y[i], sum);
  return sum;
}

inline void axpy_lane(float* lane, float p, const float* v, int64_t n) {
  for (int64_t d = 0; d < n; ++d) lane[d] = std::fma(p, v[d], lane[d]);
}

inline void reduce_lanes(const float* lanes, int n_lanes, int64_t n, float* out) {
  for (int64_t d = 0; d < n; ++d) {
    float column[kSumLanes];
    if (n_lanes == kWideLanes) {
      fold_wide(lanes + d, column, n);
    } else {
      for (int l = 0; l < kSumLanes; ++l) column[l] = lanes[l * n + d];
    }
    out[d] = sum_lanes(column);
  }
}

inline void softmax_llama(float* x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  double sum = 0.0;
  for (int64_t g = 0; g < n; g += kSumLanes) {
    float lanes[kSumLanes] = {};
    for (int64_t i = g; i < std::min(n, g + kSumLanes); ++i) {
      x[i] = exp_poly(x[i] - max);
      lanes[i - g] = x[i];
    }
    sum += sum_lanes(lanes);
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

inline void silu_mul_llama(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    y[i] = g / (1.0f + exp_poly(-g)) * up[i];
  }
}

}  // namespace cohort::cpu::COHORT_NUMERICS_NS
