// Randomized property test of BlockManager: thousands of random allocate /
// append / commit / free operations (with prompts drawn so that prefixes
// repeat), checking after every one that
//   - can_allocate / can_append predict exactly whether the act succeeds,
//   - a failed act changes nothing,
//   - ref counts equal block-table references, no block is lost (audit),
//   - a shared prefix holds exactly the prompt's K/V (simulated: a hash of the
//     tokens up to each position, since real K/V depend on the whole prefix),
//     and so do rows copied from a partly reused block once the copies
//     asked for are done (before the next write, as a step does them),
// and that freeing everything returns every block.
#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "kv/block_manager.h"

namespace cohort::kv {
namespace block_manager_property_test {

class Model {
 public:
  Model(int n_blocks, int block_size, uint32_t seed)
      : m_(n_blocks, block_size),
        content_(static_cast<size_t>(n_blocks * block_size), 0),
        rng_(seed) {}

  void step() {
    switch (pick(0, 9)) {
      case 0: case 1: case 2: allocate(); break;
      case 3: case 4: case 5: append(); break;
      case 6: case 7: commit(); break;
      default: free_one(); break;
    }
    ASSERT_EQ(m_.audit(), "");
  }

  void free_all() {
    while (!tokens_.empty()) {
      m_.free(tokens_.begin()->first);
      tokens_.erase(tokens_.begin());
    }
    EXPECT_EQ(m_.n_free_blocks(), m_.n_blocks());
    EXPECT_EQ(m_.n_seqs(), 0);
    EXPECT_EQ(m_.audit(), "");
  }

  int n_prefix_hits() const { return n_prefix_hits_; }
  int n_copies() const { return n_copies_; }
  int n_refusals() const { return n_refusals_; }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Prompts share leading tokens often: a few stems, then a random tail.
  std::vector<int32_t> random_prompt() {
    std::vector<int32_t> t;
    const int stem = pick(0, 3);
    const int n_stem = pick(0, 3 * m_.block_size());
    for (int i = 0; i < n_stem; ++i) t.push_back(stem * 1000 + i);
    const int n_tail = pick(0, 2 * m_.block_size());
    for (int i = 0; i < n_tail; ++i) t.push_back(pick(0, 2));
    return t;
  }

  SeqId random_live_seq() {
    auto it = tokens_.begin();
    std::advance(it, pick(0, static_cast<int>(tokens_.size()) - 1));
    return it->first;
  }

  void allocate() {
    const SeqId seq = next_seq_++;
    const std::vector<int32_t> prompt = random_prompt();
    const int n_free = m_.n_free_blocks();
    if (!m_.can_allocate(seq, prompt)) {
      ++n_refusals_;
      EXPECT_THROW(m_.allocate(seq, prompt), Error);
      EXPECT_EQ(m_.n_free_blocks(), n_free);
      EXPECT_FALSE(m_.contains(seq));
      return;
    }
    const int n_cached = m_.allocate(seq, prompt);
    EXPECT_LT(n_cached, std::max<int>(1, static_cast<int>(prompt.size())));
    if (n_cached > 0) ++n_prefix_hits_;
    const int n_shared = n_cached / m_.block_size() * m_.block_size();
    for (int p = 0; p < n_shared; ++p)  // the shared K/V are this prompt's
      ASSERT_EQ(content_[slot(seq, p)], kv_of(prompt, p)) << "position " << p;
    std::vector<BlockCopy> copies;
    m_.take_copies(copies);
    EXPECT_EQ(copies.size(), n_cached > n_shared ? 1u : 0u);
    pending_.insert(pending_.end(), copies.begin(), copies.end());
    if (n_cached > n_shared) to_check_[seq] = n_cached;
    tokens_[seq] = prompt;
  }

  // What a step does before it writes: the copies asked for since the last
  // step, in order; then the copied rows hold their prompts' K/V.
  void copy_pending() {
    const auto bs = static_cast<size_t>(m_.block_size());
    for (const BlockCopy& c : pending_) {
      for (int r = 0; r < c.n_rows; ++r)
        content_[static_cast<size_t>(c.dst) * bs + static_cast<size_t>(r)] =
            content_[static_cast<size_t>(c.src) * bs + static_cast<size_t>(r)];
      ++n_copies_;
    }
    pending_.clear();
    for (const auto& [seq, n_cached] : to_check_) {
      if (!m_.contains(seq)) continue;
      for (int p = 0; p < n_cached; ++p)
        ASSERT_EQ(content_[slot(seq, p)], kv_of(tokens_[seq], p)) << "copied position " << p;
    }
    to_check_.clear();
  }

  void append() {
    if (tokens_.empty()) return;
    const SeqId seq = random_live_seq();
    const int n_new = pick(0, m_.block_size() + 2);
    const int n_before = m_.n_tokens(seq);
    if (!m_.can_append(seq, n_new)) {
      ++n_refusals_;
      EXPECT_THROW(m_.append(seq, n_new), Error);
      EXPECT_EQ(m_.n_tokens(seq), n_before);
      return;
    }
    m_.append(seq, n_new);
    for (int i = 0; i < n_new; ++i) tokens_[seq].push_back(pick(0, 2));
  }

  // Simulates the forward: writes token ids as "K/V", then commits them.
  void commit() {
    copy_pending();
    if (tokens_.empty()) return;
    const SeqId seq = random_live_seq();
    const int begin = m_.n_committed(seq);
    const int end = begin + pick(0, m_.n_tokens(seq) - begin);
    const std::vector<int32_t>& t = tokens_[seq];
    for (int p = begin; p < end; ++p) content_[slot(seq, p)] = kv_of(t, p);
    m_.commit(seq, std::span(t).subspan(static_cast<size_t>(begin),
                                        static_cast<size_t>(end - begin)));
    EXPECT_EQ(m_.n_committed(seq), end);
  }

  void free_one() {
    if (tokens_.empty()) return;
    const SeqId seq = random_live_seq();
    m_.free(seq);
    tokens_.erase(seq);
  }

  // Stands in for the K/V of position p: a function of tokens [0, p].
  static uint64_t kv_of(const std::vector<int32_t>& t, int p) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (int i = 0; i <= p; ++i)
      h = (h ^ static_cast<uint32_t>(t[static_cast<size_t>(i)])) * 1099511628211ULL;
    return h;
  }

  size_t slot(SeqId seq, int pos) const {
    return static_cast<size_t>(m_.slot_of(seq, pos).index(m_.block_size()));
  }

  BlockManager m_;
  std::vector<uint64_t> content_;  // [n_blocks * block_size] simulated K/V of each slot
  std::map<SeqId, std::vector<int32_t>> tokens_;  // live sequences: all their token ids
  std::mt19937 rng_;
  SeqId next_seq_ = 0;
  std::vector<BlockCopy> pending_;   // copies the next step performs
  std::map<SeqId, int> to_check_;    // sequences with copied rows: n_cached
  int n_prefix_hits_ = 0;
  int n_refusals_ = 0;
  int n_copies_ = 0;
};

TEST(BlockManagerProperty, RandomOperationsKeepEveryInvariant) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    Model model(/*n_blocks=*/48, /*block_size=*/4, seed);
    for (int i = 0; i < 5000; ++i) {
      model.step();
      if (::testing::Test::HasFatalFailure()) return;
    }
    model.free_all();
    // The workload must exercise both sharing and running out of blocks.
    EXPECT_GT(model.n_prefix_hits(), 50) << "seed " << seed;
    EXPECT_GT(model.n_refusals(), 50) << "seed " << seed;
    EXPECT_GT(model.n_copies(), 50) << "seed " << seed;
  }
}

}  // namespace block_manager_property_test
}  // namespace cohort::kv
