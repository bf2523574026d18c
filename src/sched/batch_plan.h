// BatchPlan: what the executor must do for one step, as plain data; and
// StepResult: what it reports back.
//
// The executor handles a plan in this order:
//   1. ended: forget per-slot state (sampler, kept logits) of requests that
//      left; their KV was already released through KvRoom. A slot may appear
//      here and again in `admitted` of the same plan.
//   2. admitted: set up per-slot state (sampler) for requests that entered a
//      slot; their KV sequence (seq id = slot) exists, n_cached prompt
//      positions already hold K/V.
//   3. rows: build one engine Batch, rows in order. A kPrompt row is prompt
//      tokens [pos, pos + n_tokens) at positions pos, pos + 1, ...; only a
//      last_chunk row wants the logits of its last token. A kDecode row is one
//      token, the slot's last sampled token, at position pos, wanting logits.
//      Run the forward (if there are rows).
//   4. keep_logits: copy the final prompt logits of these slots out of the
//      transient output buffer; they wait READY (no token is sampled).
//   5. first_tokens: sample and emit the first token of these slots, from
//      this step's logits when the slot had a last_chunk row in this step,
//      else from its kept copy (the barrier opening).
//   6. kDecode rows: sample and emit the next token of each.
//   7. report a StepResult to Scheduler::on_step_done.
// admitted and ended must be handled even when has_work() is false.
//
// Thread safety: plain data.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/request.h"

namespace cohort::sched {

// Step label for traces and metrics. kPrefill/kDecode are the phases of
// cohort and serial (a barrier step without rows ends a PP phase and is
// labelled kPrefill); mixed and no-cont label a step by what it holds.
enum class Phase : uint8_t { kIdle, kPrefill, kDecode, kMixed };
// Two spellings, each written once: traces use llama-bench's short names,
// metrics and /slots the words users read on a dashboard.
const char* phase_name(Phase phase);   // "idle", "pp", "tg", "mixed"
const char* phase_label(Phase phase);  // "idle", "prefill", "decode", "mixed"
inline constexpr Phase kPhases[] = {Phase::kIdle, Phase::kPrefill, Phase::kDecode, Phase::kMixed};

enum class RowKind : uint8_t { kPrompt, kDecode };
const char* kind_name(RowKind kind);  // "pp", "tg"

// One slot's contribution to the step's batch.
struct PlanRow {
  int slot = -1;
  RequestId id = kNoRequest;
  RowKind kind = RowKind::kPrompt;
  int pos = 0;              // position of the first token
  int n_tokens = 0;         // kPrompt: >= 1; kDecode: 1
  bool last_chunk = false;  // kPrompt: completes the prompt, its last row wants logits
};

struct SlotRef {
  int slot = -1;
  RequestId id = kNoRequest;
};

struct Admission {
  int slot = -1;
  RequestId id = kNoRequest;
  int n_cached = 0;  // prompt tokens already in the KV cache (prefix reuse)
};

struct Ending {
  int slot = -1;  // -1 if it never left the queue
  RequestId id = kNoRequest;
  EndReason reason = EndReason::kStop;
};

struct BatchPlan {
  int64_t step = 0;  // counts steps with work, from 0
  Phase phase = Phase::kIdle;
  std::vector<Ending> ended;       // left since the previous plan
  std::vector<Admission> admitted;
  std::vector<PlanRow> rows;       // batch order; at most one row per slot
  std::vector<SlotRef> keep_logits;
  std::vector<SlotRef> first_tokens;
  std::vector<SlotRef> parked;     // DECODE members held out while a PP phase runs
  std::vector<SlotRef> unparked;   // they decode again from the next TG step
  std::vector<SlotRef> shifted;    // their context was shifted for this step's decode row

  int n_tokens() const;                    // sum of rows' n_tokens (<= -b)
  bool has_work() const { return !rows.empty() || !first_tokens.empty(); }
  bool has_kind(RowKind kind) const;
  const PlanRow* row_of(int slot) const;  // nullptr if the slot has no row
  bool samples_first(int slot) const;
  // Empties every list, keeping capacity (no allocation per step).
  void clear();
};

// What the executor reports after handling a plan. The forward is
// all-or-nothing (engine::Decoder::decode changes nothing when it throws), so
// every row's tokens count as processed unless `failed` is set.
struct StepResult {
  // The forward failed: nothing of the plan happened; every request with a
  // row or a first token in it ends with EndReason::kError.
  bool failed = false;
  // Slots whose token sampled in this step is EOS or completes a stop string.
  // REQUIRES: the slot sampled in this step (first token or decode row).
  std::vector<int> stopped;
  // Slots whose request failed in this step (e.g. sampling); they end with
  // EndReason::kError.
  std::vector<int> failed_slots;

  void clear() {
    failed = false;
    stopped.clear();
    failed_slots.clear();
  }
};

}  // namespace cohort::sched
