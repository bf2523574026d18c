// The activation quantizer of matvec_q8.h (quantize8.cuh): one thread per
// 8 BF16 values (one 16-byte load, one 8-byte store).
#include <cstdint>

#include <cuda_bf16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/bf16x8.cuh"
#include "backend/cuda/matvec_q8_decode.cuh"
#include "backend/cuda/matvec_q8_kernels.h"
#include "backend/cuda/quantize8.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 256;

// x as n_elems / 8 groups; q and ds are flat too: row t's block b is block
// t * nb + b of the whole batch, the index of ds.
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const uint4* __restrict__ x, int64_t n_groups, uint2* __restrict__ q,
                    float2* __restrict__ ds) {
  wait_then_launch_dependents();
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const bool valid = g < n_groups;  // the others only take part in the shuffles
  float v[kQuantPerThread];
  unpack8(valid ? __ldg(x + g) : make_uint4(0, 0, 0, 0), v);
  quantize8(v, valid, g, q, ds);
}

}  // namespace

void quantize_activations_q8(const __nv_bfloat16* x, int64_t n_tok, int64_t n_in, int8_t* q, float2* ds,
                             cudaStream_t stream) {
  const int64_t n_groups = n_tok * n_in / kQuantPerThread;
  const auto blocks = static_cast<unsigned>((n_groups + kThreads - 1) / kThreads);
  launch_kernel(quantize_kernel, blocks, kThreads, 0, stream, reinterpret_cast<const uint4*>(x), n_groups,
                reinterpret_cast<uint2*>(q), ds);
}

}  // namespace cohort::cuda::kernels
