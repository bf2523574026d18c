#include "kv/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "common/error.h"

namespace cohort::kv {
namespace {

constexpr size_t kAlignment = 64;  // a cache line; enough for AVX-512 loads

void require_positive(int value, const char* field) {
  if (value < 1) fail("KV cache: {} = {} must be >= 1", field, value);
}

}  // namespace

void validate(const KvCacheShape& shape) {
  require_positive(shape.n_layer, "n_layer");
  require_positive(shape.block_size, "block_size");
  require_positive(shape.n_head_kv, "n_head_kv");
  require_positive(shape.head_dim, "head_dim");
  if (shape.n_blocks < 0) fail("KV cache: n_blocks = {} must be >= 0", shape.n_blocks);
}

size_t kv_bytes_per_block(const KvCacheShape& shape, size_t element_size) {
  return 2 * static_cast<size_t>(shape.n_layer) * static_cast<size_t>(shape.block_size) *
         static_cast<size_t>(shape.row_elements()) * element_size;
}

int kv_blocks_for_context(int64_t n_ctx, int block_size) {
  require_positive(block_size, "block_size");
  if (n_ctx < 0) fail("KV cache: context size {} must be >= 0", n_ctx);
  const int64_t n = (n_ctx + block_size - 1) / block_size;
  if (n > std::numeric_limits<int>::max()) fail("KV cache: context size {} is too large", n_ctx);
  return static_cast<int>(n);
}

int kv_blocks_for_bytes(size_t n_bytes, const KvCacheShape& shape, size_t element_size) {
  KvCacheShape s = shape;
  s.n_blocks = 0;
  validate(s);
  const size_t n = n_bytes / kv_bytes_per_block(s, element_size);
  return static_cast<int>(std::min<size_t>(n, std::numeric_limits<int>::max()));
}

void KvCache::FreeAligned::operator()(float* p) const { std::free(p); }

KvCache::Buffer KvCache::allocate(size_t n_elements) {
  const size_t n_bytes = (n_elements * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
  if (n_bytes == 0) return Buffer(nullptr);
  void* p = std::aligned_alloc(kAlignment, n_bytes);
  if (p == nullptr) fail("KV cache: cannot allocate {} MiB", n_bytes >> 20);
  std::memset(p, 0, n_bytes);
  return Buffer(static_cast<float*>(p));
}

KvCache::KvCache(const KvCacheShape& shape) : shape_(shape) {
  validate(shape);
  // Overflow check: the size of one block times the block count.
  const size_t per_block = kv_bytes_per_block(shape, sizeof(float)) / 2;
  if (shape.n_blocks > 0 &&
      per_block > std::numeric_limits<size_t>::max() / 2 / static_cast<size_t>(shape.n_blocks))
    fail("KV cache: {} blocks of {} bytes overflow", shape.n_blocks, per_block);
  n_layer_elements_ = per_block / sizeof(float) * static_cast<size_t>(shape.n_blocks);
  k_ = allocate(n_layer_elements_);
  v_ = allocate(n_layer_elements_);
}

size_t KvCache::offset(int layer, BlockId block, int row) const {
  assert(layer >= 0 && layer < shape_.n_layer);
  assert(block >= 0 && block < shape_.n_blocks);
  assert(row >= 0 && row < shape_.block_size);
  const size_t rows = (static_cast<size_t>(layer) * static_cast<size_t>(shape_.n_blocks) +
                       static_cast<size_t>(block)) * static_cast<size_t>(shape_.block_size) +
                      static_cast<size_t>(row);
  return rows * static_cast<size_t>(shape_.row_elements());
}

}  // namespace cohort::kv
