// GPU ranks sharing one device, and where several GPUs are visible also
// spread over them (rank r on GPU r mod count, so real peers), through
// pinned host memory (-ar host) and through device memory (-ar p2p), both
// P2pCommunicator: every rank's BF16 device buffer receives bf16(sum in rank
// order of its contributions), the rounding done here in double arithmetic,
// bit for bit on every rank, at 8 elements, on both sides of each step in the
// small path's block count, one element (8, the kernels' unit) either side
// of the copy-engine threshold and at the capacity, for 2 to 4 ranks and
// several calls in a row; inside CUDA graphs, 1,000,000 small reductions
// that start with the call counters just below 2^32, and small and large
// reductions interleaved; NCCL routing where NCCL cannot run warns and keeps
// the sums; too large a reduction is a clear error. NCCL (-ar nccl) with one
// rank per visible GPU.
#include <algorithm>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/gpu_communicator.h"
#include "backend/cuda/p2p_communicator.h"
#include "common/error.h"

namespace cohort::cuda {
namespace cuda_communicator_test {

constexpr size_t kCapacity = size_t{1} << 20;  // elements of the largest reduction
// The copy-engine threshold in elements (the default 512 KiB of BF16).
constexpr int64_t kCeElems = comm::ArRouting{}.ce_min_bytes / 2;

// A BF16 value (as bits) of rank r's element i: signs and magnitudes over
// 2^-12 .. 2^12, so that sums round.
uint16_t input(int r, int64_t i) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(r + 1) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  const uint32_t exponent = 115 + h % 25, mantissa = (h >> 8) & 0x7f, sign = (h >> 31) & 1;
  return static_cast<uint16_t>(sign << 15 | exponent << 7 | mantissa);
}

float f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// x rounded to BF16 (ties to even) with double arithmetic, as bits.
uint16_t bf16_reference(float x) {
  if (x == 0.0f) return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16);
  const int e = std::ilogb(x);
  const double scale = std::ldexp(1.0, 7 - e);
  const auto r = static_cast<float>(std::nearbyint(static_cast<double>(x) * scale) / scale);
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(r) >> 16);
}

// bf16(sum in rank order) of n elements of n_ranks ranks.
std::vector<uint16_t> expected_sum(int n_ranks, int64_t n) {
  std::vector<uint16_t> expect(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float acc = f32(input(0, i));
    for (int r = 1; r < n_ranks; ++r) acc += f32(input(r, i));
    expect[static_cast<size_t>(i)] = bf16_reference(acc);
  }
  return expect;
}

// Rank r's n elements after three reductions in a row on the same buffer
// (each started from its inputs), the rank on GPU r mod n_gpus.
std::vector<uint16_t> one_rank(const std::string& transport, comm::CpuGroup& group, int r, int n_gpus, int64_t n,
                               const comm::ArRouting& routing) {
  CUDA_CHECK(cudaSetDevice(r % n_gpus));
  // Non-blocking, as the backend's: the synchronous copies below run on the
  // legacy stream, which would otherwise wait for a peer's kernel that waits
  // for this rank's.
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<uint16_t> got;
  {
    const std::unique_ptr<comm::Communicator> c =
        make_gpu_communicator(transport, group, r, stream, kCapacity, routing);
    std::vector<uint16_t> mine(static_cast<size_t>(n));
    DeviceBuffer<uint16_t> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) mine[static_cast<size_t>(i)] = input(r, i);
    for (int call = 0; call < 3; ++call) {
      // On the rank's stream: a plain copy from pageable memory may return
      // before its data lands, unordered with that stream.
      CUDA_CHECK(cudaMemcpyAsync(x.data(), mine.data(), mine.size() * 2, cudaMemcpyHostToDevice, stream));
      c->all_reduce_sum(comm::Buffer{x.data(), comm::DType::bf16, n}, comm::Queue{stream});
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    got = x.download();
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  return got;
}

// one_rank of every rank of a group of n_ranks, each on its own thread.
std::vector<std::vector<uint16_t>> all_ranks(const std::string& transport, int n_ranks, int n_gpus, int64_t n,
                                             const comm::ArRouting& routing = {}) {
  comm::CpuGroup group(n_ranks);
  std::vector<std::vector<uint16_t>> got(static_cast<size_t>(n_ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r) {
    threads.emplace_back([&, r] { got[static_cast<size_t>(r)] = one_rank(transport, group, r, n_gpus, n, routing); });
  }
  for (std::thread& t : threads) t.join();
  return got;
}

// The sizes checked, multiples of 8: the smallest; both sides of each step in
// the small path's block count (one block to two, and to the most that ranks
// sharing a GPU get, max_blocks); either side of the copy-engine threshold;
// and the capacity.
std::vector<int64_t> sizes_for(int max_blocks) {
  int64_t two = 8, most = 8;
  while (p2p_blocks(two, max_blocks) < 2) two += 8;
  while (p2p_blocks(most, max_blocks) < max_blocks) most += 8;
  std::vector<int64_t> sizes = {8, two - 8, two, most - 8, most, kCeElems - 8, kCeElems, kCeElems + 8,
                                static_cast<int64_t>(kCapacity)};
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

class CudaCommunicator : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaCommunicator, RanksOnOneGpuOrSpreadOverGpusGetTheRankOrderSum) {
  COHORT_REQUIRE_CUDA_DEVICE();
  int n_gpus = 0;
  CUDA_CHECK(cudaGetDeviceCount(&n_gpus));
  std::vector<int> layouts = {1};  // the GPUs the ranks are spread over
  if (n_gpus > 1) layouts.push_back(n_gpus);
  for (const int gpus : layouts) {
    for (int n_ranks : {2, 3, 4}) {
      for (int64_t n : sizes_for(p2p_max_blocks((n_ranks + gpus - 1) / gpus))) {
        const std::vector<uint16_t> expect = expected_sum(n_ranks, n);
        const std::vector<std::vector<uint16_t>> got = all_ranks(GetParam(), n_ranks, gpus, n);
        for (int r = 0; r < n_ranks; ++r) {
          EXPECT_EQ(got[static_cast<size_t>(r)], expect)
              << n_ranks << " ranks on " << gpus << " GPU(s), " << n << " elements, rank " << r;
        }
      }
    }
  }
}

// Named "Cuda/..." as the other GPU suites, so that the GPU script's Cuda* filter runs it.
INSTANTIATE_TEST_SUITE_P(Cuda, CudaCommunicator, ::testing::Values("host", "p2p"));

using Memory = P2pCommunicator::Memory;

const char* transport_of(Memory m) { return m == Memory::host ? "host" : "p2p"; }

// Rank r's results of a CUDA graph that reduces `sequence` (sizes, each call
// its own buffer, refilled with the rank's inputs before the call), replayed
// `replays` times after the call counters were set to wrap soon, on GPU 0.
std::vector<std::vector<uint16_t>> graph_rank(Memory memory, comm::CpuGroup& group, std::barrier<>& sync, int r,
                                              const std::vector<int64_t>& sequence, int replays) {
  CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::vector<uint16_t>> got;
  {
    const int64_t most = *std::max_element(sequence.begin(), sequence.end());
    P2pCommunicator c(group, r, stream, most, memory, comm::ArRouting{});
    std::vector<DeviceBuffer<uint16_t>> x, start;
    for (int64_t n : sequence) {
      std::vector<uint16_t> mine(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) mine[static_cast<size_t>(i)] = input(r, i);
      x.emplace_back(static_cast<size_t>(n));
      start.emplace_back(static_cast<size_t>(n)).upload(mine);
    }
    const auto buffer = [&](size_t j) { return comm::Buffer{x[j].data(), comm::DType::bf16, sequence[j]}; };
    CUDA_CHECK(cudaMemcpyAsync(x[0].data(), start[0].data(), x[0].size() * 2, cudaMemcpyDeviceToDevice, stream));
    c.all_reduce_sum(buffer(0), comm::Queue{stream});  // connects, outside the capture
    CUDA_CHECK(cudaStreamSynchronize(stream));
    sync.arrive_and_wait();
    c.set_history(0xffffffffu - 1000u);  // the tokens wrap after 1,000 calls
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (size_t j = 0; j < sequence.size(); ++j) {
      CUDA_CHECK(cudaMemcpyAsync(x[j].data(), start[j].data(), x[j].size() * 2, cudaMemcpyDeviceToDevice, stream));
      c.all_reduce_sum(buffer(j), comm::Queue{stream});
    }
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < replays; ++i) CUDA_CHECK(cudaGraphLaunch(exec, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (const DeviceBuffer<uint16_t>& b : x) got.push_back(b.download());
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  return got;
}

// Every rank's result of every call of graph_rank against the rank-order sum.
void expect_graph_sums(Memory memory, int n_ranks, const std::vector<int64_t>& sequence, int replays) {
  comm::CpuGroup group(n_ranks);
  std::barrier sync(n_ranks);
  std::vector<std::vector<std::vector<uint16_t>>> got(static_cast<size_t>(n_ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r) {
    threads.emplace_back([&, r] { got[static_cast<size_t>(r)] = graph_rank(memory, group, sync, r, sequence, replays); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t j = 0; j < sequence.size(); ++j) {
    const std::vector<uint16_t> expect = expected_sum(n_ranks, sequence[j]);
    for (int r = 0; r < n_ranks; ++r) {
      EXPECT_EQ(got[static_cast<size_t>(r)][j], expect) << n_ranks << " ranks, call " << j << " of "
                                                        << sequence[j] << " elements, rank " << r;
    }
  }
}

class CudaP2pCommunicator : public ::testing::TestWithParam<Memory> {};

TEST_P(CudaP2pCommunicator, AMillionReductionsInAReplayedGraphAcrossTheTokenWrap) {
  COHORT_REQUIRE_CUDA_DEVICE();
  // 100 calls per graph, 10,000 replays; 8 KiB messages, the size of a decode step's.
  expect_graph_sums(GetParam(), 2, std::vector<int64_t>(100, 4096), 10000);
}

// The large path's guard (every rank done with the previous call before a
// copy) and the small path's slots, interleaved, small and large calls back
// to back in both orders.
TEST_P(CudaP2pCommunicator, SmallAndLargeReductionsInterleavedInAReplayedGraph) {
  COHORT_REQUIRE_CUDA_DEVICE();
  const std::vector<int64_t> sequence = {4096, kCeElems, kCeElems + 8, 8, kCeElems - 8, kCeElems, 12288};
  for (int n_ranks : {2, 3}) expect_graph_sums(GetParam(), n_ranks, sequence, 200);
}

// With COHORT_AR_NCCL_MIN_BYTES set where NCCL cannot run (ranks sharing a
// GPU): a warning, and every reduction still on the transport, exact.
TEST_P(CudaP2pCommunicator, NcclRoutingOnASharedGpuWarnsAndKeepsTheTransport) {
  COHORT_REQUIRE_CUDA_DEVICE();
  constexpr int kRanks = 2;
  constexpr int64_t n = 8192;
  ::testing::internal::CaptureStderr();
  const std::vector<std::vector<uint16_t>> got =
      all_ranks(transport_of(GetParam()), kRanks, 1, n, comm::ArRouting{.nccl_min_bytes = 1024});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning: COHORT_AR_NCCL_MIN_BYTES: NCCL runs one rank per GPU"), std::string::npos) << err;
  const std::vector<uint16_t> expect = expected_sum(kRanks, n);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(got[static_cast<size_t>(r)], expect) << "rank " << r;
}

TEST_P(CudaP2pCommunicator, TooLargeAReductionIsAClearError) {
  COHORT_REQUIRE_CUDA_DEVICE();
  CUDA_CHECK(cudaSetDevice(0));
  comm::CpuGroup group(1);
  P2pCommunicator c(group, 0, nullptr, 16, GetParam(), comm::ArRouting{});
  DeviceBuffer<uint16_t> x(24);
  try {
    c.all_reduce_sum(comm::Buffer{x.data(), comm::DType::bf16, 24}, comm::Queue{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a reduction of 24 elements (at most 16"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaP2pCommunicator, ::testing::Values(Memory::device, Memory::host),
                         [](const ::testing::TestParamInfo<Memory>& i) {
                           return std::string(transport_of(i.param));
                         });

// NCCL with one rank per visible GPU (one rank on a one-GPU machine: the
// call path, the rank's join and the in-place identity): on up to two ranks
// a single F32 addition rounded to BF16, the bits of the rank-order sum.
TEST(CudaNcclCommunicator, OneRankPerGpuGetsTheSum) {
  COHORT_REQUIRE_CUDA_DEVICE();
  int n_gpus = 0;
  CUDA_CHECK(cudaGetDeviceCount(&n_gpus));
  const int n_ranks = std::min(n_gpus, 2);
  constexpr int64_t n = 4104;
  const std::vector<std::vector<uint16_t>> got = all_ranks("nccl", n_ranks, n_gpus, n);
  const std::vector<uint16_t> expect = expected_sum(n_ranks, n);
  for (int r = 0; r < n_ranks; ++r) EXPECT_EQ(got[static_cast<size_t>(r)], expect) << n_ranks << " ranks, rank " << r;
}

}  // namespace cuda_communicator_test
}  // namespace cohort::cuda
