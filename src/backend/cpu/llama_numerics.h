// The F32 steps of llama.cpp's CPU kernels, reproduced in their order so
// that cohort's fast path rounds every activation as llama.cpp does:
// lane-interleaved sums reduced as a tree, fused multiply-adds, and the
// polynomial exp of its vector softmax and SiLU. Each function has a
// portable build and one compiled for AVX2/FMA (the same source, see
// llama_numerics_impl.h); both return the same bits, the second faster.
#pragma once

#include <cstdint>

namespace cohort::cpu {

// Sums of many terms run in kSumLanes interleaved lanes (term i in lane
// i % kSumLanes), reduced by sum_lanes(): the order of a 16-wide vector
// accumulator and its horizontal add. kWideLanes: four such accumulators
// (term i in lane i % 64), first added as (0 + 2) + (1 + 3).
inline constexpr int kSumLanes = 16;
inline constexpr int kWideLanes = 4 * kSumLanes;

float sum_lanes(const float* lanes);  // lanes[kSumLanes], tree order

// exp(x) by the polynomial of llama.cpp's vector softmax and SiLU (the expf
// of Arm's optimized routines: below 1.5 ulp of error).
float exp_poly(float x);

// sum_i x_i * y_i in kWideLanes lanes (llama.cpp's F32 vector dot product);
// the n % 64 trailing elements one by one after the reduction.
float dot_f32_wide(const float* x, const float* y, int64_t n);

// lane[d] += p * v[d] for d < n, one fused multiply-add each.
void axpy_lane(float* lane, float p, const float* v, int64_t n);

// out[d] = the reduction over n_lanes (kSumLanes or kWideLanes) lane rows of
// lanes [n_lanes, n] at column d.
void reduce_lanes(const float* lanes, int n_lanes, int64_t n, float* out);

// x [n] = softmax(x) in place: exp_poly(x - max) in groups of kSumLanes
// (lane sums in F32) added in F64, then scaled by the F32 inverse.
void softmax_llama(float* x, int64_t n);

// y [n] = silu(gate) * up with exp_poly. y may alias gate.
void silu_mul_llama(const float* gate, const float* up, float* y, int64_t n);

}  // namespace cohort::cpu
