// Owned device memory of n elements of T (cudaMalloc / cudaFree), with
// blocking copies to and from the host for tests and loading.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_check.h"

namespace cohort::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), n_(std::exchange(other.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(n_, other.n_);
    return *this;
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) (void)cudaFree(data_);  // nothing sensible to do on failure here
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return n_; }

  void upload(std::span<const T> host) {
    if (host.size() != n_) throw std::invalid_argument("DeviceBuffer::upload: size differs from the buffer's");
    if (n_ > 0) CUDA_CHECK(cudaMemcpy(data_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace cohort::cuda
