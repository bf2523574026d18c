// The launchers of attention.cu and kv_store.cu; the checks and error
// messages are in attention.cpp (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include "backend/cuda/attention.h"
#include "backend/cuda/elementwise_kernels.h"

namespace cohort::cuda::kernels {

// Workspace split into its three arrays.
struct AttentionPartials {
  float* m = nullptr;    // [n_seq, n_head, n_splits] running max (log2 units)
  float* l = nullptr;    // [n_seq, n_head, n_splits] sum of exponentials
  float* acc = nullptr;  // [n_seq, n_head, n_splits, head_dim] unnormalised output
};

struct AttentionShape {
  int n_seq = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  int max_blocks = 0, n_splits = 0;
  int split_tokens = 0;  // tokens of a split (a multiple of 16)
  const int32_t* table_rows = nullptr;  // [n_seq] block-table row of each query, or null: its own
};

// Checked by the caller: head_dim in {64, 128, 256}, n_head % n_head_kv == 0.
void launch_decode_attention(const KvCacheView& cache, const __nv_bfloat16* q, const int32_t* block_table,
                             const int32_t* ctx_lens, const AttentionShape& shape, float scale,
                             const AttentionPartials& partials, __nv_bfloat16* out, void* xq,
                             cudaStream_t stream);

void launch_kv_store(const KvCacheView& cache, const __nv_bfloat16* k_new, const __nv_bfloat16* v_new,
                     int64_t token_stride, const int32_t* slots, int64_t n_tok, cudaStream_t stream);

// rope_store.cu; checked by the caller (attention.cpp, rope_store_kv).
void launch_rope_store(const RopeArgs& a, __nv_bfloat16* q, int64_t q_stride, int64_t n_head, __nv_bfloat16* k,
                       const __nv_bfloat16* v, int64_t kv_stride, const int32_t* positions, const KvCacheView& cache,
                       const int32_t* slots, int64_t n_tok, cudaStream_t stream);

}  // namespace cohort::cuda::kernels
