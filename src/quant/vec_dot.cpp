#include "quant/vec_dot.h"

#include <array>

#include "common/error.h"
#include "quant/vec_dot_kernels.h"

namespace cohort::quant {
namespace {

using namespace kernels;

// The one place where a weight type meets its activation type and kernels.
struct Pairing {
  TensorType weight;
  TensorType activation;
  ActQuantizeFn quantize_scalar;
  ActQuantizeFn quantize_avx2;
  TileFn tile_scalar;
  TileFn tile_avx2;
  TileFn batched_scalar = nullptr;  // Order::batched where it differs
  TileFn batched_avx2 = nullptr;
  int64_t min_batch = 0;            // fewest tokens for Order::batched
  int64_t group = 1;                // Order::batched takes tokens in groups of this
};

constexpr std::array kPairings = {
    Pairing{TensorType::Q4_0, TensorType::Q8_0, act_quantize_q8_0_scalar, act_quantize_q8_0_avx2,
            tile_q4_0_q8_0_scalar, tile_q4_0_q8_0_avx2},
    Pairing{TensorType::Q4_1, TensorType::Q8_1, act_quantize_q8_1_scalar, act_quantize_q8_1_avx2,
            tile_q4_1_q8_1_scalar, tile_q4_1_q8_1_avx2},
    Pairing{TensorType::Q8_0, TensorType::Q8_0, act_quantize_q8_0_scalar, act_quantize_q8_0_avx2,
            tile_q8_0_q8_0_scalar, tile_q8_0_q8_0_avx2},
    Pairing{TensorType::Q4_K, TensorType::Q8_K, act_quantize_q8_k_scalar, act_quantize_q8_k_avx2,
            tile_q4_k_q8_k_scalar, tile_q4_k_q8_k_avx2, tile_q4_k_q8_k_batched_scalar,
            tile_q4_k_q8_k_batched_avx2, 4, 4},
    Pairing{TensorType::Q5_K, TensorType::Q8_K, act_quantize_q8_k_scalar, act_quantize_q8_k_avx2,
            tile_q5_k_q8_k_scalar, tile_q5_k_q8_k_avx2, tile_q5_k_q8_k_batched_scalar,
            tile_q5_k_q8_k_batched_avx2, 8, 1},
    Pairing{TensorType::Q6_K, TensorType::Q8_K, act_quantize_q8_k_scalar, act_quantize_q8_k_avx2,
            tile_q6_k_q8_k_scalar, tile_q6_k_q8_k_avx2, tile_q6_k_q8_k_batched_scalar,
            tile_q6_k_q8_k_batched_avx2, 8, 1},
    Pairing{TensorType::F16, TensorType::F16, act_quantize_f16_scalar, act_quantize_f16_avx2,
            tile_f16_f16_scalar, tile_f16_f16_avx2},
    Pairing{TensorType::BF16, TensorType::BF16, act_quantize_bf16_scalar, act_quantize_bf16_avx2,
            tile_bf16_bf16_scalar, tile_bf16_bf16_avx2},
    // A plain copy needs no SIMD variant.
    Pairing{TensorType::F32, TensorType::F32, act_quantize_f32_scalar, act_quantize_f32_scalar,
            tile_f32_f32_scalar, tile_f32_f32_avx2},
};

const Pairing* find(TensorType weight) {
  for (const Pairing& p : kPairings) {
    if (p.weight == weight) return &p;
  }
  return nullptr;
}

const Pairing& require(TensorType weight) {
  const Pairing* p = find(weight);
  if (p == nullptr) fail("quant: no integer dot product for weight type {}", gguf::type_name(weight));
  return *p;
}

// Blocks of the weight type in n elements (also blocks of its activation type).
int64_t block_count(TensorType weight, int64_t n) {
  const int64_t bs = gguf::traits(weight).block_size;
  if (n < 0 || n % bs != 0) {
    fail("quant: {} elements of type {} is not a multiple of its block size {}", n,
         gguf::type_name(weight), bs);
  }
  return n / bs;
}

bool use_avx2() { return active_isa() == Isa::avx2; }

}  // namespace

bool has_vec_dot(TensorType weight) { return find(weight) != nullptr; }

int64_t order_split(TensorType weight, int64_t n_tok) {
  const Pairing* p = find(weight);
  if (p == nullptr || p->batched_scalar == nullptr || n_tok < p->min_batch) return 0;
  return n_tok - n_tok % p->group;
}

TensorType activation_type(TensorType weight) { return require(weight).activation; }

size_t activation_row_bytes(TensorType weight, int64_t n) {
  const Pairing& p = require(weight);
  block_count(weight, n);  // validates n
  return gguf::row_bytes(p.activation, n);
}

void quantize_activations(TensorType weight, const float* x, void* out, int64_t n) {
  const Pairing& p = require(weight);
  const int64_t n_blocks = block_count(weight, n) * gguf::traits(weight).block_size /
                           gguf::traits(p.activation).block_size;
  if (n_blocks == 0) return;
  (use_avx2() ? p.quantize_avx2 : p.quantize_scalar)(x, out, n_blocks);
}

float vec_dot(TensorType weight, const void* row, const void* act, int64_t n) {
  float y = 0.0f;
  vec_dot_tile(weight, row, 0, 1, act, 0, 1, n, &y, 0);
  return y;
}

void vec_dot_tile(TensorType weight, const void* rows, size_t row_stride, int64_t n_rows,
                  const void* acts, size_t act_stride, int64_t n_acts, int64_t n, float* y,
                  int64_t y_stride, Order order) {
  const Pairing& p = require(weight);
  const int64_t n_blocks = block_count(weight, n);
  if (n_rows <= 0 || n_acts <= 0) return;
  if (n_blocks == 0) {  // empty rows: every dot product is 0
    for (int64_t t = 0; t < n_acts; ++t) {
      for (int64_t r = 0; r < n_rows; ++r) y[t * y_stride + r] = 0.0f;
    }
    return;
  }
  const bool batched = order == Order::batched && p.batched_scalar != nullptr;
  const TileFn fn = use_avx2() ? (batched ? p.batched_avx2 : p.tile_avx2)
                               : (batched ? p.batched_scalar : p.tile_scalar);
  fn(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
}

}  // namespace cohort::quant
