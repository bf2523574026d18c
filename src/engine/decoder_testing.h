// Helpers of the decoder's tests: a random tiny-tp model on disk, the logits
// of fixed two-sequence workloads (decoded, or submitted and waited for),
// and how closely two sets of logits agree (mean KLD, top-1 disagreements
// beyond a near-tie).
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "engine/decoder.h"
#include "model/model.h"
#include "model/presets.h"
#include "model/random_model.h"

namespace cohort::engine {

// A random model of the tiny-tp preset (12 heads, 3 KV heads: 1, 2 and 3
// ranks split every block type) in `type`; the caller removes the file.
inline std::string write_model(gguf::TensorType type, model::Family family) {
  model::RandomModelOptions o;
  o.hp = model::preset("tiny-tp");
  o.hp.family = family;
  o.type = type;
  o.n_threads = 1;
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("cohort-test-{}-{}-{}.gguf", getpid(), model::family_name(family),
                                        gguf::type_name(type)))
                               .string();
  model::write_random_model(o, path);
  return path;
}

// A test suite's model: a random llama-family file of kType, written and
// loaded once for the suite and removed after it.
template <gguf::TensorType kType>
class ModelFileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = write_model(kType, model::Family::llama);
    model_ = model::Model::load(path_);
  }
  static void TearDownTestSuite() {
    model_.reset();
    std::filesystem::remove(path_);
  }
  static inline std::string path_;
  static inline std::unique_ptr<model::Model> model_;
};

// Decoder options on `devices` ("cpu", or a comma list: tensor parallel).
inline DecoderOptions options_on(const std::string& devices) {
  DecoderOptions o;
  o.device = devices;
  if (devices.find(',') != std::string::npos) o.split_mode = "tensor";
  return o;
}

constexpr int kPrefillA = 70, kPrefillB = 45, kDecodeSteps = 12;

// How a workload drives the decoder: decode(); submit() then wait(); or
// submit() and wait() with each step's logits copied only after the next
// step's wait(), the longest that wait() says they stay valid (the server
// reads them while the next step computes).
// decode(), submit() then wait(), submit() with the previous step's logits
// read after the next submit(), or decode() after warm_up(4).
enum class Drive { decode, submit, overlap, warmed };

// Two sequences of random tokens (from `seed`) prefilled together in one
// batch (micro-batches of 32; of the first sequence's rows every
// `logits_every`-th wants logits, of the second every row), then decoded
// together for `steps` steps.
struct Workload {
  int prefill_a, prefill_b, steps;
  uint32_t seed;
  int logits_every;
};

// Every row's logits of `w`, in order. `o` gives the device, split and
// cache flags; the sizes are set here. With `best` (and best_k > 0), each
// step asks for its rows' best_k best logits, collected there instead.
inline std::vector<float> workload_logits(const model::Model& m, DecoderOptions o, const Workload& w,
                                          Drive drive, int best_k = 0, std::vector<TokenLogit>* best = nullptr) {
  o.n_ctx = 256;
  o.n_batch = 128;
  o.n_ubatch = 32;
  o.n_threads = 2;
  Decoder dec(m, o);
  if (drive == Drive::warmed) dec.warm_up(4);
  std::mt19937 rng(w.seed);
  std::uniform_int_distribution<int32_t> tok(3, dec.n_vocab() - 1);
  dec.reserve(0, w.prefill_a + w.steps);
  dec.reserve(1, w.prefill_b + w.steps);
  Batch b;
  for (int i = 0; i < w.prefill_a; ++i) b.add(tok(rng), i, 0, i % w.logits_every == 0);
  for (int i = 0; i < w.prefill_b; ++i) b.add(tok(rng), i, 1, true);
  std::vector<float> out;
  std::span<const float> held;  // Drive::overlap: the previous step's logits, read late
  for (int step = 0; step <= w.steps; ++step) {
    if (step > 0) {
      b.clear();
      b.add(tok(rng), w.prefill_a + step - 1, 0, true);
      b.add(tok(rng), w.prefill_b + step - 1, 1, true);
    }
    b.best_k = best_k;
    std::span<const float> l;
    if (drive == Drive::decode || drive == Drive::warmed) {
      l = dec.decode(b);
    } else {
      dec.submit(b);
      if (drive == Drive::overlap) {
        const std::span<const float> next = dec.wait();
        out.insert(out.end(), held.begin(), held.end());  // still valid after the next step
        held = next;
        continue;
      }
      l = dec.wait();
    }
    if (best != nullptr) {
      best->insert(best->end(), dec.best().begin(), dec.best().end());
      continue;
    }
    out.insert(out.end(), l.begin(), l.end());
  }
  out.insert(out.end(), held.begin(), held.end());
  return out;
}

// kPrefillA and kPrefillB tokens, every row with logits, then kDecodeSteps
// steps, decoded.
inline std::vector<float> two_sequence_logits(const model::Model& m, DecoderOptions o) {
  return workload_logits(m, std::move(o), {kPrefillA, kPrefillB, kDecodeSteps, 7, 1}, Drive::decode);
}

// 60 and 40 tokens, some of the first's rows without logits, then 8 steps,
// driven as `drive` says.
inline std::vector<float> stepped_logits(const model::Model& m, DecoderOptions o, Drive drive) {
  return workload_logits(m, std::move(o), {60, 40, 8, 11, 7}, drive);
}

// The best k of each row of `logits` as the host sampler selects them.
inline std::vector<TokenLogit> select_rows(const std::vector<float>& logits, size_t n_vocab, int k) {
  const std::vector<uint8_t> skip(n_vocab, 0);
  std::vector<TokenLogit> out;
  Candidates c;
  for (size_t r = 0; r < logits.size() / n_vocab; ++r) {
    select_top_k(c, std::span<const float>(logits).subspan(r * n_vocab, n_vocab), k, {}, skip);
    out.insert(out.end(), c.data.begin(), c.data.begin() + k);
  }
  return out;
}

// Pairs equal in id and logit (+0 and -0 alike, as the sampler sees them).
inline bool same_best(const std::vector<TokenLogit>& a, const std::vector<TokenLogit>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const TokenLogit& x, const TokenLogit& y) { return x.id == y.id && x.logit == y.logit; });
}

struct Agreement {
  double mean_kld = 0.0;
  int disagree = 0;
  int misses = 0;  // disagreements that are not near-ties
};

// KL(ref || ours) per row, averaged; a top-1 disagreement is a near-tie when
// ref's two logits lie closer than a quarter of ref's median top-1/top-2 gap.
inline Agreement agree(const std::vector<float>& ref, const std::vector<float>& ours, size_t n_vocab) {
  const size_t n_rows = ref.size() / n_vocab;
  std::vector<double> gaps;
  for (size_t r = 0; r < n_rows; ++r) {
    std::vector<float> row(ref.begin() + r * n_vocab, ref.begin() + (r + 1) * n_vocab);
    std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<>());
    gaps.push_back(row[0] - row[1]);
  }
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  const double tie = 0.25 * gaps[gaps.size() / 2];
  Agreement a;
  for (size_t r = 0; r < n_rows; ++r) {
    const float* p = ref.data() + r * n_vocab;
    const float* q = ours.data() + r * n_vocab;
    const double mp = *std::max_element(p, p + n_vocab), mq = *std::max_element(q, q + n_vocab);
    double sp = 0.0, sq = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) sp += std::exp(p[i] - mp), sq += std::exp(q[i] - mq);
    double kld = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) {
      const double lp = p[i] - mp - std::log(sp), lq = q[i] - mq - std::log(sq);
      kld += std::exp(lp) * (lp - lq);
    }
    a.mean_kld += kld / static_cast<double>(n_rows);
    const size_t tp = std::max_element(p, p + n_vocab) - p, tq = std::max_element(q, q + n_vocab) - q;
    if (tp != tq) {
      ++a.disagree;
      if (p[tp] - p[tq] >= tie) ++a.misses;
    }
  }
  return a;
}

// The logits of the last token of `prompt` in sequence `seq`, its positions
// from `from` on computed in one batch (those before are in the cache).
inline std::vector<float> prompt_last_logits(Decoder& dec, kv::SeqId seq, std::span<const int32_t> prompt,
                                             int from) {
  Batch b;
  const int n = static_cast<int>(prompt.size());
  for (int p = from; p < n; ++p) b.add(prompt[static_cast<size_t>(p)], p, seq, p + 1 == n);
  const std::span<const float> l = dec.decode(b);
  return {l.begin(), l.end()};
}

// Prompt reuse through copy-on-write (kv::BlockManager): a 26-token prompt
// (a full 16-token block and 10 rows) computed in sequence 0 as 25 tokens
// and then a one-token step, the sequence ended, and the prompt admitted
// again in sequence 1, which computes only its last token (25 positions
// cached: 16 shared, 9 copied). Returns the two last-token logits, which the
// same step over the same cache rows makes equal.
struct ReusedPrompt {
  std::vector<float> computed, reused;
  int n_cached = 0;
};
inline ReusedPrompt reused_prompt_logits(Decoder& dec, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(3, dec.n_vocab() - 1);
  std::vector<int32_t> prompt(26);
  for (int32_t& t : prompt) t = tok(rng);
  ReusedPrompt r;
  dec.blocks().allocate(0, std::span<const int32_t>(prompt).first(25));
  prompt_last_logits(dec, 0, std::span<const int32_t>(prompt).first(25), 0);
  dec.reserve(0, 26);
  r.computed = prompt_last_logits(dec, 0, prompt, 25);
  dec.free_sequence(0);
  r.n_cached = dec.blocks().allocate(1, prompt);
  r.reused = prompt_last_logits(dec, 1, prompt, r.n_cached);
  dec.free_sequence(1);
  return r;
}

}  // namespace cohort::engine
