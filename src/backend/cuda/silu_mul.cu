// SiLU·mul, add and the bias add: grid-stride over 8-element (16-byte)
// vectors; SiLU·mul also quantizing its output where asked.
#include "backend/cuda/elementwise_kernels.h"

#include <algorithm>

#include "backend/cuda/bf16x8.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/quantize8.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;  // grid-stride beyond; untuned

struct SiluMul {
  __device__ float operator()(float g, float u) const { return g / (1.0f + __expf(-g)) * u; }
};
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <typename Op>
__global__ void __launch_bounds__(kThreads)
    binary_kernel(const uint4* a, const uint4* b, uint4* y, int64_t n8) {
  wait_then_launch_dependents();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n8; i += stride) {
    float fa[8], fb[8];
    unpack8(a[i], fa);
    unpack8(b[i], fb);
#pragma unroll
    for (int k = 0; k < 8; ++k) fa[k] = Op{}(fa[k], fb[k]);
    y[i] = pack8(fa);
  }
}

template <typename Op>
void launch_binary(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* y, int64_t n,
                   cudaStream_t stream) {
  const int64_t n8 = n / 8;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n8 + kThreads - 1) / kThreads, kMaxBlocks));
  launch_kernel(binary_kernel<Op>, blocks, kThreads, 0, stream, reinterpret_cast<const uint4*>(a),
                reinterpret_cast<const uint4*>(b), reinterpret_cast<uint4*>(y), n8);
}

// y = silu(gate) * up as binary_kernel<SiluMul>, also written quantized to
// q, ds (quantize8.cuh): one thread per vector and no grid-stride loop, so
// that the four threads of a 32-block are consecutive lanes.
__global__ void __launch_bounds__(kThreads)
    silu_mul_q8_kernel(const uint4* a, const uint4* b, uint4* y, int64_t n8, uint2* __restrict__ q,
                       float2* __restrict__ ds) {
  wait_then_launch_dependents();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const bool valid = i < n8;
  float fa[8] = {};
  if (valid) {
    float fb[8];
    unpack8(a[i], fa);
    unpack8(b[i], fb);
#pragma unroll
    for (int k = 0; k < 8; ++k) fa[k] = SiluMul{}(fa[k], fb[k]);
    const uint4 packed = pack8(fa);
    y[i] = packed;
    unpack8(packed, fa);
  }
  quantize8(fa, valid, i, q, ds);
}

// x [n_tok, n] += row [n] (F32), n8 = n / 8 vectors per row.
__global__ void __launch_bounds__(kThreads)
    add_row_kernel(uint4* x, const float4* row, int64_t n8, int64_t total8) {
  wait_then_launch_dependents();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total8; i += stride) {
    float v[8];
    unpack8(x[i], v);
    const int64_t c = i % n8;
    const float4 ra = row[2 * c], rb = row[2 * c + 1];
    const float r[8] = {ra.x, ra.y, ra.z, ra.w, rb.x, rb.y, rb.z, rb.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] += r[k];
    x[i] = pack8(v);
  }
}

}  // namespace

void launch_add_row(__nv_bfloat16* x, const float* row, int64_t n_tok, int64_t n, cudaStream_t stream) {
  const int64_t total8 = n_tok * n / 8;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((total8 + kThreads - 1) / kThreads, kMaxBlocks));
  launch_kernel(add_row_kernel, blocks, kThreads, 0, stream, reinterpret_cast<uint4*>(x),
                reinterpret_cast<const float4*>(row), n / 8, total8);
}

void launch_silu_mul(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* y, int64_t n, void* xq,
                     cudaStream_t stream) {
  if (xq == nullptr) return launch_binary<SiluMul>(gate, up, y, n, stream);
  const int64_t n8 = n / 8;
  auto* ds = reinterpret_cast<float2*>(static_cast<int8_t*>(xq) + n);
  launch_kernel(silu_mul_q8_kernel, static_cast<unsigned>((n8 + kThreads - 1) / kThreads), kThreads, 0, stream,
                reinterpret_cast<const uint4*>(gate), reinterpret_cast<const uint4*>(up), reinterpret_cast<uint4*>(y),
                n8, static_cast<uint2*>(xq), ds);
}

void launch_add(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* y, int64_t n,
                cudaStream_t stream) {
  launch_binary<Add>(a, b, y, n, stream);
}

}  // namespace cohort::cuda::kernels
