// IEEE half (F16) and bfloat16 (BF16) conversions, bit-exact with numpy and
// with ggml (round to nearest even; NaN stays NaN).
#pragma once

#include <bit>
#include <cstdint>

namespace cohort {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) {  // inf / NaN
    return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  }
  if (exp == 0) {
    // zero or subnormal: man * 2^-24, exact in float
    float v = static_cast<float>(man) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf / NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // subnormal half (or zero): round abs * 2^24 to nearest even integer
    float v = std::bit_cast<float>(abs) * 0x1p24f;
    // v < 1024; adding 2^23 rounds to an integer with ties to even
    float r = (v + 0x1p23f) - 0x1p23f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r));
  }
  // normal: rebias exponent and round mantissa to nearest even
  uint32_t mant_odd = (abs >> 13) & 1u;
  uint32_t rounded = abs + 0xfffu + mant_odd;
  return static_cast<uint16_t>(sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13));
}

inline float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace cohort
