// The int8 matvec kernels of Q4_0 weights.
#include "backend/cuda/matvec_q8_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_q8_q4_0(const void* w, const int8_t* q, const float2* ds, void* y, bool f32_out, int n_tok,
                  int64_t n_in, int64_t n_out, cudaStream_t stream) {
  matvec_q8::launch<matvec_q8::Q4_0>(w, q, ds, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
