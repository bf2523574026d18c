// Test doubles for the server's unit tests: a byte-level tokenizer with
// chat control tokens, and a scripted GenerationService.
//
// The tokenizer has the 256 byte tokens (id = byte value, no merges), then
// <|im_start|> (256), <|im_end|> (257, EOS) and <s> (258, BOS).
//
// FakeService answers every request with its `reply` text, one byte-token
// per step on its own engine thread, honouring max_tokens ("length") and
// stop strings ("stop"; the text before the stop string is released), and
// reporting logprobs -0.5 for the chosen token and -1, -2, ... for top-n
// alternatives (ids 'a', 'b', ...). A prompt whose first token is
// kFailToken ends with an engine-side error. Requests seen, cancellations
// and submissions are recorded for the tests to check.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "server/generation.h"
#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::server::testing {

inline constexpr int32_t kImStart = 256, kImEnd = 257, kBos = 258;
inline constexpr int32_t kFailToken = '!';

inline tokenizer::Tokenizer test_tokenizer(bool add_bos = false) {
  tokenizer::testing::BpeSpec spec;
  spec.extra = {{"<|im_start|>", 3}, {"<|im_end|>", 3}, {"<s>", 3}};
  gguf::Metadata md = tokenizer::testing::bpe_metadata(spec);
  md.set("tokenizer.ggml.bos_token_id", gguf::Value(static_cast<uint32_t>(kBos)));
  md.set("tokenizer.ggml.eos_token_id", gguf::Value(static_cast<uint32_t>(kImEnd)));
  md.set("tokenizer.ggml.add_bos_token", gguf::Value(add_bos));
  return tokenizer::Tokenizer::from_gguf(md);
}

class FakeService final : public GenerationService {
 public:
  explicit FakeService(std::string reply = "Hello, world! This is a fake reply.", int n_ctx = 64,
                       std::chrono::milliseconds step = std::chrono::milliseconds(1))
      : reply_(std::move(reply)), n_ctx_(n_ctx), step_(step), thread_([this] { run(); }) {}
  ~FakeService() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  std::shared_ptr<RequestHandle> submit(GenerationRequest request) override {
    if (static_cast<int>(request.prompt.size()) >= n_ctx_) fail("prompt does not fit the context");
    std::lock_guard<std::mutex> lock(mutex_);
    auto handle = std::make_shared<RequestHandle>(++n_submitted_);
    submitted_.push_back(request);
    active_.push_back(Active{handle, std::move(request), 0, ""});
    changed_.notify_all();
    return handle;
  }

  ServiceStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    ServiceStats s;
    s.n_slots = 2;
    s.n_ctx = n_ctx_;
    s.requests_total = n_submitted_;
    s.phase = "decode";
    s.latency_buckets = {0.1, 1.0};
    s.ttft_counts = {1, 2, 3};
    s.ttft_sum = 2.5;
    s.slots = {{0, true, 7, "DECODE", 5, 3}, {1, false, 0, "", 0, 0}};
    return s;
  }
  int n_ctx() const override { return n_ctx_; }
  backend::MemoryUse memory() const override {
    backend::MemoryUse m;
    m.device = "fake";
    return m;
  }

  // Blocks until `n` requests were cancelled or `timeout` passed.
  bool wait_cancelled(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return n_cancelled_ >= n; });
  }
  // Blocks until `n` requests were submitted or `timeout` passed.
  bool wait_submitted(uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return n_submitted_ >= n; });
  }
  std::vector<GenerationRequest> submitted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return submitted_;
  }

 private:
  struct Active {
    std::shared_ptr<RequestHandle> handle;
    GenerationRequest request;
    size_t pos;        // next byte of reply_
    std::string text;  // generated so far
  };

  // One step for one request; true when it finished.
  bool step(Active& a) {
    GenerationEvent e;
    if (!a.request.prompt.empty() && a.request.prompt[0] == kFailToken) {
      e.done = true;
      e.error = "simulated engine failure";
      a.handle->push(std::move(e));
      return true;
    }
    e.usage.prompt_tokens = static_cast<int>(a.request.prompt.size());
    e.usage.completion_tokens = static_cast<int>(a.pos);
    if (a.pos >= reply_.size()) {  // the end-of-generation token: no text
      e.done = true;
      e.finish = engine::FinishReason::eog;
      a.handle->push(std::move(e));
      return true;
    }
    const char c = reply_[a.pos++];
    e.usage.completion_tokens = static_cast<int>(a.pos);
    GeneratedToken t;
    t.id = static_cast<unsigned char>(c);
    t.text = std::string(1, c);
    a.text += c;
    if (a.request.n_logprobs >= 0) {
      t.logprob = -0.5f;
      for (int k = 0; k < a.request.n_logprobs; ++k) t.top.push_back({'a' + k, -1.0f - static_cast<float>(k)});
    }
    for (const std::string& s : a.request.stop) {
      if (a.text.size() >= s.size() && a.text.compare(a.text.size() - s.size(), s.size(), s) == 0) {
        t.text.clear();  // the stop string is never released (single-byte tests only need this)
        e.finish = engine::FinishReason::stop;
      }
    }
    const int n = static_cast<int>(a.pos);
    if (e.finish == engine::FinishReason::none && a.request.max_tokens > 0 && n >= a.request.max_tokens) {
      e.finish = engine::FinishReason::length;
    }
    e.tokens.push_back(std::move(t));
    e.done = e.finish != engine::FinishReason::none;
    const bool done = e.done;
    a.handle->push(std::move(e));
    return done;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      changed_.wait_for(lock, step_, [&] { return stop_ || !active_.empty(); });
      auto gone = [&](Active& a) {
        if (a.handle->cancelled()) {
          ++n_cancelled_;
          return true;
        }
        return step(a);
      };
      active_.erase(std::remove_if(active_.begin(), active_.end(), gone), active_.end());
      changed_.notify_all();
      if (!active_.empty()) changed_.wait_for(lock, step_, [&] { return stop_; });
    }
  }

  const std::string reply_;
  const int n_ctx_;
  const std::chrono::milliseconds step_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Active> active_;               // GUARDED_BY(mutex_)
  std::vector<GenerationRequest> submitted_; // GUARDED_BY(mutex_)
  uint64_t n_submitted_ = 0;                 // GUARDED_BY(mutex_)
  int n_cancelled_ = 0;                      // GUARDED_BY(mutex_)
  bool stop_ = false;                        // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace cohort::server::testing
