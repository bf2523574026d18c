// Float-to-integer helpers of the encoders (internal to quant/). They never
// convert an out-of-range float or NaN to int, which would be undefined.
#pragma once

#include <bit>
#include <cstdint>

namespace cohort::quant::kernels {

// (int)v, truncated toward zero like a C cast, clamped to [lo, hi]; NaN gives lo.
inline int clamp_to_int(float v, int lo, int hi) {
  if (!(v > static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}

// v rounded to the nearest integer (ties to even) and clamped to [lo, hi].
// Adding 1.5 * 2^23 pushes the fraction out of the mantissa, so the low
// mantissa bits hold the rounded value; exact for |v| < 2^22. Larger values
// and NaN give some integer in [lo, hi] (never undefined behaviour); the
// encoders only pass values a few times their integer range. Integer selects,
// not float ones, so that GCC vectorizes loops around this even when lo and
// hi are constants.
inline int round_clamp(float v, int lo, int hi) {
  const float shifted = v + 12582912.0f;
  int q = static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x7fffffu) - 0x400000;
  q = q < lo ? lo : q;
  return q > hi ? hi : q;
}

}  // namespace cohort::quant::kernels
