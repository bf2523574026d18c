// CPU storage of the paged KV cache: the K and V values of every layer, in
// blocks, allocated once at start-up.
//
// Layout, per layer, for K and for V alike:
//   [n_blocks, block_size, n_head_kv, head_dim]   (head_dim contiguous)
// so one token's keys of all KV heads are one contiguous row, a block is
// block_size rows, and the row of (block, offset) is block * block_size +
// offset (Slot::index). Block ids and tables come from kv::BlockManager;
// this class does no bookkeeping. Elements are F32 (the CPU reference path);
// the size helpers take an element size so that other devices and F16/BF16
// caches can share them.
//
// Ownership: KvCache owns its buffers (64-byte aligned, zero-filled);
// pointers it returns are views valid for its lifetime. Move-only.
// Thread safety: none of its own; threads may write disjoint rows at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kv/block_manager.h"

namespace cohort::kv {

struct KvCacheShape {
  int n_layer = 0;
  int n_blocks = 0;
  int block_size = kDefaultBlockSize;  // tokens per block
  int n_head_kv = 0;
  int head_dim = 0;

  // Elements of one token's K (or V) in one layer: n_head_kv * head_dim.
  int64_t row_elements() const { return int64_t{n_head_kv} * head_dim; }
};

// Throws cohort::Error naming the field if any count is < 1 (n_blocks may be 0).
void validate(const KvCacheShape& shape);

// Bytes of K plus V of one block over all layers.
size_t kv_bytes_per_block(const KvCacheShape& shape, size_t element_size = sizeof(float));
// Blocks for a context of n_ctx tokens (`-c N`): ceil(n_ctx / block_size).
int kv_blocks_for_context(int64_t n_ctx, int block_size);
// Blocks whose K and V fit in `n_bytes` (a memory budget); shape.n_blocks is ignored.
int kv_blocks_for_bytes(size_t n_bytes, const KvCacheShape& shape,
                        size_t element_size = sizeof(float));

class KvCache {
 public:
  // Allocates and zero-fills K and V. Throws cohort::Error for a bad shape or
  // if the allocation fails (the message gives the size).
  explicit KvCache(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  size_t n_bytes() const { return 2 * n_layer_elements_ * sizeof(float); }

  // One block of one layer: [block_size, n_head_kv, head_dim].
  // REQUIRES: 0 <= layer < n_layer, 0 <= block < n_blocks (assert).
  float* k(int layer, BlockId block) { return k_.get() + offset(layer, block, 0); }
  float* v(int layer, BlockId block) { return v_.get() + offset(layer, block, 0); }
  const float* k(int layer, BlockId block) const { return k_.get() + offset(layer, block, 0); }
  const float* v(int layer, BlockId block) const { return v_.get() + offset(layer, block, 0); }

  // One token's row: [n_head_kv, head_dim].
  float* k(int layer, Slot s) { return k_.get() + offset(layer, s.block, s.offset); }
  float* v(int layer, Slot s) { return v_.get() + offset(layer, s.block, s.offset); }
  const float* k(int layer, Slot s) const { return k_.get() + offset(layer, s.block, s.offset); }
  const float* v(int layer, Slot s) const { return v_.get() + offset(layer, s.block, s.offset); }

 private:
  struct FreeAligned {
    void operator()(float* p) const;
  };
  using Buffer = std::unique_ptr<float[], FreeAligned>;

  size_t offset(int layer, BlockId block, int row) const;
  static Buffer allocate(size_t n_elements);

  KvCacheShape shape_;
  size_t n_layer_elements_ = 0;  // elements of K (or V) over all layers
  Buffer k_;                     // [n_layer, n_blocks, block_size, n_head_kv, head_dim]
  Buffer v_;                     // [n_layer, n_blocks, block_size, n_head_kv, head_dim]
};

}  // namespace cohort::kv
