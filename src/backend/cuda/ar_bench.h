// What `cohort ar-bench` measures: the latency of one all_reduce_sum of a
// BF16 buffer through a transport (nccl, host, p2p) on a set of GPU ranks
// (one per entry of `devices`, which may repeat a GPU), per size, launched
// one call at a time or replayed from a CUDA graph.
//
// Method: every rank runs on its own thread with its own stream; after a few
// untimed calls (which also connect the ranks), each sample is a batch of
// calls between two CUDA events, started by all ranks together (a host
// barrier); a sample's time is the slowest rank's, per call. Median and p99
// are over the samples. Bandwidths follow nccl-tests: algbw = bytes / time,
// busbw = algbw * 2 (n - 1) / n.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cohort::cuda {

struct ArBenchOptions {
  std::vector<int> devices;     // a rank per entry: its GPU
  std::string transport;        // nccl, host or p2p
  std::vector<int64_t> sizes;   // bytes per reduction (rounded up to 16)
  bool graph = false;           // replay the batch from a CUDA graph
};

struct ArBenchRow {
  std::string transport;
  int n_ranks = 0;
  int64_t bytes = 0;
  bool graph = false;
  double median_us = 0, p99_us = 0, algbw_gbs = 0, busbw_gbs = 0;
  int n_samples = 0, calls_per_sample = 0;
};

// One row per size. Throws cohort::Error where the transport cannot run
// (NCCL missing or a repeated GPU).
std::vector<ArBenchRow> run_ar_bench(const ArBenchOptions& options);

}  // namespace cohort::cuda
