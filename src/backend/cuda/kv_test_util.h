// Shared by the attention and KV-store tests: random cache arrays in each
// cache type, with the values the kernels must read from them, and Q8_0
// rows as the CPU cache quantizes them (quant::quantize), split into the
// device layout of attention.h (quants, then a scale per 32).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/attention.h"
#include "backend/cuda/device_buffer.h"
#include "common/half.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace cohort::cuda::testing {

inline constexpr KvType kKvTypes[] = {KvType::kF16, KvType::kBf16, KvType::kQ8_0};

inline std::string kv_type_name(KvType t) {
  return t == KvType::kF16 ? "f16" : t == KvType::kBf16 ? "bf16" : "q8_0";
}

// n values in a cache type, as the host and the device hold them.
struct HostKv {
  std::vector<float> values;      // element i as the kernels decode it
  std::vector<uint8_t> data;      // the device's element array
  std::vector<uint16_t> scales;   // Q8_0: the F16 scale of each 32 elements
};

// x (n a multiple of 32 for Q8_0) stored as a cache of `type` stores it.
inline HostKv encode_kv(const std::vector<float>& x, KvType type) {
  const size_t n = x.size();
  HostKv h;
  h.values.resize(n);
  if (type == KvType::kQ8_0) {
    std::vector<quant::BlockQ8_0> blocks(n / 32);
    quant::quantize(gguf::TensorType::Q8_0, x.data(), blocks.data(), static_cast<int64_t>(n));
    h.data.resize(n);
    h.scales.resize(n / 32);
    for (size_t b = 0; b < blocks.size(); ++b) {
      h.scales[b] = blocks[b].d;
      std::memcpy(h.data.data() + 32 * b, blocks[b].qs, 32);
      for (size_t i = 0; i < 32; ++i) h.values[32 * b + i] = blocks[b].qs[i] * f16_to_f32(blocks[b].d);
    }
    return h;
  }
  h.data.resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t bits = type == KvType::kBf16 ? f32_to_bf16(x[i]) : f32_to_f16(x[i]);
    std::memcpy(h.data.data() + 2 * i, &bits, 2);
    h.values[i] = type == KvType::kBf16 ? bf16_to_f32(bits) : f16_to_f32(bits);
  }
  return h;
}

// n normal values (sigma 1) in a cache type.
inline HostKv random_kv(size_t n, KvType type, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& f : x) f = normal(rng);
  return encode_kv(x, type);
}

// A cache array on the device.
struct DeviceKv {
  DeviceBuffer<uint8_t> data;
  DeviceBuffer<uint16_t> scales;

  explicit DeviceKv(const HostKv& h) : data(h.data.size()), scales(h.scales.size()) {
    data.upload(h.data);
    if (!h.scales.empty()) scales.upload(h.scales);
  }
};

inline KvCacheView view_of(DeviceKv& k, DeviceKv& v, int64_t n_blocks, int64_t n_head_kv, int64_t head_dim,
                           KvType type) {
  KvCacheView c{k.data.data(), v.data.data(), n_blocks, n_head_kv, head_dim, type};
  if (type == KvType::kQ8_0) {
    c.k_scale = reinterpret_cast<__half*>(k.scales.data());
    c.v_scale = reinterpret_cast<__half*>(v.scales.data());
  }
  return c;
}

}  // namespace cohort::cuda::testing
