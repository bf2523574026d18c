// llama_numerics_impl.h compiled for AVX2/FMA (see src/CMakeLists.txt).
#define COHORT_NUMERICS_NS avx2
#include "backend/cpu/llama_numerics_impl.h"

namespace cohort::cpu::avx2 {

float exp_poly_entry(float x) { return exp_poly(x); }
float dot_f32_wide_entry(const float* x, const float* y, int64_t n) { return dot_f32_wide(x, y, n); }
void axpy_lane_entry(float* lane, float p, const float* v, int64_t n) { axpy_lane(lane, p, v, n); }
void reduce_lanes_entry(const float* lanes, int n_lanes, int64_t n, float* out) {
  reduce_lanes(lanes, n_lanes, n, out);
}
void softmax_llama_entry(float* x, int64_t n) { softmax_llama(x, n); }
void silu_mul_llama_entry(const float* gate, const float* up, float* y, int64_t n) {
  silu_mul_llama(gate, up, y, n);
}

}  // namespace cohort::cpu::avx2
