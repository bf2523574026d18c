// The int8 tensor-core matmul of Q6_K weights.
#include "backend/cuda/mmq_impl.cuh"

namespace cohort::cuda::kernels {

void mmq_q6_k(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, int n_tok, int64_t n_in,
            cudaStream_t stream) {
  // Activations staged (mmq.h) at one tile only:
  // faster there in cuda_kernel_bench on an H200, 2026-12-04.
  mmq::launch<mmq::Q6_K, 0b0001u>(parts, q, ds, f32_out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels
