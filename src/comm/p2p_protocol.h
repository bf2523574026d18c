// The token arithmetic of the p2p all-reduce (backend/cuda/p2p_allreduce.h
// has the protocol), in one place for the kernel, the host and the CPU
// tests that check it across the wrap at 2^32.
//
// Call k of a rank (k = the previous call's token + 1, modulo 2^32) uses
// buffer slot k % 2. A rank announces its contribution to a block by writing
// k into that block's flag in every rank's flags of slot k % 2, and reads
// the sums once each rank's flag in its own slot holds k. A flag left by an
// earlier call of the same slot holds k - 2 (never k, across the wrap too);
// before any call, the flags are those p2p_history_flag gives, as if calls
// `last - 1` and `last` had run.
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace cohort::comm {

COHORT_HOST_DEVICE inline uint32_t p2p_next_token(uint32_t last) { return last + 1u; }
COHORT_HOST_DEVICE inline int p2p_slot(uint32_t token) { return static_cast<int>(token & 1u); }
// Whether a flag holding `flag` announces the call whose token is `token`.
COHORT_HOST_DEVICE inline bool p2p_announces(uint32_t flag, uint32_t token) { return flag == token; }

// The flags of `slot` after calls up to token `last`: the last token that
// used the slot.
inline uint32_t p2p_history_flag(uint32_t last, int slot) {
  return p2p_slot(last) == slot ? last : last - 1u;
}

}  // namespace cohort::comm
