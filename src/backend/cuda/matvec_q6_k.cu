// The matvec kernels of Q6_K weights.
#include "backend/cuda/matvec_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_q6_k(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::Q6_K>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
