#include "engine/rank_threads.h"

#include <cassert>
#include <utility>

namespace cohort::engine {

RankThreads::RankThreads(int n_ranks) : errors_(static_cast<size_t>(n_ranks)) {
  assert(n_ranks >= 1);
  threads_.reserve(static_cast<size_t>(n_ranks - 1));
  for (int r = 1; r < n_ranks; ++r) threads_.emplace_back([this, r] { work(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankThreads::work(int rank) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(rank);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mu_);
    errors_[static_cast<size_t>(rank)] = error;
    if (--pending_ == 0) done_.notify_one();
  }
}

void RankThreads::run(const std::function<void(int)>& fn) {
  if (threads_.empty()) {
    fn(0);
    return;
  }
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    for (std::exception_ptr& e : errors_) e = nullptr;
    pending_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  try {
    fn(0);
    errors_[0] = nullptr;
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  for (const std::exception_ptr& e : errors_) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace cohort::engine
