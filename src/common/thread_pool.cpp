#include "common/thread_pool.h"

#include <algorithm>
#include <cassert>

namespace cohort {
namespace {

// Chunks per thread in a loop (when there are that many grains). One chunk
// per thread balances an idle machine best; more let the running threads
// take over from one that is slowed down (a shared core), but split each
// matvec into smaller tiles. Measured on SmolLM2-135M Q4_1, 2 cores, tg32
// (t/s, ranges over 3 runs): idle 1: 129-154, 2: 144-150, 4: 131-133 (the
// pool before claims: 142-160); beside two busy loops 2: 61-81, 4: 89-102
// (-t 1: 70-78). 2 keeps the idle speed.
constexpr int64_t kChunksPerThread = 2;
// The claim word's low half counts claims, including at most two failed ones
// per thread and loop; this bound keeps it far from the high half.
constexpr int kMaxThreads = 1 << 16;

}  // namespace

ThreadPool::ThreadPool(int n_threads, int poll)
    : n_threads_(std::clamp(n_threads, 1, kMaxThreads)),
      poll_(std::clamp(poll, 0, kMaxPoll)),
      spin_ns_(spin_budget_ns(poll_)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  // The seq_cst bump releases stop_ to every worker that sees the new value.
  stop_.store(true, std::memory_order_relaxed);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks(int index) {
  // Every chunk this call runs belongs to one loop: the next loop is
  // published only after this thread reported its chunks below.
  uint32_t ran = 0, n_chunks = 0;
  for (;;) {
    // acq_rel: acquire makes the fields of the loop this claim belongs to
    // visible (the caller stored the word with release before any claim).
    const uint64_t claim = claims_.fetch_add(1, std::memory_order_acq_rel);
    const auto next = static_cast<uint32_t>(claim);
    if (next >= static_cast<uint32_t>(claim >> 32)) break;
    n_chunks = static_cast<uint32_t>(claim >> 32);
    const int64_t b0 = next * n_blocks_ / n_chunks;
    const int64_t b1 = (next + 1) * n_blocks_ / n_chunks;
    (*fn_)(b0 * grain_, std::min(n_, b1 * grain_), index);
    ++ran;
  }
  if (ran == 0) return;
  // One report per thread and loop (not per chunk: each is an atomic on a
  // line every thread writes). seq_cst: releases the tasks' writes to the
  // caller, and is ordered with the load of caller_sleeping_ against the
  // caller's store of it then load of done_ (either the caller sees the
  // final count, or this sees it asleep and wakes it).
  if (done_.fetch_add(ran, std::memory_order_seq_cst) + ran == n_chunks &&
      caller_sleeping_.load(std::memory_order_seq_cst) != 0) {
    done_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                              int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n, 0);
    return;
  }
  // No thread reads these now: the previous loop's chunks are all done, and
  // a late claim reads only the (exhausted) claim word.
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  n_blocks_ = (n + grain - 1) / grain;
  const auto n_chunks = static_cast<uint32_t>(std::min<int64_t>(n_blocks_, n_threads_ * kChunksPerThread));
  done_.store(0, std::memory_order_relaxed);  // ordered before any claim by the release below
  claims_.store(static_cast<uint64_t>(n_chunks) << 32, std::memory_order_release);
  // seq_cst bump then seq_cst load of sleepers_, against a worker's seq_cst
  // increment of sleepers_ then load of wake_: either it sees the bump or
  // this sees it asleep and wakes it.
  wake_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) wake_.notify_all();
  run_chunks(0);
  wait_until_done(n_chunks);
}

void ThreadPool::wait_until_done(uint32_t n_chunks) {
  // Acquire pairs with the release in each chunk's done_ increment: the
  // tasks' writes are visible after.
  auto finished = [&] { return done_.load(std::memory_order_acquire) == n_chunks; };
  if (spin_until(finished, spin_ns_)) return;
  caller_sleeping_.store(1, std::memory_order_seq_cst);
  for (uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != n_chunks;) {
    done_.wait(d, std::memory_order_seq_cst);
  }
  caller_sleeping_.store(0, std::memory_order_relaxed);  // a stale 1 costs one extra notify
}

void ThreadPool::wait_for_work(uint32_t seen) {
  auto arrived = [&] { return wake_.load(std::memory_order_acquire) != seen; };
  if (spin_until(arrived, spin_ns_)) return;
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  while (wake_.load(std::memory_order_seq_cst) == seen) wake_.wait(seen, std::memory_order_seq_cst);
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void ThreadPool::worker(int index) {
  uint32_t seen = 0;
  for (;;) {
    wait_for_work(seen);
    seen = wake_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_relaxed)) return;  // visible: acquired with the bump
    run_chunks(index);
  }
}

}  // namespace cohort
