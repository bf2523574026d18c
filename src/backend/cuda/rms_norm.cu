// RMSNorm, one thread block per row: each thread takes 8 columns at a time
// (16-byte loads), squares are summed in F32 per thread, then across the
// warp (shuffles) and the block (shared memory). A second pass over the row
// (from L1/L2: a row is at most a few tens of KB) scales and writes, and
// quantizes what it writes where the caller asks (quantize8.cuh).
#include "backend/cuda/elementwise_kernels.h"

#include "backend/cuda/bf16x8.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/quantize8.cuh"

namespace cohort::cuda::kernels {
namespace {

// 256 threads x 8 columns covers a 2048-wide row in one step; untuned.
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ float block_sum(float v) {
  __shared__ float partial[kWarps];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += partial[w];  // same order in every thread
  return total;
}

// x, residual, y [n_tok, n]; n8 = n / 8 vectors per row. kQuant: y is also
// written quantized to q, ds (quantize8.cuh; the activations of a
// matvec_q8 that reads y), n a multiple of 32.
template <bool kQuant>
__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(__nv_bfloat16* x, const __nv_bfloat16* __restrict__ residual,
                    const float* __restrict__ weight, int64_t n8, float eps, __nv_bfloat16* y,
                    uint2* __restrict__ q, float2* __restrict__ ds) {
  // x and y are not __restrict__: y == x is an in-place norm (each thread
  // rewrites only the vectors it read).
  wait_then_launch_dependents();
  const int64_t row = blockIdx.x;
  auto* xr = reinterpret_cast<uint4*>(x) + row * n8;
  const auto* rr = residual ? reinterpret_cast<const uint4*>(residual) + row * n8 : nullptr;
  auto* yr = reinterpret_cast<uint4*>(y) + row * n8;
  const auto* w4 = reinterpret_cast<const float4*>(weight);

  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n8; i += kThreads) {
    float v[8];
    unpack8(xr[i], v);
    if (rr != nullptr) {
      float r[8];
      unpack8(rr[i], r);
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] += r[k];
      const uint4 packed = pack8(v);
      xr[i] = packed;
      unpack8(packed, v);  // the norm is of the stored (rounded) sum
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) sum = fmaf(v[k], v[k], sum);
  }
  const float scale = rsqrtf(block_sum(sum) / static_cast<float>(n8 * 8) + eps);
  // With kQuant every thread runs every round (the quantizer's shuffles);
  // a 32-block's four vectors are in one round, as n8 is a multiple of 4.
  const int64_t end = kQuant ? (n8 + kThreads - 1) / kThreads * kThreads : n8;
  for (int64_t i = threadIdx.x; i < end; i += kThreads) {
    const bool valid = i < n8;
    float v[8] = {};
    if (valid) {
      unpack8(xr[i], v);  // this thread's own write above, if any
      const float4 wa = __ldg(w4 + 2 * i), wb = __ldg(w4 + 2 * i + 1);
      const float w[8] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = v[k] * scale * w[k];
      const uint4 packed = pack8(v);
      yr[i] = packed;
      if (kQuant) unpack8(packed, v);  // quantize the stored (rounded) values
    }
    if (kQuant) quantize8(v, valid, row * n8 + i, q, ds);
  }
}

}  // namespace

void launch_rms_norm(__nv_bfloat16* x, const __nv_bfloat16* residual, const float* weight, int64_t n_tok,
                     int64_t n, float eps, __nv_bfloat16* y, void* xq, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(n_tok);
  if (xq == nullptr) {
    launch_kernel(rms_norm_kernel<false>, blocks, kThreads, 0, stream, x, residual, weight, n / 8, eps, y,
                  static_cast<uint2*>(nullptr), static_cast<float2*>(nullptr));
  } else {
    auto* q = static_cast<uint2*>(xq);
    auto* ds = reinterpret_cast<float2*>(static_cast<int8_t*>(xq) + n_tok * n);
    launch_kernel(rms_norm_kernel<true>, blocks, kThreads, 0, stream, x, residual, weight, n / 8, eps, y, q, ds);
  }
}

}  // namespace cohort::cuda::kernels
