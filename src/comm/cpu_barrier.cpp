#include "comm/cpu_barrier.h"

#include <algorithm>

#include "common/spin_wait.h"

namespace cohort::comm {

CpuBarrier::CpuBarrier(int n_threads, int64_t spin_ns)
    : n_threads_(std::max(1, n_threads)), spin_ns_(spin_ns) {}

void CpuBarrier::arrive_and_wait() {
  // The phase cannot advance before this thread arrives, and this thread saw
  // the current phase when it left the previous one (or made it), so a
  // relaxed load reads the current phase.
  const uint32_t phase = phase_.load(std::memory_order_relaxed);
  // acq_rel: the release publishes this thread's writes; the arrivals form a
  // release sequence on arrived_, so the last arrival's acquire sees the
  // writes of every thread of the phase.
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
    // Reset before the bump: a thread that sees the new phase (acquire)
    // then arrives at the next one, after the reset.
    arrived_.store(0, std::memory_order_relaxed);
    // seq_cst bump then seq_cst load of sleepers_, against a waiter's
    // seq_cst increment of sleepers_ then load of phase_: either the waiter
    // sees the new phase or this sees the waiter and wakes it. The bump is
    // also the release that hands every thread's writes to the waiters.
    phase_.store(phase + 1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) phase_.notify_all();
    return;
  }
  // Acquire pairs with the bump's release.
  auto advanced = [&] { return phase_.load(std::memory_order_acquire) != phase; };
  if (spin_until(advanced, spin_ns_)) return;
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  while (phase_.load(std::memory_order_seq_cst) == phase) phase_.wait(phase, std::memory_order_seq_cst);
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace cohort::comm
