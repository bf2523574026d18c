// Context-shift row moves: a block per (move, layer). The key row is read
// into shared memory as F32, its pairs rotated by the move's delta, and
// stored in the cache's type; the value row and unrotated keys are copied
// as they are (scales too).
#include "backend/cuda/kv_move.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/rope.cuh"

namespace cohort::cuda {
namespace {

constexpr int kThreads = 128;

template <KvType kType>
__device__ float load(const uint8_t* array, size_t elements, size_t i) {
  if constexpr (kType == KvType::kF16) {
    return __half2float(reinterpret_cast<const __half*>(array)[i]);
  } else if constexpr (kType == KvType::kBf16) {
    return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(array)[i]);
  } else {
    const __half d = reinterpret_cast<const __half*>(array + elements)[i / 32];
    return static_cast<float>(reinterpret_cast<const int8_t*>(array)[i]) * __half2float(d);
  }
}

// Row src of an array into row dst, bytes as they are.
template <KvType kType>
__device__ void copy_row(uint8_t* array, size_t elements, size_t src, size_t dst, int row) {
  if constexpr (kType == KvType::kQ8_0) {
    for (int e = threadIdx.x; e < row; e += blockDim.x) array[dst + e] = array[src + e];
    auto* scales = reinterpret_cast<__half*>(array + elements);
    for (int b = threadIdx.x; b < row / 32; b += blockDim.x) scales[dst / 32 + b] = scales[src / 32 + b];
  } else {
    auto* a = reinterpret_cast<uint16_t*>(array);
    for (int e = threadIdx.x; e < row; e += blockDim.x) a[dst + e] = a[src + e];
  }
}

// k[row] (F32, shared) into row dst of a K array; Q8_0 as quant::quantize
// makes it: a warp per 32-element block, d = amax / 127, q = round(x / d).
template <KvType kType>
__device__ void store_row(const float* k, uint8_t* array, size_t elements, size_t dst, int row) {
  if constexpr (kType == KvType::kQ8_0) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    for (int b = warp; b < row / 32; b += n_warps) {
      const float x = k[32 * b + lane];
      float amax = fabsf(x);
      for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      reinterpret_cast<int8_t*>(array)[dst + 32 * b + lane] =
          static_cast<int8_t>(fminf(fmaxf(roundf(x * id), -127.0f), 127.0f));
      if (lane == 0) reinterpret_cast<__half*>(array + elements)[dst / 32 + b] = __float2half_rn(d);
    }
  } else {
    for (int e = threadIdx.x; e < row; e += blockDim.x) {
      if constexpr (kType == KvType::kF16) {
        reinterpret_cast<__half*>(array)[dst + e] = __float2half_rn(k[e]);
      } else {
        reinterpret_cast<__nv_bfloat16*>(array)[dst + e] = __float2bfloat16_rn(k[e]);
      }
    }
  }
}

template <KvType kType>
__global__ void __launch_bounds__(kThreads) move_rows_kernel(KvArrays c, kernels::RopeArgs rope,
                                                             const kv::RowMove* __restrict__ moves) {
  extern __shared__ float k[];  // [row]
  wait_then_launch_dependents();
  const kv::RowMove mv = moves[blockIdx.x];
  const int row = c.n_head_kv * c.head_dim;
  uint8_t* K = c.base + 2 * c.array_bytes * blockIdx.y;
  uint8_t* V = K + c.array_bytes;
  const size_t src = static_cast<size_t>(mv.src) * row, dst = static_cast<size_t>(mv.dst) * row;
  copy_row<kType>(V, c.elements, src, dst, row);
  if (mv.delta == 0) {
    copy_row<kType>(K, c.elements, src, dst, row);
    return;
  }
  for (int e = threadIdx.x; e < row; e += blockDim.x) k[e] = load<kType>(K, c.elements, src + e);
  __syncthreads();
  const int half = rope.n_rot / 2;
  for (int i = threadIdx.x; i < c.n_head_kv * half; i += blockDim.x) {
    const int pair = i % half;
    float* head = k + (i / half) * c.head_dim;
    float cs, sn;
    kernels::rope_cos_sin(rope, mv.delta, pair, cs, sn);
    const int i0 = kernels::rope_first(rope, pair), i1 = kernels::rope_second(rope, pair);
    const float x0 = head[i0], x1 = head[i1];
    head[i0] = fmaf(x0, cs, -(x1 * sn));
    head[i1] = fmaf(x0, sn, x1 * cs);
  }
  __syncthreads();
  store_row<kType>(k, K, c.elements, dst, row);
}

}  // namespace

void move_kv_rows(const KvArrays& cache, const kernels::RopeArgs& rope, const kv::RowMove* moves, int n,
                  cudaStream_t stream) {
  if (n <= 0) return;
  const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(cache.n_layer));
  const size_t smem = static_cast<size_t>(cache.n_head_kv) * cache.head_dim * sizeof(float);
  switch (cache.type) {
    case KvType::kF16: launch_kernel(move_rows_kernel<KvType::kF16>, grid, kThreads, smem, stream, cache, rope, moves); break;
    case KvType::kBf16: launch_kernel(move_rows_kernel<KvType::kBf16>, grid, kThreads, smem, stream, cache, rope, moves); break;
    case KvType::kQ8_0: launch_kernel(move_rows_kernel<KvType::kQ8_0>, grid, kThreads, smem, stream, cache, rope, moves); break;
  }
}

}  // namespace cohort::cuda
