// Helpers shared by the quant/ unit tests: random blocks whose f16 scale
// fields hold sensible finite values, error measures, and an ISA guard.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/half.h"
#include "gguf/tensor_type.h"
#include "quant/quant.h"

namespace cohort::quant::testing {

inline const std::vector<TensorType> kSupportedTypes = {
    TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
    TensorType::Q4_1, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
};

// Byte offsets of the f16 scale fields inside one block (see blocks.h).
inline std::vector<size_t> scale_offsets(TensorType type) {
  switch (type) {
    case TensorType::Q8_0:
    case TensorType::Q4_0: return {0};
    case TensorType::Q4_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K: return {0, 2};
    case TensorType::Q6_K: return {208};
    default: return {};
  }
}

// n_blocks blocks of `type`: random bytes, except that scales are finite
// f16 values around 0.01 and float elements are finite normal values. With
// `raw`, every byte is random (NaN and infinite scales included).
inline std::vector<uint8_t> random_blocks(TensorType type, int64_t n_blocks, std::mt19937& rng,
                                          bool raw = false) {
  const auto& t = gguf::traits(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_blocks) * t.type_size);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  if (raw) return bytes;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* block = bytes.data() + static_cast<size_t>(i) * t.type_size;
    if (type == TensorType::F32) {
      const float v = normal(rng);
      std::memcpy(block, &v, sizeof(v));
    } else if (type == TensorType::F16 || type == TensorType::BF16) {
      const float v = normal(rng);
      const uint16_t h = type == TensorType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
      std::memcpy(block, &h, sizeof(h));
    }
    for (size_t off : scale_offsets(type)) {
      const uint16_t h = f32_to_f16(0.01f * normal(rng));
      std::memcpy(block + off, &h, sizeof(h));
    }
  }
  return bytes;
}

inline std::vector<float> random_normal(size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// The tolerance check of every test here: NaN (or inf) never passes.
inline bool within(double error, double tolerance) { return error <= tolerance; }

// sqrt(sum (a-b)^2 / sum b^2), in double.
inline double relative_rms_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

// Bits equal, or both NaN (any payload).
inline bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t ua = 0, ub = 0;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

// Restores the process-wide ISA choice at scope exit.
class IsaGuard {
 public:
  IsaGuard() : saved_(active_isa()) {}
  ~IsaGuard() { set_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  Isa saved_;
};

// The ISAs this machine can run: scalar, and avx2 where the CPU has it.
inline std::vector<Isa> runnable_isas() {
  if (best_isa() == Isa::avx2) return {Isa::scalar, Isa::avx2};
  return {Isa::scalar};
}

inline const char* isa_name(Isa isa) { return isa == Isa::avx2 ? "avx2" : "scalar"; }

}  // namespace cohort::quant::testing
