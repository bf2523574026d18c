#include "backend/cuda/best_logits.h"

#include "common/error.h"

namespace cohort::cuda {

void best_logits(const float* logits, int64_t n_rows, int64_t n, int k, void* scratch, BestLogit* out,
                 cudaStream_t stream, const uint32_t* masks) {
  if (k < 1 || k > kMaxBestK) fail("cuda: best_logits k = {} outside [1, {}]", k, kMaxBestK);
  if (k > n || n >= (int64_t{1} << 31)) fail("cuda: best_logits of {} logits a row, k = {}", n, k);
  if (n_rows > 65535) fail("cuda: best_logits of {} rows (at most 65,535)", n_rows);
  if (n_rows == 0) return;
  kernels::launch_best_logits(logits, n_rows, n, k, scratch, out, stream, masks);
}

}  // namespace cohort::cuda
