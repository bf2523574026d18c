// A reusable barrier for the rank threads of one process: arrive_and_wait()
// returns once all n threads have arrived in the current phase, and may be
// called again at once (phases are counted).
//
// Memory: everything a thread wrote before arriving is visible to every
// thread after it leaves the same phase.
//
// Waiting spins for the `--poll` budget (common/spin_wait.h), then sleeps on
// a futex, so that a peer that is not running gets the core.
//
// Thread safety: n threads call arrive_and_wait(), each once per phase.
#pragma once

#include <atomic>
#include <cstdint>

namespace cohort::comm {

class CpuBarrier {
 public:
  CpuBarrier(int n_threads, int64_t spin_ns);
  CpuBarrier(const CpuBarrier&) = delete;
  CpuBarrier& operator=(const CpuBarrier&) = delete;

  void arrive_and_wait();

 private:
  const int n_threads_;
  const int64_t spin_ns_;
  // Arrivals in the current phase; reset by the last one.
  alignas(64) std::atomic<int> arrived_{0};
  // The phase; bumped by the last arrival. Threads wait for it to change.
  alignas(64) std::atomic<uint32_t> phase_{0};
  std::atomic<int> sleepers_{0};  // threads inside phase_.wait()
};

}  // namespace cohort::comm
