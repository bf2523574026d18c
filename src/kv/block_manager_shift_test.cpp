// BlockManager::shift (context shift): which rows land where, that the moves
// of a round may run at once, that shared blocks are never written, and that
// the accounting stays sound through random shifts, appends and frees.
#include <map>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "kv/block_manager.h"
#include "kv/kv_testing.h"

namespace cohort::kv {
namespace block_manager_shift_test {

using testing::iota_tokens;

// What a cache row holds in this model of the device: the position whose K/V
// a prefill wrote there, and the rotation applied since.
struct Row {
  int pos = -1;
  int rotation = 0;
  bool operator==(const Row&) const = default;
};

// A cache that records which position each row holds, and performs moves
// round by round as a device would: all reads of a round before its writes.
class RowModel {
 public:
  void write(const BlockManager& m, SeqId seq, int first, int n) {
    for (int p = first; p < first + n; ++p) rows_[m.slot_of(seq, p).index(m.block_size())] = {p, 0};
  }

  void perform(const std::vector<RowMove>& moves, const std::vector<int32_t>& round_ends) {
    size_t begin = 0;
    for (int32_t end : round_ends) {
      std::set<int32_t> written, read;
      std::vector<std::pair<int32_t, Row>> out;
      for (size_t i = begin; i < static_cast<size_t>(end); ++i) {
        const RowMove& mv = moves[i];
        ASSERT_TRUE(written.insert(mv.dst).second) << "two moves of a round write row " << mv.dst;
        read.insert(mv.src);
        const Row r = rows_.at(mv.src);
        out.push_back({mv.dst, Row{r.pos, r.rotation + mv.delta}});
      }
      for (int32_t w : written) ASSERT_FALSE(read.count(w)) << "a round reads row " << w << " it writes";
      for (const auto& [dst, r] : out) rows_[dst] = r;
      begin = static_cast<size_t>(end);
    }
    ASSERT_EQ(begin, moves.size());
  }

  Row at(const BlockManager& m, SeqId seq, int pos) const {
    auto it = rows_.find(m.slot_of(seq, pos).index(m.block_size()));
    return it == rows_.end() ? Row{} : it->second;
  }

 private:
  std::map<int64_t, Row> rows_;
};

// After shifting a sequence that held positions 0 .. n - 1 by (keep, discard):
// position p holds old position p (p < keep, unrotated) or p + discard,
// rotated by -discard.
void expect_shifted(const BlockManager& m, const RowModel& rows, SeqId seq, int keep, int discard) {
  for (int p = 0; p < m.n_committed(seq); ++p) {
    const Row want = p < keep ? Row{p, 0} : Row{p + discard, -discard};
    EXPECT_EQ(rows.at(m, seq, p), want) << "position " << p;
  }
}

TEST(BlockManagerShift, RowsMoveDownAndRotateByTheDiscardedCount) {
  for (const auto& [n, keep, discard] : std::vector<std::tuple<int, int, int>>{
           {40, 1, 19}, {40, 0, 20}, {40, 17, 3}, {33, 16, 1}, {64, 5, 58}, {40, 4, 36}}) {
    BlockManager m(16, 16);
    m.allocate(0, n);
    m.commit(0, iota_tokens(n));
    RowModel rows;
    rows.write(m, 0, 0, n);
    ASSERT_TRUE(m.can_shift(0, keep, discard));
    const int free_before = m.n_free_blocks();
    m.shift(0, keep, discard);
    std::vector<RowMove> moves;
    std::vector<int32_t> ends;
    m.take_moves(moves, ends);
    rows.perform(moves, ends);
    EXPECT_EQ(m.n_committed(0), n - discard);
    EXPECT_EQ(m.n_tokens(0), n - discard);
    EXPECT_EQ(m.n_free_blocks(), free_before + m.n_blocks_for(n) - m.n_blocks_for(n - discard));
    expect_shifted(m, rows, 0, keep, discard);
    EXPECT_EQ(m.audit(), "");
    m.take_moves(moves, ends);
    EXPECT_TRUE(moves.empty() && ends.empty());
  }
}

TEST(BlockManagerShift, SharedBlocksAreReplacedNotWritten) {
  BlockManager m(16, 4);
  const std::vector<int32_t> prompt = iota_tokens(13);
  m.allocate(0, prompt);
  m.commit(0, prompt);
  ASSERT_EQ(m.allocate(1, prompt), 12);  // three full blocks shared
  m.commit(1, std::span(prompt).subspan(12));
  const std::vector<BlockId> other(m.block_table(1).begin(), m.block_table(1).end());
  RowModel rows;
  rows.write(m, 0, 0, 13);
  m.shift(0, 2, 5);
  std::vector<RowMove> moves;
  std::vector<int32_t> ends;
  m.take_moves(moves, ends);
  for (const RowMove& mv : moves) {
    for (BlockId b : std::span(other).first(3)) {
      EXPECT_NE(mv.dst / 4, b) << "a move writes block " << b << " of the other sequence";
    }
  }
  rows.perform(moves, ends);
  expect_shifted(m, rows, 0, 2, 5);
  EXPECT_EQ(m.block_table(1)[0], other[0]);
  EXPECT_NE(m.block_table(0)[0], other[0]);  // copied: its rows 2, 3 change
  EXPECT_EQ(m.audit(), "");
  // The other sequence's prefix is still found; the shifted one's rows are not.
  EXPECT_EQ(m.match_prefix(prompt), 12);
  m.free(1);
  m.free(0);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManagerShift, AShiftedSequenceRegistersNothing) {
  BlockManager m(8, 4);
  const std::vector<int32_t> prompt = iota_tokens(8);
  m.allocate(0, prompt);
  m.commit(0, prompt);
  m.shift(0, 0, 4);  // its own registered block is rewritten: forgotten
  EXPECT_EQ(m.match_prefix(prompt), 0);
  m.append(0, 6);
  m.commit(0, iota_tokens(6, 500));
  EXPECT_EQ(m.match_prefix(iota_tokens(8, 104)), 0);
  m.free(0);
  // Only the block the shift released unchanged (positions 4-7) stays cached.
  EXPECT_EQ(m.n_cached_blocks(), 1);
  EXPECT_EQ(m.n_free_blocks(), 8);
}

TEST(BlockManagerShift, RefusalsChangeNothing) {
  BlockManager m(2, 4);
  m.allocate(0, 8);
  EXPECT_FALSE(m.can_shift(0, 0, 4)) << "positions reserved but not committed";
  m.commit(0, iota_tokens(8));
  EXPECT_FALSE(m.can_shift(0, 0, 0));
  EXPECT_FALSE(m.can_shift(0, -1, 2));
  EXPECT_FALSE(m.can_shift(0, 5, 4));
  EXPECT_FALSE(m.can_shift(1, 0, 4));
  EXPECT_TRUE(m.can_shift(0, 4, 4));
  const std::string why = [&] {
    try {
      m.shift(0, 6, 4);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(why.find("sequence 0"), std::string::npos) << why;
  EXPECT_EQ(m.n_committed(0), 8);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManagerShift, RandomShiftsKeepTheAccountingSound) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    BlockManager m(40, 4);
    RowModel rows;
    const std::vector<int32_t> prompt = iota_tokens(9 + static_cast<int>(rng() % 20));
    m.allocate(0, prompt);
    m.commit(0, prompt);
    m.allocate(1, prompt);  // shares a prefix with 0 where it can
    m.commit(1, std::span(prompt).subspan(static_cast<size_t>(m.n_committed(1))));
    rows.write(m, 0, 0, m.n_committed(0));
    for (int round = 0; round < 6; ++round) {
      const int n = m.n_committed(0);
      if (n == 0) break;
      const int keep = static_cast<int>(rng() % static_cast<unsigned>(n / 2 + 1));
      const int discard = 1 + static_cast<int>(rng() % static_cast<unsigned>(n - keep));
      ASSERT_TRUE(m.can_shift(0, keep, discard));
      std::vector<Row> want;
      for (int p = 0; p < n - discard; ++p) {
        const Row r = rows.at(m, 0, p < keep ? p : p + discard);
        want.push_back(p < keep ? r : Row{r.pos, r.rotation - discard});
      }
      m.shift(0, keep, discard);
      std::vector<RowMove> moves;
      std::vector<int32_t> ends;
      m.take_moves(moves, ends);
      rows.perform(moves, ends);
      for (int p = 0; p < n - discard; ++p) ASSERT_EQ(rows.at(m, 0, p), want[static_cast<size_t>(p)]) << p;
      ASSERT_EQ(m.audit(), "");
      const int grow = static_cast<int>(rng() % 9);
      m.append(0, grow);
      m.commit(0, iota_tokens(grow, 1000));
      rows.write(m, 0, n - discard, grow);
    }
    m.free(0);
    m.free(1);
    ASSERT_EQ(m.audit(), "");
    ASSERT_EQ(m.n_free_blocks(), 40);
  }
}

}  // namespace block_manager_shift_test
}  // namespace cohort::kv
