// The int8 tensor-core matmul of Q5_K weights.
#include "backend/cuda/mmq_impl.cuh"

namespace cohort::cuda::kernels {

void mmq_q5_k(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, int n_tok, int64_t n_in,
            cudaStream_t stream) {
  mmq::launch<mmq::Q5_K>(parts, q, ds, f32_out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels
