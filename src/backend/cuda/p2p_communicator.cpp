#include "backend/cuda/p2p_communicator.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/group_state.h"
#include "backend/cuda/rank_fence.h"
#include "comm/p2p_protocol.h"
#include "common/error.h"

namespace cohort::cuda {

// The buffers of every rank of one group, filled in as the ranks are made.
struct P2pCommunicator::Registry {
  std::mutex mu;
  std::vector<__nv_bfloat16*> recv;
  std::vector<uint32_t*> flags;
  std::vector<int> device;
  std::vector<int64_t> capacity;  // each rank's; they differ where -ts splits unevenly
};

P2pCommunicator::P2pCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream, int64_t capacity)
    : host_(group, rank), stream_(stream), capacity_(capacity) {
  const int n = group.n_ranks();
  if (n > kP2pMaxRanks) fail("-ar p2p: at most {} ranks, got {}", kP2pMaxRanks, n);
  CUDA_CHECK(cudaGetDevice(&device_));
  recv_ = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(2 * n * capacity));
  flags_ = DeviceBuffer<uint32_t>(static_cast<size_t>(2 * n * kP2pMaxBlocks));
  counters_ = DeviceBuffer<uint32_t>(kP2pCounters);
  CUDA_CHECK(cudaMemset(flags_.data(), 0, flags_.size() * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemset(counters_.data(), 0, counters_.size() * sizeof(uint32_t)));
  registry_ = group_state<Registry>(group, [n] {
    auto r = std::make_shared<Registry>();
    r->recv.assign(static_cast<size_t>(n), nullptr);
    r->flags.assign(static_cast<size_t>(n), nullptr);
    r->device.assign(static_cast<size_t>(n), -1);
    r->capacity.assign(static_cast<size_t>(n), 0);
    return r;
  });
  std::lock_guard lock(registry_->mu);
  registry_->recv[static_cast<size_t>(rank)] = recv_.data();
  registry_->flags[static_cast<size_t>(rank)] = flags_.data();
  registry_->device[static_cast<size_t>(rank)] = device_;
  registry_->capacity[static_cast<size_t>(rank)] = capacity_;
}

P2pCommunicator::~P2pCommunicator() {
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
}

void P2pCommunicator::connect() {
  float arrived = 0.0f;
  host_.all_reduce_sum(&arrived, 1);  // every rank has registered its buffers
  std::lock_guard lock(registry_->mu);
  const int n = world_size();
  peers_.n_ranks = n;
  // A rank writes into its peers' buffers at offsets of the same layout, so
  // every rank uses the smallest capacity (each buffer holds at least that).
  capacity_ = *std::min_element(registry_->capacity.begin(), registry_->capacity.end());
  peers_.capacity = capacity_;
  int sharing = 0;  // the most ranks on one GPU
  for (int d : registry_->device) sharing = std::max<int>(sharing, static_cast<int>(std::count(registry_->device.begin(), registry_->device.end(), d)));
  peers_.max_blocks = p2p_max_blocks(sharing);
  for (int s = 0; s < n; ++s) {
    peers_.recv[s] = registry_->recv[static_cast<size_t>(s)];
    peers_.flags[s] = registry_->flags[static_cast<size_t>(s)];
    const int peer = registry_->device[static_cast<size_t>(s)];
    if (peer == device_) continue;
    int can = 0;
    CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device_, peer));
    if (!can) fail("-ar p2p: cuda{} cannot reach cuda{} (no peer access); -ar host works without it", device_, peer);
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
    } else {
      CUDA_CHECK(e);
    }
  }
  connected_ = true;
}

void P2pCommunicator::set_history(uint32_t last) {
  const int n = world_size();
  std::vector<uint32_t> counters{last, 0}, flags(flags_.size());
  for (int slot = 0; slot < 2; ++slot) {
    const uint32_t token = comm::p2p_history_flag(last, slot);
    for (int s = 0; s < n; ++s) {
      for (int b = 0; b < kP2pMaxBlocks; ++b) flags[static_cast<size_t>((slot * n + s) * kP2pMaxBlocks + b)] = token;
    }
  }
  counters_.upload(counters);
  flags_.upload(flags);
}

void P2pCommunicator::reduce(comm::Buffer x, comm::Queue) {
  if (x.type != comm::DType::bf16) fail("-ar p2p reduces BF16 buffers, got {}", comm::dtype_name(x.type));
  if (!connected_) connect();
  if (x.n <= 0 || x.n > capacity_ || x.n % 8 != 0) {
    fail("-ar p2p: a reduction of {} elements (at most {}, a multiple of 8)", x.n, capacity_);
  }
  if (reinterpret_cast<uintptr_t>(x.data) % 16 != 0) fail("-ar p2p: the buffer is not 16-byte aligned");
  fenced_launch(host_, stream_, [&] {
    CUDA_CHECK(launch_p2p_all_reduce(peers_, rank(), counters_.data(), static_cast<__nv_bfloat16*>(x.data), x.n,
                                     stream_));
  });
}

void P2pCommunicator::gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts,
                             int64_t n_rows, comm::Queue queue) {
  host_.all_gather(send, recv, counts, n_rows, queue);
}

}  // namespace cohort::cuda
