#include "backend/cuda/p2p_communicator.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/group_state.h"
#include "backend/cuda/nccl_communicator.h"
#include "backend/cuda/rank_fence.h"
#include "comm/p2p_protocol.h"
#include "common/error.h"

namespace cohort::cuda {

// The buffers of every rank of one group, filled in as the ranks are made,
// and the shared host memory of -ar host.
struct P2pCommunicator::Registry {
  std::mutex mu;
  std::vector<__nv_bfloat16*> recv, large;
  std::vector<uint32_t*> flags;
  std::vector<int> device;
  std::vector<int64_t> capacity;  // each rank's; they differ where -ts splits unevenly
  void* host = nullptr;           // -ar host: slots, large and flags of the whole group

  ~Registry() {
    if (host != nullptr) (void)cudaFreeHost(host);
  }
};

P2pCommunicator::P2pCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream, int64_t capacity,
                                 Memory memory, const comm::ArRouting& routing)
    : group_(group), host_(group, rank), stream_(stream), capacity_(capacity), memory_(memory), routing_(routing) {
  const int n = group.n_ranks();
  if (n > kP2pMaxRanks) fail("-ar {}: at most {} ranks, got {}", name(), kP2pMaxRanks, n);
  CUDA_CHECK(cudaGetDevice(&device_));
  if (memory_ == Memory::device) {
    recv_ = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(2 * n * capacity));
    large_ = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(n * capacity));
    flags_ = DeviceBuffer<uint32_t>(static_cast<size_t>(p2p_flag_count(n)));
    CUDA_CHECK(cudaMemset(flags_.data(), 0, flags_.size() * sizeof(uint32_t)));
  }
  counters_ = DeviceBuffer<uint32_t>(kP2pCounters);
  CUDA_CHECK(cudaMemset(counters_.data(), 0, counters_.size() * sizeof(uint32_t)));
  registry_ = group_state<Registry>(group, [n] {
    auto r = std::make_shared<Registry>();
    r->recv.assign(static_cast<size_t>(n), nullptr);
    r->large.assign(static_cast<size_t>(n), nullptr);
    r->flags.assign(static_cast<size_t>(n), nullptr);
    r->device.assign(static_cast<size_t>(n), -1);
    r->capacity.assign(static_cast<size_t>(n), 0);
    return r;
  });
  std::lock_guard lock(registry_->mu);
  const auto r = static_cast<size_t>(rank);
  registry_->recv[r] = recv_.data();
  registry_->large[r] = large_.data();
  registry_->flags[r] = flags_.data();
  registry_->device[r] = device_;
  registry_->capacity[r] = capacity_;
}

P2pCommunicator::~P2pCommunicator() {
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
}

void P2pCommunicator::connect() {
  float arrived = 0.0f;
  host_.all_reduce_sum(&arrived, 1);  // every rank has registered its buffers
  std::unique_lock lock(registry_->mu);
  const int n = world_size();
  peers_.n_ranks = n;
  peers_.one_buffer = memory_ == Memory::host;
  // A rank writes into its peers' buffers at offsets of the same layout, so
  // every rank uses the smallest capacity (each buffer holds at least that),
  // in whole 16-byte units so that every row starts aligned.
  capacity_ = *std::min_element(registry_->capacity.begin(), registry_->capacity.end()) / 8 * 8;
  peers_.capacity = capacity_;
  const std::vector<int>& devices = registry_->device;
  int sharing = 0;  // the most ranks on one GPU
  for (int d : devices) sharing = std::max<int>(sharing, static_cast<int>(std::count(devices.begin(), devices.end(), d)));
  peers_.max_blocks = p2p_max_blocks(sharing);
  if (memory_ == Memory::host) {
    const size_t elems = static_cast<size_t>(3 * n * capacity_), flags = static_cast<size_t>(p2p_flag_count(n));
    if (registry_->host == nullptr) {
      const size_t bytes = elems * sizeof(__nv_bfloat16) + flags * sizeof(uint32_t);
      if (cudaHostAlloc(&registry_->host, bytes, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
        registry_->host = nullptr;
        fail("-ar host: cannot pin {} MiB of host memory for the reductions", bytes >> 20);
      }
      std::memset(static_cast<char*>(registry_->host) + elems * sizeof(__nv_bfloat16), 0, flags * sizeof(uint32_t));
    }
    // With unified addressing a mapped allocation has the same address on the host and on every GPU.
    auto* shared = static_cast<__nv_bfloat16*>(registry_->host);
    for (int s = 0; s < n; ++s) {
      peers_.recv[s] = shared;
      peers_.large[s] = shared + 2 * n * capacity_;
      peers_.flags[s] = reinterpret_cast<uint32_t*>(shared + elems);
    }
  } else {
    for (int s = 0; s < n; ++s) {
      peers_.recv[s] = registry_->recv[static_cast<size_t>(s)];
      peers_.large[s] = registry_->large[static_cast<size_t>(s)];
      peers_.flags[s] = registry_->flags[static_cast<size_t>(s)];
      const int peer = devices[static_cast<size_t>(s)];
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
  }
  const bool gpu_repeats = sharing > 1;
  lock.unlock();
  if (routing_.nccl_min_bytes >= 0) connect_nccl(gpu_repeats);
  connected_ = true;
}

// Every rank decides alike: the devices are the group's, and NCCL loads or
// fails to load for the whole process.
void P2pCommunicator::connect_nccl(bool gpu_repeats) {
  std::string why;
  if (gpu_repeats) {
    why = "NCCL runs one rank per GPU and a GPU has several";
  } else {
    try {
      nccl_ = std::make_unique<NcclCommunicator>(group_, rank(), stream_);
    } catch (const Error& e) {
      why = e.what();
    }
  }
  if (why.empty()) return;
  routing_.nccl_min_bytes = -1;  // sizes from there take the paths they would take without the variable
  if (rank() == 0) {
    fmt::print(stderr, "warning: COHORT_AR_NCCL_MIN_BYTES: {}; every reduction stays on -ar {}\n", why, name());
  }
}

void P2pCommunicator::set_history(uint32_t last) {
  if (!connected_) connect();
  const int n = world_size();
  std::vector<uint32_t> flags(static_cast<size_t>(p2p_flag_count(n)));
  for (int slot = 0; slot < 2; ++slot) {
    const uint32_t token = comm::p2p_history_flag(last, slot);
    for (int s = 0; s < n; ++s) {
      for (int b = 0; b < kP2pMaxBlocks; ++b) flags[static_cast<size_t>((slot * n + s) * kP2pMaxBlocks + b)] = token;
    }
  }
  for (int s = 0; s < n; ++s) flags[static_cast<size_t>(p2p_done_offset(n) + s)] = last;
  const std::vector<uint32_t> counters{last, 0};
  counters_.upload(counters);
  if (memory_ == Memory::device) {
    flags_.upload(flags);
  } else if (rank() == 0) {
    std::memcpy(peers_.flags[0], flags.data(), flags.size() * sizeof(uint32_t));
  }
  host_.barrier();
}

void P2pCommunicator::copy_contribution(const __nv_bfloat16* x, int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(__nv_bfloat16);
  const int targets = peers_.one_buffer ? 1 : world_size();
  for (int s = 0; s < targets; ++s) {
    CUDA_CHECK(cudaMemcpyAsync(peers_.large[s] + rank() * capacity_, x, bytes, cudaMemcpyDefault, stream_));
  }
}

void P2pCommunicator::reduce(comm::Buffer x, comm::Queue queue) {
  if (x.type != comm::DType::bf16) fail("-ar {} reduces BF16 buffers, got {}", name(), comm::dtype_name(x.type));
  if (!connected_) connect();
  if (x.n <= 0 || x.n > capacity_ || x.n % 8 != 0) {
    fail("-ar {}: a reduction of {} elements (at most {}, a multiple of 8)", name(), x.n, capacity_);
  }
  if (reinterpret_cast<uintptr_t>(x.data) % 16 != 0) fail("-ar {}: the buffer is not 16-byte aligned", name());
  const comm::ArPath path = ar_path(x.n * static_cast<int64_t>(sizeof(__nv_bfloat16)), routing_);
  if (path == comm::ArPath::nccl && nccl_ != nullptr) {
    nccl_->all_reduce_sum(x, queue);
    return;
  }
  auto* data = static_cast<__nv_bfloat16*>(x.data);
  const bool copied = path != comm::ArPath::kernel;
  fenced_launch(host_, stream_, [&] {
    if (copied) {
      CUDA_CHECK(launch_p2p_wait_readers(peers_, rank(), counters_.data(), stream_));
      copy_contribution(data, x.n);
    }
    CUDA_CHECK(launch_p2p_all_reduce(peers_, rank(), counters_.data(), data, x.n, copied, stream_));
  });
}

void P2pCommunicator::gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts,
                             int64_t n_rows, comm::Queue queue) {
  host_.all_gather(send, recv, counts, n_rows, queue);
}

}  // namespace cohort::cuda
