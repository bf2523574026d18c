#include "backend/cuda/ar_bench.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <cuda_bf16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/gpu_communicator.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

constexpr int kWarmupCalls = 3;

int64_t elements(int64_t bytes) { return std::max<int64_t>(8, (bytes / 2 + 7) / 8 * 8); }

// Small reductions are timed in batches of many calls (an event pair costs
// microseconds), large ones in few; the sample counts keep a size's run
// under about a second on one H200.
int calls_per_sample(int64_t bytes) { return bytes <= (int64_t{1} << 20) ? 20 : bytes <= (int64_t{32} << 20) ? 4 : 1; }
int n_samples(int64_t bytes) { return bytes <= (int64_t{32} << 20) ? 100 : 10; }

// Rank r's part: its samples (microseconds per call), per size.
void run_rank(const ArBenchOptions& o, comm::CpuGroup& group, int r, std::vector<std::vector<double>>& us) {
  CUDA_CHECK(cudaSetDevice(o.devices[static_cast<size_t>(r)]));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct Cleanup {
    cudaStream_t s;
    ~Cleanup() { (void)cudaStreamDestroy(s); }
  } cleanup{stream};
  const int64_t capacity = elements(*std::max_element(o.sizes.begin(), o.sizes.end()));
  DeviceBuffer<__nv_bfloat16> x(static_cast<size_t>(capacity));
  CUDA_CHECK(cudaMemsetAsync(x.data(), 0, x.size() * sizeof(__nv_bfloat16), stream));
  std::unique_ptr<comm::Communicator> c = make_gpu_communicator(o.transport, group, r, stream, capacity);
  comm::CpuCommunicator host(group, r);
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (size_t k = 0; k < o.sizes.size(); ++k) {
    const comm::Buffer buf{x.data(), comm::DType::bf16, elements(o.sizes[k])};
    const int calls = calls_per_sample(o.sizes[k]);
    for (int i = 0; i < kWarmupCalls; ++i) c->all_reduce_sum(buf, {stream});
    cudaGraphExec_t exec = nullptr;
    if (o.graph) {
      CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < calls; ++i) c->all_reduce_sum(buf, {stream});
      cudaGraph_t g = nullptr;
      CUDA_CHECK(cudaStreamEndCapture(stream, &g));
      const cudaError_t made = cudaGraphInstantiate(&exec, g, 0);
      (void)cudaGraphDestroy(g);
      CUDA_CHECK(made);
      CUDA_CHECK(cudaGraphLaunch(exec, stream));  // uploads the graph
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int s = 0; s < n_samples(o.sizes[k]); ++s) {
      host.barrier();
      CUDA_CHECK(cudaEventRecord(start, stream));
      if (exec != nullptr) {
        CUDA_CHECK(cudaGraphLaunch(exec, stream));
      } else {
        for (int i = 0; i < calls; ++i) c->all_reduce_sum(buf, {stream});
      }
      CUDA_CHECK(cudaEventRecord(stop, stream));
      CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      us[k].push_back(1e3 * ms / calls);
    }
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

std::vector<ArBenchRow> run_ar_bench(const ArBenchOptions& o) {
  const int n = static_cast<int>(o.devices.size());
  if (n < 1 || o.sizes.empty()) fail("ar-bench: no devices or no sizes");
  if (o.graph && o.transport == "host") fail("ar-bench: -ar host waits on the host and cannot run in a CUDA graph");
  comm::CpuGroup group(n);
  std::vector<std::vector<std::vector<double>>> us(static_cast<size_t>(n),
                                                   std::vector<std::vector<double>>(o.sizes.size()));
  std::mutex mu;
  std::exception_ptr error;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        run_rank(o, group, r, us[static_cast<size_t>(r)]);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  std::vector<ArBenchRow> rows;
  for (size_t k = 0; k < o.sizes.size(); ++k) {
    std::vector<double> slowest = us[0][k];
    for (int r = 1; r < n; ++r) {
      for (size_t s = 0; s < slowest.size(); ++s) slowest[s] = std::max(slowest[s], us[static_cast<size_t>(r)][k][s]);
    }
    ArBenchRow row{o.transport, n, elements(o.sizes[k]) * 2, o.graph};
    row.median_us = percentile(slowest, 0.5);
    row.p99_us = percentile(slowest, 0.99);
    row.algbw_gbs = static_cast<double>(row.bytes) / (row.median_us * 1e3);
    row.busbw_gbs = row.algbw_gbs * 2.0 * (n - 1) / n;
    row.n_samples = static_cast<int>(slowest.size());
    row.calls_per_sample = calls_per_sample(o.sizes[k]);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace cohort::cuda
