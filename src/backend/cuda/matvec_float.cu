// The matvec kernels of F32, F16 and BF16 weights (one file per type family,
// so that the instantiations build in parallel).
#include "backend/cuda/matvec_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_f32(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
        cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::F32>(parts, x, f32_out, n_tok, n_in, stream);
}
void matvec_f16(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
        cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::F16>(parts, x, f32_out, n_tok, n_in, stream);
}
void matvec_bf16(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
        cudaStream_t stream) {
  matvec_impl::launch<matvec_decode::BF16>(parts, x, f32_out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels
