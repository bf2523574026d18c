// One rotated pair of rotary position embedding, the arithmetic of
// backend/cpu rope() (elementwise.h): shared by rope.cu and rope_store.cu,
// so that both kernels give the same bits.
#pragma once

#include <cuda_bf16.h>

#include "backend/cuda/elementwise_kernels.h"

namespace cohort::cuda::kernels {

__device__ __forceinline__ float yarn_ramp(float low, float high, int pair) {
  const float y = (static_cast<float>(pair) - low) / fmaxf(0.001f, high - low);
  return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

// The cosine and sine of pair `pair` at `position`, scaled by the YaRN
// magnitude. The angle in F32 as the CPU's, with accurate sincosf (not
// __sinf, which is wrong by far more than BF16 at large positions).
__device__ __forceinline__ void rope_cos_sin(const RopeArgs& a, int32_t position, int pair, float& c, float& s) {
  // pos * base^(-2 pair / n_rot), then the CPU's scaling steps in its order.
  const float theta = static_cast<float>(position) *
                      exp2f(-2.0f * static_cast<float>(pair) / static_cast<float>(a.n_rot) * a.log2_base);
  const float extrap = a.freq_factors ? theta / a.freq_factors[pair] : theta;
  float angle = a.freq_scale * extrap;
  float mscale = a.attn_factor;
  if (a.ext_factor != 0.0f) {
    const float mix = yarn_ramp(a.corr_low, a.corr_high, pair) * a.ext_factor;
    angle = angle * (1.0f - mix) + extrap * mix;
    mscale *= 1.0f + 0.1f * logf(1.0f / a.freq_scale);
  }
  sincosf(angle, &s, &c);
  c *= mscale;
  s *= mscale;
}

// The two elements pair `pair` of a head rotates.
__device__ __forceinline__ int rope_first(const RopeArgs& a, int pair) { return a.neox ? pair : 2 * pair; }
__device__ __forceinline__ int rope_second(const RopeArgs& a, int pair) {
  return a.neox ? pair + a.n_rot / 2 : 2 * pair + 1;
}

// Rotates pair `pair` of one head (head_dim BF16 at `head`) at `position`,
// in place.
__device__ __forceinline__ void rope_pair(const RopeArgs& a, int32_t position, int pair, __nv_bfloat16* head) {
  float s, c;
  rope_cos_sin(a, position, pair, c, s);
  const int i0 = rope_first(a, pair), i1 = rope_second(a, pair);
  const float x0 = __bfloat162float(head[i0]), x1 = __bfloat162float(head[i1]);
  head[i0] = __float2bfloat16_rn(fmaf(x0, c, -(x1 * s)));
  head[i1] = __float2bfloat16_rn(fmaf(x0, s, x1 * c));
}

}  // namespace cohort::cuda::kernels
