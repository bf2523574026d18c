// Open-addressing hash maps used on the encode hot path.
//
// StringIndex maps byte strings to int32 ids and owns copies of its keys (in
// one arena, so a 262k-token vocabulary is a handful of allocations).
// PairIndex maps a pair of int32 ids to a value; BPE merge ranks live there.
// Both are filled once at load time and then only read: const methods are
// safe to call from any number of threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::tokenizer {

class StringIndex {
 public:
  static constexpr int32_t kAbsent = -1;

  void reserve(size_t n_keys);
  // Inserts key -> id, or replaces the id of an existing key. REQUIRES: id >= 0.
  void assign(std::string_view key, int32_t id);
  // Inserts key -> id unless the key exists; returns the id now stored.
  int32_t insert(std::string_view key, int32_t id);
  int32_t find(std::string_view key) const;
  size_t size() const { return n_keys_; }

  // For batched lookups: hash once, prefetch the slot, find later.
  static uint32_t hash_of(std::string_view key);
  void prefetch(uint32_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }
  int32_t find_hashed(std::string_view key, uint32_t hash) const;

  // assign(keys[i], i) for every i, in order (so the last of equal keys
  // wins), several times faster than one by one: the memory latency of
  // lookups in a table that does not fit the cache is overlapped.
  template <typename Keys>
  void assign_all(const Keys& keys) {
    const size_t n = keys.size();
    reserve(n_keys_ + n);
    std::vector<uint32_t> hashes(n);
    size_t bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = hash_of(key_of(keys[i]));
      bytes += key_of(keys[i]).size();
    }
    arena_.reserve(arena_.size() + bytes);
    constexpr size_t kAhead = 16;
    for (size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) prefetch(hashes[i + kAhead]);
      assign_hashed(key_of(keys[i]), hashes[i], static_cast<int32_t>(i));
    }
  }

 private:
  struct Slot {  // 16 bytes: a 262k-key table is 8 MiB
    uint32_t hash = 0;
    uint32_t offset = 0;  // into arena_
    uint32_t length = 0;
    int32_t id = kAbsent;  // kAbsent: empty slot
  };
  template <typename T>
  static std::string_view key_of(const T& k) {
    if constexpr (requires { k.text; }) {
      return k.text;
    } else {
      return k;
    }
  }
  void assign_hashed(std::string_view key, uint32_t hash, int32_t id);
  size_t probe(std::string_view key, uint32_t hash) const;  // slot of key, or the empty slot to use
  void grow();

  std::vector<Slot> slots_;
  std::string arena_;
  size_t n_keys_ = 0;
};

// Keys and values share a slot, so a lookup touches one cache line.
template <typename V>
class PairIndex {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > slots_.size()) rehash(cap);
  }
  // Inserts unless present; returns false if the pair already had a value.
  bool insert(int32_t a, int32_t b, const V& v) {
    if (2 * (n_ + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
    const uint64_t key = pack(a, b);
    Slot& s = slots_[slot(key)];
    if (s.key == key) return false;
    s.key = key;
    s.value = v;
    ++n_;
    return true;
  }
  const V* find(int32_t a, int32_t b) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(a, b);
    const Slot& s = slots_[slot(key)];
    return s.key == key ? &s.value : nullptr;
  }
  size_t size() const { return n_; }
  // Starts loading the slot where (a, b) would be, for a find() soon after.
  void prefetch(int32_t a, int32_t b) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(pack(a, b))]);
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;  // pack(-1, -1): ids are never negative
  struct Slot {
    uint64_t key = kEmpty;
    V value{};
  };
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t home(uint64_t key) const {
    const uint64_t h = key * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing
    return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
  }
  size_t slot(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = home(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }
  void rehash(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    for (const Slot& s : old) {
      if (s.key != kEmpty) slots_[slot(s.key)] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t n_ = 0;
};

}  // namespace cohort::tokenizer
