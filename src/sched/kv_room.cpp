#include "sched/kv_room.h"

#include <cassert>
#include <utility>

namespace cohort::sched {

PagedKvRoom::PagedKvRoom(kv::BlockManager& blocks, PromptTokens prompt_tokens)
    : blocks_(blocks), prompt_tokens_(std::move(prompt_tokens)) {}

std::span<const int32_t> PagedKvRoom::prompt_of(RequestId id, int n_prompt) const {
  std::span<const int32_t> prompt = prompt_tokens_(id);
  assert(static_cast<int>(prompt.size()) == n_prompt);
  (void)n_prompt;
  return prompt;
}

bool PagedKvRoom::can_admit(int slot, RequestId id, int n_prompt, bool reuse_prefix) const {
  if (!reuse_prefix) return blocks_.can_allocate(slot, n_prompt);
  return blocks_.can_allocate(slot, prompt_of(id, n_prompt));
}

int PagedKvRoom::admit(int slot, RequestId id, int n_prompt, bool reuse_prefix) {
  if (!reuse_prefix) {
    blocks_.allocate(slot, n_prompt);
    return 0;
  }
  return blocks_.allocate(slot, prompt_of(id, n_prompt));
}

bool PagedKvRoom::can_append(int slot, int n) const { return blocks_.can_append(slot, n); }

void PagedKvRoom::append(int slot, int n) { blocks_.append(slot, n); }

bool PagedKvRoom::can_shift(int slot, int n_keep, int n_discard) const {
  return blocks_.can_shift(slot, n_keep, n_discard);
}

void PagedKvRoom::shift(int slot, int n_keep, int n_discard) { blocks_.shift(slot, n_keep, n_discard); }

void PagedKvRoom::release(int slot) {
  if (blocks_.contains(slot)) blocks_.free(slot);
}

}  // namespace cohort::sched
