// CPU storage of the paged KV cache: the K and V values of every layer, in
// blocks, allocated once at start-up, each in its own element type (-ctk,
// -ctv: f32, f16, bf16 or q8_0; f16 by default, as llama.cpp).
//
// Layout, per layer, for K and for V alike:
//   [n_blocks, block_size, n_head_kv, head_dim]   (head_dim contiguous)
// so one token's keys of all KV heads are one contiguous row, a block is
// block_size rows, and the row of (block, offset) is block * block_size +
// offset (Slot::index). A row is stored in the cache's type; for q8_0 each
// head's head_dim values are whole blocks of 32, so a head's slice of a row
// is a row of its own (k_head_bytes()). Block ids and tables come from
// kv::BlockManager; this class does no bookkeeping. The size helpers serve
// every device's cache.
//
// Ownership: KvCache owns its buffers (64-byte aligned, zero-filled);
// pointers it returns are views valid for its lifetime. Move-only.
// Thread safety: none of its own; threads may write disjoint rows at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "gguf/tensor_type.h"
#include "kv/block_copy.h"
#include "kv/block_manager.h"

namespace cohort::kv {

using gguf::TensorType;

struct KvCacheShape {
  int n_layer = 0;
  int n_blocks = 0;
  int block_size = kDefaultBlockSize;  // tokens per block
  int n_head_kv = 0;
  int head_dim = 0;
  TensorType type_k = TensorType::F16;  // -ctk
  TensorType type_v = TensorType::F16;  // -ctv

  // Elements of one token's K (or V) in one layer: n_head_kv * head_dim.
  int64_t row_elements() const { return int64_t{n_head_kv} * head_dim; }
  // Bytes of one token's K (V) of one KV head, and of all of them.
  size_t k_head_bytes() const { return gguf::row_bytes(type_k, head_dim); }
  size_t v_head_bytes() const { return gguf::row_bytes(type_v, head_dim); }
  size_t k_row_bytes() const { return k_head_bytes() * static_cast<size_t>(n_head_kv); }
  size_t v_row_bytes() const { return v_head_bytes() * static_cast<size_t>(n_head_kv); }
};

// The cache type named `name` (-ctk/-ctv: f32, f16, bf16, q8_0, any case).
// Throws cohort::Error naming `flag` and the types for another name.
TensorType cache_type(std::string_view name, std::string_view flag);

// Throws cohort::Error naming the field if any count is < 1 (n_blocks may be
// 0), and naming the flag for a type the cache cannot store or, for q8_0, a
// head_dim that is not a multiple of its 32-element blocks.
void validate(const KvCacheShape& shape);

// Bytes of K plus V of one block over all layers.
size_t kv_bytes_per_block(const KvCacheShape& shape);
// Blocks for a context of n_ctx tokens (`-c N`): ceil(n_ctx / block_size).
int kv_blocks_for_context(int64_t n_ctx, int block_size);
// Blocks whose K and V fit in `n_bytes` (a memory budget); shape.n_blocks is ignored.
int kv_blocks_for_bytes(size_t n_bytes, const KvCacheShape& shape);

class KvCache {
 public:
  // Allocates and zero-fills K and V. Throws cohort::Error for a bad shape or
  // if the allocation fails (the message gives the size).
  explicit KvCache(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  size_t n_bytes() const { return k_bytes_ + v_bytes_; }

  // One token's row, n_head_kv heads of k_head_bytes() (v_head_bytes()) each.
  // REQUIRES: 0 <= layer < n_layer, 0 <= block < n_blocks (assert).
  uint8_t* k(int layer, Slot s) { return k_.get() + offset(layer, s, shape_.k_row_bytes()); }
  uint8_t* v(int layer, Slot s) { return v_.get() + offset(layer, s, shape_.v_row_bytes()); }
  const uint8_t* k(int layer, Slot s) const { return k_.get() + offset(layer, s, shape_.k_row_bytes()); }
  const uint8_t* v(int layer, Slot s) const { return v_.get() + offset(layer, s, shape_.v_row_bytes()); }

  // Every layer's K and V rows 0 .. c.n_rows - 1 of block c.src into block
  // c.dst (BlockCopy). REQUIRES: valid distinct blocks, n_rows <= block_size.
  void copy_rows(const BlockCopy& c);

 private:
  struct FreeAligned {
    void operator()(uint8_t* p) const;
  };
  using Buffer = std::unique_ptr<uint8_t[], FreeAligned>;

  size_t offset(int layer, Slot s, size_t row_bytes) const;
  static Buffer allocate(size_t n_bytes);

  KvCacheShape shape_;
  size_t k_bytes_ = 0;  // K over all layers
  size_t v_bytes_ = 0;
  Buffer k_;            // [n_layer, n_blocks, block_size, row of k_row_bytes()]
  Buffer v_;            // [n_layer, n_blocks, block_size, row of v_row_bytes()]
};

}  // namespace cohort::kv
