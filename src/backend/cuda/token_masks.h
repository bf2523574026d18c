// Structured output's token masks on the device: begin_step() copies a
// step's masks (backend::StepInput::token_masks) through pinned memory to
// a device buffer that best_logits() reads, so each logit row's best are
// chosen among the tokens its grammar allows. A step without masks copies
// nothing. The buffers grow to the largest step seen and are kept.
//
// Thread safety: one thread drives it.
#pragma once

#include <cstdint>
#include <span>

#include <cuda_runtime_api.h>

#include "backend/cuda/device_buffer.h"

namespace cohort::cuda {

class TokenMasks {
 public:
  TokenMasks();
  ~TokenMasks();
  TokenMasks(const TokenMasks&) = delete;
  TokenMasks& operator=(const TokenMasks&) = delete;

  // Copies `masks` ([n_rows, words], possibly empty) to the device on
  // `stream`; device() is then their copy, or null for an empty span.
  void upload(std::span<const uint32_t> masks, cudaStream_t stream);
  const uint32_t* device() const { return empty_ ? nullptr : device_.data(); }
  // The words of the last upload.
  size_t size() const { return size_; }

 private:
  uint32_t* staging_ = nullptr;  // pinned, device_.size() words
  DeviceBuffer<uint32_t> device_;
  cudaEvent_t copied_ = nullptr;  // the last upload has left the staging buffer
  size_t size_ = 0;
  bool empty_ = true;
};

}  // namespace cohort::cuda
