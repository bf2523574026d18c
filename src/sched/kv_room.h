// KvRoom: the scheduler's window onto the KV cache, as query/act pairs.
//
// Why an interface and not free-block counts in the state: prefix reuse. How
// many prompt tokens are already cached is only known when the sequence is
// allocated (a cached block may be evicted between submission and admission),
// and the plan's first prompt position depends on it. So admission is an act
// that returns n_cached, and the scheduler performs it while planning.
//
// Reservation rule: admit() reserves room for the whole prompt; every decode
// row reserves its one position through append() while the step is planned.
// So the engine's forward never needs to grow a sequence itself, and running
// out of blocks shows up here, as a false query, never inside the forward.
// The sequence id of a slot's request is the slot index.
//
// PagedKvRoom is the production implementation over kv::BlockManager
// (engine::Decoder::blocks()); tests may use it with a BlockManager of their
// own, or fake the interface.
//
// Thread safety: none; called by the engine thread only, from Scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "kv/block_manager.h"
#include "sched/request.h"

namespace cohort::sched {

class KvRoom {
 public:
  virtual ~KvRoom() = default;

  // Whether a sequence for the prompt of request `id` (n_prompt tokens) can
  // be created in `slot` now; with reuse_prefix false, as a fresh sequence
  // that shares no cached block. REQUIRES: the slot holds no sequence.
  virtual bool can_admit(int slot, RequestId id, int n_prompt, bool reuse_prefix) const = 0;
  // Creates it with room for the whole prompt; returns how many leading
  // prompt tokens are already cached, in [0, n_prompt - 1] (0 without
  // reuse_prefix). REQUIRES: can_admit(slot, id, n_prompt, reuse_prefix).
  virtual int admit(int slot, RequestId id, int n_prompt, bool reuse_prefix) = 0;

  // Room for n more positions at the end of the slot's sequence.
  virtual bool can_append(int slot, int n) const = 0;
  // REQUIRES: can_append(slot, n).
  virtual void append(int slot, int n) = 0;

  // Drops n_discard positions of the slot's sequence after its first n_keep
  // and moves the rest down (kv::BlockManager::shift).
  virtual bool can_shift(int slot, int n_keep, int n_discard) const = 0;
  // REQUIRES: can_shift(slot, n_keep, n_discard).
  virtual void shift(int slot, int n_keep, int n_discard) = 0;

  // Frees the slot's sequence (no-op if it has none).
  virtual void release(int slot) = 0;
};

// KvRoom over a kv::BlockManager, with prefix reuse. The prompt's token ids
// come from `prompt_tokens` (the server owns them); the returned span must
// hold n_prompt tokens and stay valid during the call.
class PagedKvRoom final : public KvRoom {
 public:
  using PromptTokens = std::function<std::span<const int32_t>(RequestId)>;

  // `blocks` must outlive this object.
  PagedKvRoom(kv::BlockManager& blocks, PromptTokens prompt_tokens);

  bool can_admit(int slot, RequestId id, int n_prompt, bool reuse_prefix) const override;
  int admit(int slot, RequestId id, int n_prompt, bool reuse_prefix) override;
  bool can_append(int slot, int n) const override;
  void append(int slot, int n) override;
  bool can_shift(int slot, int n_keep, int n_discard) const override;
  void shift(int slot, int n_keep, int n_discard) override;
  void release(int slot) override;

 private:
  std::span<const int32_t> prompt_of(RequestId id, int n_prompt) const;

  kv::BlockManager& blocks_;
  PromptTokens prompt_tokens_;
};

}  // namespace cohort::sched
