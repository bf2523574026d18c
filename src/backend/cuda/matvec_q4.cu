// The matvec kernels of Q4_0 and Q4_1 weights.
#include "backend/cuda/matvec_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_q4_0(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::Q4_0>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}
void matvec_q4_1(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::Q4_1>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
