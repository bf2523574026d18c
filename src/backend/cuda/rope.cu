// Rotary position embedding, one thread per rotated pair of one head of one
// token (grid: x = pairs of all heads, y = tokens). The angle is worked out
// per thread in F32 as backend/cpu rope() does, with accurate sincosf (not
// __sinf, which is wrong by far more than BF16 at large positions).
#include "backend/cuda/elementwise_kernels.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 128;  // untuned; rope is a few microseconds at most

__device__ float yarn_ramp(float low, float high, int pair) {
  const float y = (static_cast<float>(pair) - low) / fmaxf(0.001f, high - low);
  return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

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

  // pos * base^(-2 pair / n_rot), then the CPU's scaling steps in its order.
  const float theta = static_cast<float>(positions[t]) *
                      exp2f(-2.0f * static_cast<float>(pair) / static_cast<float>(a.n_rot) * a.log2_base);
  const float extrap = a.freq_factors ? theta / a.freq_factors[pair] : theta;
  float angle = a.freq_scale * extrap;
  float mscale = a.attn_factor;
  if (a.ext_factor != 0.0f) {
    const float mix = yarn_ramp(a.corr_low, a.corr_high, pair) * a.ext_factor;
    angle = angle * (1.0f - mix) + extrap * mix;
    mscale *= 1.0f + 0.1f * logf(1.0f / a.freq_scale);
  }
  float s, c;
  sincosf(angle, &s, &c);
  c *= mscale;
  s *= mscale;

  __nv_bfloat16* v = x + t * token_stride + static_cast<int64_t>(head) * head_dim;
  const int i0 = a.neox ? pair : 2 * pair;
  const int i1 = a.neox ? pair + half : 2 * pair + 1;
  const float x0 = __bfloat162float(v[i0]), x1 = __bfloat162float(v[i1]);
  v[i0] = __float2bfloat16_rn(fmaf(x0, c, -(x1 * s)));
  v[i1] = __float2bfloat16_rn(fmaf(x0, s, x1 * c));
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
