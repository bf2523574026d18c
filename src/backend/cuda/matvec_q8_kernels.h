// The launchers of matvec_q8_*.cu; the checks and error messages are in
// matvec_q8.cpp (nvcc does not compile fmt).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <vector_types.h>

#include "backend/cuda/matvec_parts.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda::kernels {

// y = W · x of every part (matvec_parts.h) for 1 <= n_tok <= 8 tokens: q
// [n_tok, n_in] int8 and ds [n_tok, n_in / 32] {d, s} (the two parts of
// matvec_q8.h's xq, already offset to the first token). y F32 when
// f32_out, else BF16.
// global_x: the kernel that reads x from device memory, even where x would
// fit in shared memory (matvec_q8_impl.cuh; for tests and benchmarks).
using MatvecQ8Launcher = void (*)(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out,
                                  bool global_x, int n_tok, int64_t n_in, cudaStream_t stream);

inline constexpr int kMatvecQ8MaxTokens = 8;

// What the kernels that keep x in shared memory may use of the current
// device, and its multiprocessors (mmd's cluster split): read once per device.
struct ResidentLimits {
  int device = 0;
  int sm_count = 0;
  size_t smem_per_sm = 0;     // shared memory of a multiprocessor
  size_t smem_per_block = 0;  // the opt-in limit of one block
};
const ResidentLimits& resident_limits();

// The launcher of `type`, or nullptr.
MatvecQ8Launcher matvec_q8_launcher(gguf::TensorType type);

void matvec_q8_q8_0(const MatvecParts&, const int8_t*, const float2*, bool, bool, int, int64_t, cudaStream_t);
void matvec_q8_q4_0(const MatvecParts&, const int8_t*, const float2*, bool, bool, int, int64_t, cudaStream_t);
void matvec_q8_q4_1(const MatvecParts&, const int8_t*, const float2*, bool, bool, int, int64_t, cudaStream_t);
void matvec_q8_q4_k(const MatvecParts&, const int8_t*, const float2*, bool, bool, int, int64_t, cudaStream_t);
void matvec_q8_q5_k(const MatvecParts&, const int8_t*, const float2*, bool, bool, int, int64_t, cudaStream_t);
void matvec_q8_q6_k(const MatvecParts&, const int8_t*, const float2*, bool, bool, int, int64_t, cudaStream_t);

// Enqueues the activation quantizer: x [n_tok, n_in] -> q, ds.
void quantize_activations_q8(const __nv_bfloat16* x, int64_t n_tok, int64_t n_in, int8_t* q,
                             float2* ds, cudaStream_t stream);

}  // namespace cohort::cuda::kernels
