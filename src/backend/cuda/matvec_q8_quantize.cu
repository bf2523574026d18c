// The activation quantizer of matvec_q8.h: four threads per block of 32
// BF16 values, 8 each (one 16-byte load, one 8-byte store); max|x| and the
// sum of q are exchanged by two shuffles each.
#include <cstdint>

#include <cuda_bf16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/matvec_q8_decode.cuh"
#include "backend/cuda/matvec_q8_kernels.h"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;
constexpr int kThreadsPerBlock32 = matvec_q8::kQBlock / kPerThread;  // 4

// x as n_elems / 8 groups; q and ds are flat too: row t's block b is block
// t * nb + b of the whole batch, the index of ds.
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const uint4* __restrict__ x, int64_t n_groups, uint2* __restrict__ q,
                    float2* __restrict__ ds) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const bool valid = g < n_groups;  // the others only take part in the shuffles
  const uint4 raw = valid ? __ldg(x + g) : make_uint4(0, 0, 0, 0);
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  float v[kPerThread];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __uint_as_float(words[i] << 16);  // BF16 -> F32: the high half of the F32 bits
    v[2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
    amax = fmaxf(amax, fmaxf(fabsf(v[2 * i]), fabsf(v[2 * i + 1])));
  }
#pragma unroll
  for (int o = 1; o < kThreadsPerBlock32; o *= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
  const float inv = matvec_q8::block_inv(amax);
  uint32_t packed[2] = {0, 0};
  int sum = 0;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int qi = matvec_q8::quantize_one(v[i], inv);
    sum += qi;
    packed[i / 4] |= (static_cast<uint32_t>(qi) & 0xFFu) << (8 * (i % 4));
  }
#pragma unroll
  for (int o = 1; o < kThreadsPerBlock32; o *= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
  if (!valid) return;
  q[g] = make_uint2(packed[0], packed[1]);
  if (g % kThreadsPerBlock32 == 0) ds[g / kThreadsPerBlock32] = matvec_q8::block_ds(amax, sum);
}

}  // namespace

void quantize_activations_q8(const __nv_bfloat16* x, int64_t n_tok, int64_t n_in, int8_t* q, float2* ds,
                             cudaStream_t stream) {
  const int64_t n_groups = n_tok * n_in / kPerThread;
  const auto blocks = static_cast<unsigned>((n_groups + kThreads - 1) / kThreads);
  quantize_kernel<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(x), n_groups,
                                                   reinterpret_cast<uint2*>(q), ds);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace cohort::cuda::kernels
