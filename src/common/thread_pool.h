// A fixed pool of worker threads for data-parallel loops in the CPU forward
// pass: parallel_for splits [0, n) into chunks that the calling thread and
// the workers claim one at a time, and returns when every chunk is done.
//
// A forward step issues hundreds of short loops, so dispatch must cost
// microseconds, yet the pool must also share a machine with other jobs (or
// with the other tensor-parallel ranks' pools). Two things make it do both:
//
// - Chunks are claimed, not assigned: a worker that the OS has not scheduled
//   holds no work, the threads that do run take its chunks, and the caller
//   never waits for a worker that has not started (only for chunks in
//   progress).
// - Waiting spins for a bounded time (`--poll`, see common/spin_wait.h), then
//   sleeps on a futex (std::atomic::wait): workers between loops, the caller
//   for the last chunks. With poll 0 nothing spins; an idle pool uses no CPU.
//
// Thread safety: parallel_for must be called from one thread at a time (the
// owner), and not from inside a task (not reentrant).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "common/spin_wait.h"

namespace cohort {

class ThreadPool {
 public:
  // n_threads counts the caller: n_threads - 1 workers are started (at least
  // 1 thread). poll 0..100 (clamped): how long a waiting thread spins before
  // it sleeps, llama.cpp's --poll (0: sleep at once).
  explicit ThreadPool(int n_threads, int poll = kDefaultPoll);
  // Wakes and joins the workers. REQUIRES: no parallel_for in progress.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }
  int poll() const { return poll_; }

  // Calls fn(begin, end, thread_index) on disjoint ranges covering [0, n);
  // returns when all are done. Ranges are multiples of `grain` except the
  // last. thread_index (0 = the caller) identifies the running thread, for
  // per-thread scratch: one thread runs its ranges one after another, and a
  // thread may run several ranges of one loop, or none.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t grain = 1);

 private:
  void worker(int index);
  void run_chunks(int index);
  void wait_for_work(uint32_t seen);
  void wait_until_done(uint32_t n_chunks);

  int n_threads_;
  int poll_;
  int64_t spin_ns_;
  std::vector<std::thread> workers_;

  // The current loop. Written by the caller only while no thread can read
  // it (before the loop is published, after every chunk is done); read by
  // a thread only after it claimed a chunk of this loop.
  const std::function<void(int64_t, int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  int64_t n_blocks_ = 0;  // ceil(n_ / grain_)

  // Chunk claims: (n_chunks << 32) | next. A fetch_add of 1 claims chunk
  // `next` if next < n_chunks. Both halves are in one word so that a thread
  // that claims late (after the loop it woke for is over) compares against
  // the chunk count of the loop it actually incremented. Stored (release) by
  // the caller to publish a loop; claims are acq_rel RMWs, so a claim that
  // reads the word (or a later claim in its release sequence) sees the loop
  // fields written before it.
  alignas(64) std::atomic<uint64_t> claims_{0};
  // Chunks finished in the current loop. Each thread adds the chunks it ran
  // once it finds none left to claim (release: the caller's acquire of the
  // final count sees all writes of the tasks; seq_cst to pair with
  // caller_sleeping_, see run_chunks).
  alignas(64) std::atomic<uint32_t> done_{0};
  std::atomic<uint32_t> caller_sleeping_{0};
  // Bumped (seq_cst) after each publication and on shutdown: what workers
  // wait on. sleepers_ counts workers inside wake_.wait(), so that dispatch
  // makes the futex call only when someone sleeps.
  alignas(64) std::atomic<uint32_t> wake_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace cohort
