// The matvec kernels of Q4_0 and Q4_1 weights.
#include "backend/cuda/matvec_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_q4_0(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
        cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::Q4_0>(parts, x, f32_out, n_tok, n_in, stream);
}
void matvec_q4_1(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
        cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::Q4_1>(parts, x, f32_out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels
