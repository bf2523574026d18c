#include "quant/quant.h"

#include <array>
#include <atomic>

#include "common/error.h"
#include "quant/kernels.h"

namespace cohort::quant {
namespace {

using namespace kernels;

// The one place where a tensor type meets its kernels.
struct TypeKernels {
  TensorType type;
  DequantizeFn dequantize_scalar;
  DequantizeFn dequantize_avx2;
  DotFn dot_scalar;
  DotFn dot_avx2;
  QuantizeFn quantize;
};

#define COHORT_KERNELS(T, name)                                                        \
  TypeKernels {                                                                        \
    TensorType::T, dequantize_##name##_scalar, dequantize_##name##_avx2,               \
        dot_##name##_scalar, dot_##name##_avx2, quantize_##name                        \
  }

constexpr std::array kKernels = {
    COHORT_KERNELS(F32, f32),   COHORT_KERNELS(F16, f16),   COHORT_KERNELS(BF16, bf16),
    COHORT_KERNELS(Q8_0, q8_0), COHORT_KERNELS(Q4_0, q4_0), COHORT_KERNELS(Q4_1, q4_1),
    COHORT_KERNELS(Q4_K, q4_k), COHORT_KERNELS(Q5_K, q5_k), COHORT_KERNELS(Q6_K, q6_k),
};

#undef COHORT_KERNELS

const TypeKernels* find(TensorType type) {
  for (const TypeKernels& k : kKernels) {
    if (k.type == type) return &k;
  }
  return nullptr;
}

const TypeKernels& require(TensorType type, const char* what) {
  const TypeKernels* k = find(type);
  if (k == nullptr) fail("quant: {} of tensor type {} is not supported", what, gguf::type_name(type));
  return *k;
}

// Blocks in n elements; n must be a non-negative multiple of the block size.
int64_t block_count(TensorType type, int64_t n) {
  const int64_t bs = gguf::traits(type).block_size;
  if (n < 0 || n % bs != 0) {
    fail("quant: {} elements of type {} is not a multiple of its block size {}", n,
         gguf::type_name(type), bs);
  }
  return n / bs;
}

// The AVX2 kernels also use F16C, which every CPU with AVX2 and FMA has
// (it arrived a generation earlier, on both Intel and AMD); not every
// compiler can query it by name, so it is not checked.
bool cpu_has_avx2() {
  __builtin_cpu_init();  // safe to repeat; needed if called before constructors ran
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// Function-local so that the CPU is probed on first use, not during static
// initialisation of some other translation unit.
std::atomic<Isa>& isa_state() {
  static std::atomic<Isa> isa{best_isa()};
  return isa;
}

}  // namespace

Isa best_isa() { return cpu_has_avx2() ? Isa::avx2 : Isa::scalar; }

Isa active_isa() { return isa_state().load(std::memory_order_relaxed); }

void set_isa(Isa isa) {
  if (isa == Isa::avx2 && !cpu_has_avx2()) fail("quant: this CPU lacks AVX2/FMA");
  isa_state().store(isa, std::memory_order_relaxed);
}

bool is_supported(TensorType type) { return find(type) != nullptr; }

bool can_quantize(TensorType type) { return find(type) != nullptr; }

void dequantize(TensorType type, const void* src, float* dst, int64_t n) {
  const TypeKernels& k = require(type, "dequantize");
  const int64_t n_blocks = block_count(type, n);
  if (n_blocks == 0) return;  // src and dst may be null then (empty vectors)
  (active_isa() == Isa::avx2 ? k.dequantize_avx2 : k.dequantize_scalar)(src, dst, n_blocks);
}

float dot(TensorType type, const void* row, const float* x, int64_t n) {
  const TypeKernels& k = require(type, "dot");
  const int64_t n_blocks = block_count(type, n);
  return (active_isa() == Isa::avx2 ? k.dot_avx2 : k.dot_scalar)(row, x, n_blocks);
}

void quantize(TensorType type, const float* src, void* dst, int64_t n) {
  const TypeKernels& k = require(type, "quantize");
  const int64_t n_blocks = block_count(type, n);
  if (n_blocks == 0) return;
  k.quantize(src, dst, n_blocks);
}

}  // namespace cohort::quant
