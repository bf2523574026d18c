#include "backend/cuda/staged_communicator.h"

#include "backend/cuda/cuda_check.h"
#include "common/error.h"

namespace cohort::cuda {

StagedCommunicator::StagedCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream, size_t max_elems)
    : host_(group, rank), stream_(stream), capacity_(max_elems * sizeof(float)) {
  if (cudaMallocHost(&staging_, capacity_) != cudaSuccess) {
    fail("cuda: cannot pin {} MiB of host memory for the rank's reductions", capacity_ >> 20);
  }
}

StagedCommunicator::~StagedCommunicator() {
  if (staging_ != nullptr) (void)cudaFreeHost(staging_);
}

void StagedCommunicator::reduce(comm::Buffer x, comm::Queue) {
  const size_t bytes = static_cast<size_t>(x.n) * comm::dtype_bytes(x.type);
  if (bytes > capacity_) {
    fail("cuda: a reduction of {} {} elements exceeds the rank's staging buffer of {} bytes", x.n,
         comm::dtype_name(x.type), capacity_);
  }
  CUDA_CHECK(cudaMemcpyAsync(staging_, x.data, bytes, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  host_.all_reduce_sum(comm::Buffer{staging_, x.type, x.n}, comm::kHostQueue);
  // The next call's first barrier is passed only once every rank has waited
  // for its stream again, so no peer writes this buffer before the copy ran.
  CUDA_CHECK(cudaMemcpyAsync(x.data, staging_, bytes, cudaMemcpyHostToDevice, stream_));
}

void StagedCommunicator::gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts,
                                int64_t n_rows, comm::Queue queue) {
  host_.all_gather(send, recv, counts, n_rows, queue);
}

}  // namespace cohort::cuda
