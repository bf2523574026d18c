#include "kv/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "common/error.h"

namespace cohort::kv {
namespace {

constexpr size_t kAlignment = 64;  // a cache line; enough for AVX-512 loads

void require_positive(int value, const char* field) {
  if (value < 1) fail("KV cache: {} = {} must be >= 1", field, value);
}

}  // namespace

TensorType cache_type(std::string_view name, std::string_view flag) {
  const std::optional<TensorType> t = gguf::type_from_name(name);
  if (t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || t == TensorType::Q8_0) return *t;
  fail("{} {}: the KV cache stores f32, f16, bf16 or q8_0", flag, name);
}

void validate(const KvCacheShape& shape) {
  require_positive(shape.n_layer, "n_layer");
  require_positive(shape.block_size, "block_size");
  require_positive(shape.n_head_kv, "n_head_kv");
  require_positive(shape.head_dim, "head_dim");
  if (shape.n_blocks < 0) fail("KV cache: n_blocks = {} must be >= 0", shape.n_blocks);
  for (const auto& [type, flag] : {std::pair{shape.type_k, "-ctk"}, std::pair{shape.type_v, "-ctv"}}) {
    cache_type(gguf::type_name(type), flag);
    const uint32_t block = gguf::traits(type).block_size;
    if (shape.head_dim % block != 0) {
      fail("{} {}: its blocks of {} values do not divide the model's heads of {}", flag, gguf::type_name(type),
           block, shape.head_dim);
    }
  }
}

size_t kv_bytes_per_block(const KvCacheShape& shape) {
  return static_cast<size_t>(shape.n_layer) * static_cast<size_t>(shape.block_size) *
         (shape.k_row_bytes() + shape.v_row_bytes());
}

int kv_blocks_for_context(int64_t n_ctx, int block_size) {
  require_positive(block_size, "block_size");
  if (n_ctx < 0) fail("KV cache: context size {} must be >= 0", n_ctx);
  const int64_t n = (n_ctx + block_size - 1) / block_size;
  if (n > std::numeric_limits<int>::max()) fail("KV cache: context size {} is too large", n_ctx);
  return static_cast<int>(n);
}

int kv_blocks_for_bytes(size_t n_bytes, const KvCacheShape& shape) {
  KvCacheShape s = shape;
  s.n_blocks = 0;
  validate(s);
  const size_t n = n_bytes / kv_bytes_per_block(s);
  return static_cast<int>(std::min<size_t>(n, std::numeric_limits<int>::max()));
}

void KvCache::FreeAligned::operator()(uint8_t* p) const { std::free(p); }

KvCache::Buffer KvCache::allocate(size_t n_bytes) {
  n_bytes = (n_bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (n_bytes == 0) return Buffer(nullptr);
  void* p = std::aligned_alloc(kAlignment, n_bytes);
  if (p == nullptr) fail("KV cache: cannot allocate {} MiB", n_bytes >> 20);
  std::memset(p, 0, n_bytes);
  return Buffer(static_cast<uint8_t*>(p));
}

KvCache::KvCache(const KvCacheShape& shape) : shape_(shape) {
  validate(shape);
  // Overflow check: the size of one block times the block count.
  const size_t per_block = kv_bytes_per_block(shape);
  if (shape.n_blocks > 0 && per_block > std::numeric_limits<size_t>::max() / static_cast<size_t>(shape.n_blocks))
    fail("KV cache: {} blocks of {} bytes overflow", shape.n_blocks, per_block);
  const size_t rows = static_cast<size_t>(shape.n_layer) * static_cast<size_t>(shape.n_blocks) *
                      static_cast<size_t>(shape.block_size);
  k_bytes_ = rows * shape.k_row_bytes();
  v_bytes_ = rows * shape.v_row_bytes();
  k_ = allocate(k_bytes_);
  v_ = allocate(v_bytes_);
}

void KvCache::copy_rows(const BlockCopy& c) {
  assert(c.src != c.dst && c.n_rows >= 0 && c.n_rows <= shape_.block_size);
  const auto n = static_cast<size_t>(c.n_rows);
  for (int layer = 0; layer < shape_.n_layer; ++layer) {
    std::memcpy(k(layer, {c.dst, 0}), k(layer, {c.src, 0}), n * shape_.k_row_bytes());
    std::memcpy(v(layer, {c.dst, 0}), v(layer, {c.src, 0}), n * shape_.v_row_bytes());
  }
}

size_t KvCache::offset(int layer, Slot s, size_t row_bytes) const {
  assert(layer >= 0 && layer < shape_.n_layer);
  assert(s.block >= 0 && s.block < shape_.n_blocks);
  assert(s.offset >= 0 && s.offset < shape_.block_size);
  const size_t rows = (static_cast<size_t>(layer) * static_cast<size_t>(shape_.n_blocks) +
                       static_cast<size_t>(s.block)) * static_cast<size_t>(shape_.block_size) +
                      static_cast<size_t>(s.offset);
  return rows * row_bytes;
}

}  // namespace cohort::kv
