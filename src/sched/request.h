// A request as the scheduler sees it: token counts and a state, no text.
//
// Lifecycle (DESIGN.md "Scheduling"):
//
//   QUEUED ──admit──► PREFILL ──last prompt chunk──► READY ──barrier──► DECODE
//                        │   (cohort, serial: wait here with final logits)   │
//                        └──────── last chunk, first token sampled at once ──┘
//                                          (mixed, no-cont)
//   any state ──► FINISHED (stop, length) | CANCELLED (cancel, error, no KV room)
//
// A prompt-only request (an embedding) prefills like any prompt, joining
// the phase its policy gives it, and ends FINISHED (kStop) with its last
// prompt chunk: it never becomes READY for a barrier, samples nothing and
// keeps no logits. It reuses no cached prefix, since every prompt position
// must be computed for its hidden states.
//
// READY means: the prompt's K/V are written, the logits of its last token are
// kept (copied out of the transient output buffer by the executor), nothing
// has been sampled. A request in DECODE has sampled n_generated tokens; the
// last of them is the input of its next decode row, at position
// n_prompt + n_generated - 1.
//
// Request ids are assigned at submission in increasing order, so comparing
// ids compares arrival order.
//
// Thread safety: plain data.
#pragma once

#include <cstdint>

namespace cohort::sched {

using RequestId = int64_t;
inline constexpr RequestId kNoRequest = -1;

// max_new_tokens value for "until a stop condition" (llama.cpp's -n -1).
inline constexpr int kNoLimit = -1;

// Context shift (llama-server's --context-shift): a decoding request whose
// next position would reach n_ctx - 1 first drops n_discard positions after
// its first n_keep (half of the rest when n_discard is 0, at most all but
// one of them) and moves the later ones down (kv::BlockManager::shift), so
// that generation goes on past a full context.
struct ContextShift {
  int n_ctx = 0;      // positions its sequence may hold; 0: no shift
  int n_keep = 0;     // [0, n_ctx - 4]
  int n_discard = 0;  // >= 0
};

// What a client asks for. The server keeps the tokens; the scheduler only
// needs counts.
struct RequestSpec {
  int n_prompt = 0;               // prompt tokens, >= 1
  int max_new_tokens = kNoLimit;  // >= 1, or kNoLimit
  bool prompt_only = false;       // ends with its prompt (see above); max_new_tokens is unused
  ContextShift shift{};
};

// Throws cohort::Error naming the field if `spec` is not valid.
void validate(const RequestSpec& spec);

enum class RequestState : uint8_t { kQueued, kPrefill, kReady, kDecode, kFinished, kCancelled };

// Why a request left the scheduler. kStop and kLength end in FINISHED, the
// others in CANCELLED.
enum class EndReason : uint8_t {
  kStop,       // the executor reported EOS or a stop string
  kLength,     // max_new_tokens reached
  kCancelled,  // cancel() (client gone, or asked)
  kError,      // the executor reported a failure for it
  kNoKvRoom,   // the KV cache cannot hold it (prompt too long, or no room to decode)
};

const char* state_name(RequestState state);  // "queued", "prefill", ...
const char* reason_name(EndReason reason);   // "stop", "length", "cancelled", ...
RequestState end_state(EndReason reason);    // kFinished or kCancelled

struct Request {
  RequestId id = kNoRequest;
  RequestSpec spec;
  RequestState state = RequestState::kQueued;
  int slot = -1;         // [0, n_slots) once admitted
  int n_cached = 0;      // prompt tokens reused from the prefix cache, [0, n_prompt - 1]
  int n_prefilled = 0;   // prompt positions whose K/V are written, [n_cached, n_prompt]
  int n_generated = 0;   // tokens sampled so far
  bool parked = false;   // DECODE, but held out of batches while a PP phase runs
  int n_shifted = 0;     // positions dropped by context shifts

  int n_prompt() const { return spec.n_prompt; }
  int prompt_left() const { return spec.n_prompt - n_prefilled; }
  // Position of the next row: the next prompt token, or the last sampled token.
  int next_pos() const {
    return state == RequestState::kDecode ? spec.n_prompt + n_generated - 1 - n_shifted : n_prefilled;
  }
  // Whether its next decode row must shift the context first.
  bool must_shift() const {
    return spec.shift.n_ctx > 0 && state == RequestState::kDecode && next_pos() + 1 >= spec.shift.n_ctx;
  }
  // How many positions the next shift drops (ContextShift).
  int shift_discard() const;
  bool reached_limit() const {
    return spec.max_new_tokens != kNoLimit && n_generated >= spec.max_new_tokens;
  }
};

}  // namespace cohort::sched
