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

}  // namespace cohort::kv
