// The int8 tensor-core matmul of Q4_0 weights.
#include "backend/cuda/mmq_impl.cuh"

namespace cohort::cuda::kernels {

void mmq_q4_0(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, int n_tok, int64_t n_in,
            cudaStream_t stream) {
  // Activations staged (mmq.h) at all four tile counts:
  // faster there in cuda_kernel_bench on an H200, 2026-12-04.
  mmq::launch<mmq::Q4_0, 0b1111u>(parts, q, ds, f32_out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels
