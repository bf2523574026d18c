// The int8 matvec kernels of Q5_K weights.
#include "backend/cuda/matvec_q8_impl.cuh"

namespace cohort::cuda::kernels {

void matvec_q8_q5_k(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, bool global_x,
        int n_tok, int64_t n_in, cudaStream_t stream) {
  matvec_q8::launch<matvec_q8::Q5_K>(parts, q, ds, f32_out, global_x, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels
