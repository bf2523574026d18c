#include "backend/cuda/logits_copy.h"

#include <atomic>

#include "backend/cuda/cuda_check.h"

namespace cohort::cuda {
namespace {
std::atomic<int64_t> threshold{kChunkedLogitsBytes};
}  // namespace

int64_t chunked_logits_bytes() { return threshold; }
void set_chunked_logits_bytes(int64_t bytes) { threshold = bytes; }

int64_t logits_chunk_rows(int64_t n_out) {
  const int64_t per = (n_out + kLogitsChunks - 1) / kLogitsChunks;
  return (per + 255) / 256 * 256;
}

LogitsCopy::~LogitsCopy() {
  if (copy_ != nullptr) {
    (void)cudaStreamSynchronize(copy_);
    (void)cudaStreamDestroy(copy_);
  }
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
}

void LogitsCopy::after(cudaStream_t stream, const float* src, int64_t n_rows, int64_t cols, float* dst,
                       int64_t dst_pitch) {
  if (copy_ == nullptr) CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
  cudaEvent_t done = events_[used_++];
  CUDA_CHECK(cudaEventRecord(done, stream));
  CUDA_CHECK(cudaStreamWaitEvent(copy_, done, 0));
  const auto width = static_cast<size_t>(cols) * sizeof(float);
  CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_pitch) * sizeof(float), src, width, width,
                               static_cast<size_t>(n_rows), cudaMemcpyDeviceToHost, copy_));
}

void LogitsCopy::wait() {
  if (copy_ != nullptr) CUDA_CHECK(cudaStreamSynchronize(copy_));
  used_ = 0;
}

}  // namespace cohort::cuda
