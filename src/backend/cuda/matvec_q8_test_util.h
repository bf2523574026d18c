// Shared by the tests of the quantized-weight kernels (matvec_q8, mmq, mmd):
// quantized weights, quantized activations and their F64 references on the
// host, and the check that several parts in one launch give the bits of
// separate launches.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <vector_types.h>

#include "backend/cuda/kernel_test_util.h"
#include "backend/cuda/matvec_q8.h"
#include "gguf/tensor_type.h"
#include "quant/quant.h"

namespace cohort::cuda::testing {

// The types of the int8-activation kernels (matvec_q8.h, mmq.h).
inline constexpr gguf::TensorType kQ8Types[] = {gguf::TensorType::Q8_0, gguf::TensorType::Q4_0,
                                                gguf::TensorType::Q4_1, gguf::TensorType::Q4_K,
                                                gguf::TensorType::Q5_K, gguf::TensorType::Q6_K};

struct QuantWeights {
  std::vector<uint8_t> bytes;  // the GGUF rows, made by the project's quantizer
  std::vector<float> values;   // what the CPU dequantizer makes of them
};

// n_out rows of n_in normal values in `type`.
inline QuantWeights quant_weights(gguf::TensorType type, int64_t n_in, int64_t n_out, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(n_in * n_out));
  for (float& v : f) v = normal(rng);
  QuantWeights w;
  const size_t row = gguf::row_bytes(type, n_in);
  w.bytes.resize(row * static_cast<size_t>(n_out));
  w.values.resize(f.size());
  parallel_ranges(n_out, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      quant::quantize(type, f.data() + r * n_in, w.bytes.data() + r * row, n_in);
      quant::dequantize(type, w.bytes.data() + r * row, w.values.data() + r * n_in, n_in);
    }
  });
  return w;
}

// quantize_activations_host of BF16 bits: the bytes and the values d * q.
struct QuantActivations {
  std::vector<uint8_t> bytes;  // the xq layout of matvec_q8.h
  std::vector<float> values;   // [n_tok, n_in], d * q
};

inline QuantActivations quant_activations(const std::vector<uint16_t>& x, int64_t n_tok, int64_t n_in) {
  QuantActivations a{std::vector<uint8_t>(q8_activation_bytes(n_tok, n_in)),
                     std::vector<float>(static_cast<size_t>(n_tok * n_in))};
  quantize_activations_host(x.data(), n_tok, n_in, a.bytes.data());
  const auto* q = reinterpret_cast<const int8_t*>(a.bytes.data());
  const uint8_t* ds = a.bytes.data() + n_tok * n_in;
  for (int64_t i = 0; i < n_tok * n_in; ++i) {
    float2 b;
    std::memcpy(&b, ds + (i / 32) * sizeof(float2), sizeof b);
    a.values[static_cast<size_t>(i)] = b.x * q[i];
  }
  return a;
}

// [n_tok, n_out] = x · Wᵀ in F64.
inline std::vector<double> reference_f64(const std::vector<float>& w, const std::vector<float>& x, int64_t n_tok,
                                         int64_t n_in, int64_t n_out) {
  std::vector<double> y(static_cast<size_t>(n_tok * n_out));
  parallel_ranges(n_out, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t t = 0; t < n_tok; ++t) {
        double s = 0.0;
        for (int64_t i = 0; i < n_in; ++i) s += static_cast<double>(w[o * n_in + i]) * x[t * n_in + i];
        y[static_cast<size_t>(t * n_out + o)] = s;
      }
    }
  });
  return y;
}

// Parts of `rows` rows each of random `type` weights with n_in columns, as
// one launch, `joint(parts)`, and each alone, `alone(w, y, n_out)` (both
// writing BF16 y [n_tok, n_out]): the same bits expected. Waits for the GPU.
template <typename Joint, typename Alone>
void expect_parts_equal_alone(gguf::TensorType type, int64_t n_in, int64_t n_tok, std::span<const int64_t> rows,
                              std::mt19937& rng, Joint joint, Alone alone) {
  std::vector<DeviceBuffer<uint8_t>> w;
  std::vector<DeviceBuffer<uint16_t>> joint_y, alone_y;
  std::vector<MatvecPart> parts;
  for (int64_t r : rows) {
    const QuantWeights q = quant_weights(type, n_in, r, rng);
    w.emplace_back(q.bytes.size()).upload(q.bytes);
    joint_y.emplace_back(static_cast<size_t>(n_tok * r));
    alone_y.emplace_back(static_cast<size_t>(n_tok * r));
    parts.push_back({w.back().data(), joint_y.back().data(), r});
  }
  joint(std::span<const MatvecPart>(parts));
  for (size_t p = 0; p < parts.size(); ++p) alone(w[p].data(), alone_y[p].data(), rows[p]);
  CUDA_CHECK(cudaDeviceSynchronize());
  for (size_t p = 0; p < parts.size(); ++p) {
    EXPECT_TRUE(joint_y[p].download() == alone_y[p].download()) << gguf::type_name(type) << " part " << p;
  }
}

}  // namespace cohort::cuda::testing
