// The KV row operations a step performs before it writes the cache.
//
// A copy of KV rows between blocks: the first n_rows rows (positions) of
// block src, every layer's K and V, into the same rows of block dst. The
// block manager asks for one when a new sequence reuses part of a block
// (copy-on-write, kv/block_manager.h); the backend performs it before the
// next step writes any KV row (backend::StepInput::kv_copies).
#pragma once

#include <cstdint>

namespace cohort::kv {

struct BlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
  int32_t n_rows = 0;
};

// A row moved by a context shift (BlockManager::shift): every layer's K and
// V of cache row src into row dst (rows as Slot::index), K rotated by
// `delta` positions. RoPE angles are linear in the position, so rotating a
// key of position p by delta gives the key of p + delta; a move with delta 0
// is a plain copy. Moves come in rounds: the moves of one round touch
// distinct rows (none writes a row another reads) and may run at once, and a
// row is written only in a round after every round that reads it.
struct RowMove {
  int32_t src = 0;
  int32_t dst = 0;
  int32_t delta = 0;
};

}  // namespace cohort::kv
