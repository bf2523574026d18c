// The p2p all-reduce's token arithmetic (comm/p2p_protocol.h), checked by
// simulating the protocol on the CPU: ranks whose blocks write their
// contribution and tokens into every peer, wait for every peer's token and
// read, interleaved at random, for histories that make the tokens wrap at
// 2^32; and with large calls among them, whose contributions go into one
// large buffer per rank after the rank has seen every peer's done word of its
// previous call (copy engines, then the same tokens). A read never sees a
// contribution of another call, and no schedule deadlocks. Three broken
// variants (one buffer slot; flags left at zero where the first token is 0;
// large copies without the done words) show that the simulation catches what
// it checks.
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "comm/p2p_protocol.h"

namespace cohort::comm {
namespace p2p_protocol_test {

struct Protocol {
  std::function<int(uint32_t)> slot = p2p_slot;
  std::function<uint32_t(uint32_t, int)> initial_flag = p2p_history_flag;
  bool done_words = true;  // a large call copies only once every peer finished the call before
};

// Which calls are large (the same on every rank: calls are collective).
using Pattern = std::function<bool(int call)>;
bool all_small(int) { return false; }

// One block of one rank in its current call: writes (data then token) to
// every rank, waits for every rank's token, reads every contribution.
struct BlockState {
  int step = 0;  // 0..R-1 data writes, R..2R-1 token writes, 2R wait+read, 2R+1 done
};

class Simulation {
 public:
  Simulation(int n_ranks, int n_blocks, uint32_t history, Protocol p, Pattern large = all_small)
      : R_(n_ranks), B_(n_blocks), p_(std::move(p)), large_(std::move(large)), last_(n_ranks, history),
        call_(n_ranks, 0), prep_(n_ranks, 0), blocks_(n_ranks, std::vector<BlockState>(n_blocks)),
        flags_(static_cast<size_t>(2 * R_ * R_ * B_)), data_(static_cast<size_t>(2 * R_ * R_ * B_), -1),
        done_(static_cast<size_t>(R_ * R_), history), large_data_(static_cast<size_t>(R_ * R_ * B_), -1) {
    for (int r = 0; r < R_; ++r) {
      for (int slot = 0; slot < 2; ++slot)
        for (int s = 0; s < R_; ++s)
          for (int b = 0; b < B_; ++b) flag(r, slot, s, b) = p_.initial_flag(history, slot);
      start_call(r);
    }
  }

  // Runs `calls` calls on every rank under a random schedule. Returns "" or
  // what went wrong.
  std::string run(int calls, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<int, int>> enabled;
    for (;;) {
      enabled.clear();
      for (int r = 0; r < R_; ++r) {
        if (call_[r] == calls) continue;
        if (prep_[r] <= R_) {  // a large call's wait and copies come before its kernel
          if (can_prepare(r)) enabled.emplace_back(r, -1);
          continue;
        }
        for (int b = 0; b < B_; ++b)
          if (can_step(r, b)) enabled.emplace_back(r, b);
      }
      if (enabled.empty()) break;
      const auto [r, b] = enabled[std::uniform_int_distribution<size_t>(0, enabled.size() - 1)(rng)];
      if (b < 0) {
        prepare(r);
      } else if (std::string e = step(r, b); !e.empty()) {
        return e;
      }
    }
    for (int r = 0; r < R_; ++r) {
      if (call_[r] != calls) return fmt::format("deadlock: rank {} stopped at call {}", r, call_[r]);
    }
    return "";
  }

 private:
  uint32_t& flag(int owner, int slot, int from, int b) {
    return flags_[static_cast<size_t>(((owner * 2 + slot) * R_ + from) * B_ + b)];
  }
  int64_t& data(int owner, int slot, int from, int b) {
    return data_[static_cast<size_t>(((owner * 2 + slot) * R_ + from) * B_ + b)];
  }
  uint32_t& done(int owner, int from) { return done_[static_cast<size_t>(owner * R_ + from)]; }
  int64_t& large_data(int owner, int from, int b) { return large_data_[static_cast<size_t>((owner * R_ + from) * B_ + b)]; }
  bool is_large(int r) const { return large_(call_[r]); }

  // A small call's blocks start with their stores; a large call's start at
  // their tokens, after the wait (prep_ 0) and one copy per rank (1..R).
  void start_call(int r) {
    prep_[r] = is_large(r) ? 0 : R_ + 1;
    for (BlockState& st : blocks_[r]) st.step = is_large(r) ? R_ : 0;
  }
  bool can_prepare(int r) {
    if (prep_[r] > 0 || !p_.done_words) return true;
    for (int s = 0; s < R_; ++s)
      if (done(r, s) != last_[r]) return false;
    return true;
  }
  void prepare(int r) {
    if (prep_[r] > 0) {
      for (int b = 0; b < B_; ++b) large_data(prep_[r] - 1, r, b) = value(r, b);
    }
    ++prep_[r];
  }
  uint32_t token(int r) const { return p2p_next_token(last_[r]); }
  // What rank r contributes to block b in its current call.
  int64_t value(int r, int b) const { return (int64_t{call_[r]} * R_ + r) * B_ + b; }

  bool can_step(int r, int b) {
    const BlockState& st = blocks_[r][b];
    if (st.step > 2 * R_) return false;  // done, waiting for the call's other blocks
    if (st.step < 2 * R_) return true;
    const uint32_t k = token(r);
    for (int s = 0; s < R_; ++s)
      if (!p2p_announces(flag(r, p_.slot(k), s, b), k)) return false;
    return true;
  }

  std::string step(int r, int b) {
    BlockState& st = blocks_[r][b];
    const uint32_t k = token(r);
    const int slot = p_.slot(k);
    if (st.step < R_) {
      data(st.step, slot, r, b) = value(r, b);
    } else if (st.step < 2 * R_) {
      flag(st.step - R_, slot, r, b) = k;
    } else {
      for (int s = 0; s < R_; ++s) {
        const int64_t want = (int64_t{call_[r]} * R_ + s) * B_ + b;
        const int64_t got = is_large(r) ? large_data(r, s, b) : data(r, slot, s, b);
        if (got != want) {
          return fmt::format("rank {} call {} (token {:#x}, {}) block {} read {} from rank {}, not {}", r, call_[r], k,
                             is_large(r) ? "large" : "small", b, got, s, want);
        }
      }
    }
    ++st.step;
    for (const BlockState& other : blocks_[r])
      if (other.step <= 2 * R_) return "";
    // The call's last block is done: the counter moves on and every rank's
    // done word for r says so (stream order starts the next call only now).
    last_[r] = k;
    for (int s = 0; s < R_; ++s) done(s, r) = k;
    ++call_[r];
    start_call(r);
    return "";
  }

  const int R_, B_;
  const Protocol p_;
  const Pattern large_;
  std::vector<uint32_t> last_;
  std::vector<int> call_;
  std::vector<int> prep_;
  std::vector<std::vector<BlockState>> blocks_;
  std::vector<uint32_t> flags_;  // [owner][slot][from][block]
  std::vector<int64_t> data_;    // [owner][slot][from][block]
  std::vector<uint32_t> done_;   // [owner][from]
  std::vector<int64_t> large_data_;  // [owner][from][block]
};

// The first failure over many schedules, or "".
std::string explore(Protocol p, uint32_t history, Pattern large = all_small, int schedules = 300) {
  for (int R = 2; R <= 4; ++R) {
    for (uint32_t seed = 0; seed < static_cast<uint32_t>(schedules); ++seed) {
      Simulation sim(R, 2, history, p, large);
      if (std::string e = sim.run(8, seed); !e.empty()) return fmt::format("{} ranks, seed {}: {}", R, seed, e);
    }
  }
  return "";
}

TEST(P2pProtocol, TokensAreFreshAndSlotsAlternateAcrossTheWrap) {
  for (uint32_t last : {0u, 1u, 0xfffffffdu, 0xfffffffeu, 0xffffffffu}) {
    const uint32_t k = p2p_next_token(last);
    EXPECT_EQ(p2p_slot(k), 1 - p2p_slot(last)) << last;
    // the flag a slot holds from the call before never announces this one
    EXPECT_FALSE(p2p_announces(p2p_history_flag(last, p2p_slot(k)), k)) << last;
    EXPECT_TRUE(p2p_announces(k, k));
  }
  EXPECT_EQ(p2p_next_token(0xffffffffu), 0u);
}

TEST(P2pProtocol, NoStaleReadNorDeadlockUnderAnySchedule) {
  for (uint32_t history : {0u, 0xfffffffau, 0xfffffffeu, 0xffffffffu}) {
    SCOPED_TRACE(fmt::format("history {:#x}", history));
    EXPECT_EQ(explore(Protocol{}, history), "");
  }
}

// Large calls alone, back to back, and mixed with small ones in both orders.
TEST(P2pProtocol, LargeCallsAmongSmallOnesNeitherReadStaleNorDeadlock) {
  const std::vector<std::pair<const char*, Pattern>> patterns = {
      {"all large", [](int) { return true; }},
      {"alternating", [](int c) { return c % 2 == 1; }},
      {"pairs", [](int c) { return c % 4 >= 2; }},
      {"irregular", [](int c) { return c % 3 == 0 || c == 4; }}};
  for (const auto& [name, pattern] : patterns) {
    for (uint32_t history : {0u, 0xfffffffeu, 0xffffffffu}) {
      SCOPED_TRACE(fmt::format("{}, history {:#x}", name, history));
      EXPECT_EQ(explore(Protocol{}, history, pattern), "");
    }
  }
}

TEST(P2pProtocol, TheSimulationCatchesBrokenVariants) {
  Protocol one_slot;
  one_slot.slot = [](uint32_t) { return 0; };
  EXPECT_NE(explore(one_slot, 0), "") << "one slot: a fast rank overwrites what a slow one reads";
  Protocol zero_flags;
  zero_flags.initial_flag = [](uint32_t, int) { return 0u; };
  EXPECT_NE(explore(zero_flags, 0xffffffffu), "") << "flags of 0 announce a first token of 0";
  EXPECT_EQ(explore(zero_flags, 0), "") << "zeroed flags are right for a fresh group";
  Protocol no_done_words;
  no_done_words.done_words = false;
  EXPECT_NE(explore(no_done_words, 0, [](int) { return true; }), "")
      << "large copies without the done words overwrite what a slow rank reads";
}

}  // namespace p2p_protocol_test
}  // namespace cohort::comm
