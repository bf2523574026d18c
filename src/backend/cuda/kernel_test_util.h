// Shared by the tests of the compute kernels: BF16 host data, poisoned
// device outputs, and the relative L2 error against an F64 reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <cuda_bf16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "common/half.h"

namespace cohort::cuda::testing {

// n normal values (sigma 1) rounded to BF16: the bits and their F32 values.
struct Bf16Data {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};

inline Bf16Data random_bf16(size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> normal(0.0f, sigma);
  Bf16Data d{std::vector<uint16_t>(n), std::vector<float>(n)};
  for (size_t i = 0; i < n; ++i) {
    d.bits[i] = f32_to_bf16(normal(rng));
    d.values[i] = bf16_to_f32(d.bits[i]);
  }
  return d;
}

inline std::vector<float> bf16_values(const std::vector<uint16_t>& bits) {
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = bf16_to_f32(bits[i]);
  return v;
}

inline const __nv_bfloat16* as_bf16(const DeviceBuffer<uint16_t>& b) {
  return reinterpret_cast<const __nv_bfloat16*>(b.data());
}
inline __nv_bfloat16* as_bf16(DeviceBuffer<uint16_t>& b) { return reinterpret_cast<__nv_bfloat16*>(b.data()); }

// All bytes 0xFF: NaN as F32, BF16 and F16, so an element a kernel fails to
// write fails the comparison.
template <typename T>
void poison(DeviceBuffer<T>& b) {
  if (b.size() > 0) CUDA_CHECK(cudaMemset(b.data(), 0xFF, b.size() * sizeof(T)));
}

// sqrt(sum (got - want)^2 / sum want^2) over the first n elements; NaN when
// any element of got is not finite (so that no tolerance check passes it).
inline double relative_l2(const float* got, const double* want, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) return std::nan("");
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

// fn(begin, end) over [0, n) cut into one range per hardware thread: the
// F64 references of the large shapes would take minutes on one core.
template <typename Fn>
void parallel_ranges(int64_t n, Fn fn) {
  const int64_t k = std::max<int64_t>(1, std::min<int64_t>(n, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < k; ++i) threads.emplace_back(fn, n * i / k, n * (i + 1) / k);
  for (std::thread& t : threads) t.join();
}

// The tolerance check of these tests: NaN never passes.
inline bool within(double error, double tolerance) { return error <= tolerance; }

// One line per comparison, so that the GPU log records the errors seen.
inline void report(const std::string& what, double error, double tolerance) {
  std::printf("[ rel-l2   ] %-60s %.3e (tolerance %.1e)\n", what.c_str(), error, tolerance);
}

}  // namespace cohort::cuda::testing
