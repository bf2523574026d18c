#include "tokenizer/string_index.h"

#include <cassert>
#include <functional>

namespace cohort::tokenizer {

uint32_t StringIndex::hash_of(std::string_view key) {
  return static_cast<uint32_t>(std::hash<std::string_view>{}(key));
}

void StringIndex::reserve(size_t n_keys) {
  size_t cap = 16;
  while (cap < 2 * n_keys) cap *= 2;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  for (const Slot& s : old) {
    if (s.id == kAbsent) continue;
    const size_t i = probe(std::string_view(arena_.data() + s.offset, s.length), s.hash);
    slots_[i] = s;
  }
}

void StringIndex::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

size_t StringIndex::probe(std::string_view key, uint32_t hash) const {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash) & mask;
  for (;;) {
    const Slot& s = slots_[i];
    if (s.id == kAbsent) return i;
    if (s.hash == hash && s.length == key.size() &&
        std::string_view(arena_.data() + s.offset, s.length) == key) {
      return i;
    }
    i = (i + 1) & mask;
  }
}

int32_t StringIndex::insert(std::string_view key, int32_t id) {
  assert(id >= 0);
  if (2 * (n_keys_ + 1) > slots_.size()) grow();
  const uint32_t h = hash_of(key);
  Slot& s = slots_[probe(key, h)];
  if (s.id != kAbsent) return s.id;
  s.hash = h;
  s.offset = static_cast<uint32_t>(arena_.size());
  s.length = static_cast<uint32_t>(key.size());
  s.id = id;
  arena_.append(key);
  ++n_keys_;
  return id;
}

void StringIndex::assign(std::string_view key, int32_t id) { assign_hashed(key, hash_of(key), id); }

void StringIndex::assign_hashed(std::string_view key, uint32_t h, int32_t id) {
  assert(id >= 0);
  if (2 * (n_keys_ + 1) > slots_.size()) grow();
  Slot& s = slots_[probe(key, h)];
  if (s.id == kAbsent) {
    s.hash = h;
    s.offset = static_cast<uint32_t>(arena_.size());
    s.length = static_cast<uint32_t>(key.size());
    arena_.append(key);
    ++n_keys_;
  }
  s.id = id;
}

int32_t StringIndex::find(std::string_view key) const { return find_hashed(key, hash_of(key)); }

int32_t StringIndex::find_hashed(std::string_view key, uint32_t hash) const {
  if (slots_.empty()) return kAbsent;
  return slots_[probe(key, hash)].id;
}

}  // namespace cohort::tokenizer
