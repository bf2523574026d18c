// Rotary position embedding, one thread per rotated pair of one head of one
// token (grid: x = pairs of all heads, y = tokens; the pair's arithmetic in
// rope.cuh).
#include "backend/cuda/elementwise_kernels.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/rope.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 128;  // untuned; rope is a few microseconds at most

// x: token t at x + t * token_stride, [n_heads, head_dim].
__global__ void __launch_bounds__(kThreads)
    rope_kernel(RopeArgs a, __nv_bfloat16* __restrict__ x, int64_t token_stride,
                const int32_t* __restrict__ positions, int n_heads, int head_dim) {
  wait_then_launch_dependents();
  const int half = a.n_rot / 2;
  const int idx = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  if (idx >= n_heads * half) return;
  const int64_t t = blockIdx.y;
  const int head = idx / half, pair = idx % half;
  rope_pair(a, positions[t], pair, x + t * token_stride + static_cast<int64_t>(head) * head_dim);
}

}  // namespace

void launch_rope(const RopeArgs& args, __nv_bfloat16* x, int64_t token_stride, const int32_t* positions,
                 int64_t n_tok, int64_t n_heads, int64_t head_dim, cudaStream_t stream) {
  const int64_t threads = n_heads * (args.n_rot / 2);
  const dim3 grid(static_cast<unsigned>((threads + kThreads - 1) / kThreads), static_cast<unsigned>(n_tok));
  launch_kernel(rope_kernel, grid, kThreads, 0, stream, args, x, token_stride, positions, static_cast<int>(n_heads),
                static_cast<int>(head_dim));
}

}  // namespace cohort::cuda::kernels
