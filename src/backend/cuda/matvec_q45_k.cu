// The matvec kernels of Q4_K and Q5_K weights.
#include "backend/cuda/matvec_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_q4_k(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
        cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::Q4_K>(parts, x, f32_out, n_tok, n_in, stream);
}
void matvec_q5_k(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
        cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::Q5_K>(parts, x, f32_out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels
