#include "tokenizer/string_index.h"

#include <cassert>
#include <cstring>

namespace cohort::tokenizer {

namespace {

uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint32_t load4(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The n <= 8 bytes at p as one word, with fixed-size loads only (a memcpy of
// a variable size is a call): two overlapping 4-byte loads cover 4..8 bytes,
// the first, middle and last byte cover 1..3. Equal bytes give equal words,
// and for keys of one length the converse holds too.
uint64_t load_short(const char* p, size_t n) {
  if (n >= 4) return load4(p) | (static_cast<uint64_t>(load4(p + n - 4)) << 32);
  if (n == 0) return 0;
  const auto byte = [p](size_t i) { return static_cast<uint64_t>(static_cast<uint8_t>(p[i])); };
  return byte(0) | (byte(n / 2) << 8) | (byte(n - 1) << 16);
}

// Vocabulary keys are short (most under 16 bytes): a key equal to a stored
// one usually fits one or two words, compared without a call to memcmp.
bool same_bytes(const char* a, const char* b, size_t n) {
  if (n <= 8) return load_short(a, n) == load_short(b, n);
  if (n <= 16) return load8(a) == load8(b) && load8(a + n - 8) == load8(b + n - 8);
  return std::memcmp(a, b, n) == 0;
}

}  // namespace

// Multiply-xorshift over 8-byte words: tokens are short, so this is a few
// instructions where std::hash (a general byte hash) is a call and a loop.
uint32_t StringIndex::hash_of(std::string_view key) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = key.size() * kMul;
  size_t i = 0;
  for (; i + 8 <= key.size(); i += 8) {
    h = (h ^ load8(key.data() + i)) * kMul;
    h ^= h >> 29;
  }
  h = (h ^ load_short(key.data() + i, key.size() - i)) * kMul;
  h ^= h >> 32;
  return static_cast<uint32_t>(h);
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
        same_bytes(arena_.data() + s.offset, key.data(), key.size())) {
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
