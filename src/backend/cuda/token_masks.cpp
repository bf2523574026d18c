#include "backend/cuda/token_masks.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"

namespace cohort::cuda {

TokenMasks::TokenMasks() { CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming)); }

TokenMasks::~TokenMasks() {
  if (copied_ != nullptr) (void)cudaEventDestroy(copied_);
  if (staging_ != nullptr) (void)cudaFreeHost(staging_);
}

void TokenMasks::upload(std::span<const uint32_t> masks, cudaStream_t stream) {
  size_ = masks.size();
  empty_ = masks.empty();
  if (empty_) return;
  CUDA_CHECK(cudaEventSynchronize(copied_));  // the previous upload has read the staging buffer
  if (masks.size() > device_.size()) {
    if (staging_ != nullptr) CUDA_CHECK(cudaFreeHost(staging_));
    staging_ = nullptr;
    CUDA_CHECK(cudaStreamSynchronize(stream));  // no kernel still reads the old buffer
    device_ = DeviceBuffer<uint32_t>(masks.size());
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&staging_), masks.size() * sizeof(uint32_t)));
  }
  std::copy(masks.begin(), masks.end(), staging_);
  CUDA_CHECK(cudaMemcpyAsync(device_.data(), staging_, masks.size() * sizeof(uint32_t), cudaMemcpyHostToDevice,
                             stream));
  CUDA_CHECK(cudaEventRecord(copied_, stream));
}

}  // namespace cohort::cuda
