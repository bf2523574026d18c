// The portable build of llama_numerics_impl.h and the dispatch between it
// and the AVX2/FMA build, following quant's choice of ISA.
#define COHORT_NUMERICS_NS portable
#include "backend/cpu/llama_numerics_impl.h"

#include "quant/quant.h"

namespace cohort::cpu {
namespace avx2 {
// Defined by llama_numerics_avx2.cpp (the same inline bodies, other flags);
// declared here because the impl header only defines them inline there.
float exp_poly_entry(float x);
float dot_f32_wide_entry(const float* x, const float* y, int64_t n);
void axpy_lane_entry(float* lane, float p, const float* v, int64_t n);
void reduce_lanes_entry(const float* lanes, int n_lanes, int64_t n, float* out);
void softmax_llama_entry(float* x, int64_t n);
void silu_mul_llama_entry(const float* gate, const float* up, float* y, int64_t n);
}  // namespace avx2

namespace {
bool use_avx2() { return quant::active_isa() == quant::Isa::avx2; }
}  // namespace

float sum_lanes(const float* lanes) { return portable::sum_lanes(lanes); }

float exp_poly(float x) { return use_avx2() ? avx2::exp_poly_entry(x) : portable::exp_poly(x); }

float dot_f32_wide(const float* x, const float* y, int64_t n) {
  return use_avx2() ? avx2::dot_f32_wide_entry(x, y, n) : portable::dot_f32_wide(x, y, n);
}

void axpy_lane(float* lane, float p, const float* v, int64_t n) {
  if (use_avx2()) {
    avx2::axpy_lane_entry(lane, p, v, n);
  } else {
    portable::axpy_lane(lane, p, v, n);
  }
}

void reduce_lanes(const float* lanes, int n_lanes, int64_t n, float* out) {
  if (use_avx2()) {
    avx2::reduce_lanes_entry(lanes, n_lanes, n, out);
  } else {
    portable::reduce_lanes(lanes, n_lanes, n, out);
  }
}

void softmax_llama(float* x, int64_t n) {
  if (use_avx2()) {
    avx2::softmax_llama_entry(x, n);
  } else {
    portable::softmax_llama(x, n);
  }
}

void silu_mul_llama(const float* gate, const float* up, float* y, int64_t n) {
  if (use_avx2()) {
    avx2::silu_mul_llama_entry(gate, up, y, n);
  } else {
    portable::silu_mul_llama(gate, up, y, n);
  }
}

}  // namespace cohort::cpu
