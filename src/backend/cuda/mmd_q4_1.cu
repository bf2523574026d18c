// The BF16 tensor-core matmul of dequantized Q4_1 weights.
#include "backend/cuda/mmd_impl.cuh"

namespace cohort::cuda::kernels {

void mmd_q4_1(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in, int k_split,
            cudaStream_t stream) {
  mmd::launch<mmq::Q4_1>(parts, x, f32_out, n_tok, n_in, k_split, stream);
}

int mmd_q4_1_clusters(int n_tok, int k_split) { return mmd::resident_clusters<mmq::Q4_1>(n_tok, k_split); }

}  // namespace cohort::cuda::kernels
