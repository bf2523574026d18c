// The matvec kernels of F32, F16 and BF16 weights (one file per type family,
// so that the instantiations build in parallel).
#include "backend/cuda/matvec_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_f32(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
               int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::F32>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}
void matvec_f16(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
               int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::F16>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}
void matvec_bf16(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::BF16>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
