// Bounded spinning before a thread sleeps, shared by the thread pool and the
// CPU ranks' barrier: llama.cpp's `--poll 0..100` level turned into a time.
//
// A thread that waits for a peer spins first, because a sleep and its wake-up
// cost tens of microseconds; but it spins only for a bounded time, because on
// a machine with more runnable threads than cores the peer it waits for may
// not be running, and spinning then takes the core it needs.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace cohort {

inline constexpr int kDefaultPoll = 50;  // llama.cpp's default --poll
inline constexpr int kMaxPoll = 100;

// Spin time per poll level. llama.cpp spins 128 Ki pause instructions per
// level (`1024 * 128 * poll` rounds, ggml-cpu.c), but only between graphs;
// inside a graph its barriers spin without bound, and that is the wait that
// starves on a loaded machine. Here every parallel loop is such a wait, so
// the budget is a time, not a count (a pause takes 10-150 cycles depending
// on the core): 2 us per level, 100 us at the default. 100 us is what the
// pool's earlier fixed spin was meant to be (20000 pauses, "about 100 us",
// chosen to cover the gap between the back-to-back loops of a forward step,
// a blocking wake-up costing 20-50 us on the development machine). The idle
// and loaded decode speeds at the default are in docs/PERFORMANCE.md.
inline constexpr int64_t kSpinNsPerPollLevel = 2000;

inline int64_t spin_budget_ns(int poll) { return static_cast<int64_t>(poll) * kSpinNsPerPollLevel; }

inline void cpu_pause() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Calls ready() until it returns true or budget_ns have passed, pausing the
// core between calls; returns ready()'s last result. The clock is read once
// per 32 polls (a pause is 10-150 cycles, depending on the core).
template <typename Ready>
bool spin_until(Ready&& ready, int64_t budget_ns) {
  if (ready()) return true;
  if (budget_ns <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(budget_ns);
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      cpu_pause();
      if (ready()) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace cohort
