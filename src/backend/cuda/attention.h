// Decode attention over the paged KV cache, and the store of new K/V rows.
//
// KV cache layout (one array for K, one for V; -ctk/-ctv f16, bf16 or q8_0,
// the same for both):
//   [n_blocks, kKvBlockSize, n_head_kv, head_dim] elements
// F16 and BF16 elements are 2 bytes; a Q8_0 cache holds its int8 quants there
// and their F16 scales, one per 32 consecutive elements of a head's row, in
// a second array of the same order ([..., head_dim / 32]), so a row stays
// 16-byte aligned (the bytes per element are the GGUF block's: 34 per 32).
// Token j of a sequence lives in physical block table[j / kKvBlockSize] at
// offset j % kKvBlockSize; its slot is block * kKvBlockSize + offset. A
// slot's heads are contiguous, so one token's K row for one KV head is
// head_dim consecutive elements (the kernels read 8 of them a load).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/elementwise.h"

namespace cohort::cuda {

inline constexpr int kKvBlockSize = 16;  // tokens per KV block (DESIGN.md, KV cache)

// The element type of a cache (-ctk/-ctv).
enum class KvType : uint8_t { kF16, kBf16, kQ8_0 };

// The cache geometry shared by attention and the KV store.
struct KvCacheView {
  void* k = nullptr;  // [n_blocks, kKvBlockSize, n_head_kv, head_dim] elements of `type`
  void* v = nullptr;  // same
  int64_t n_blocks = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  KvType type = KvType::kF16;
  __half* k_scale = nullptr;  // kQ8_0: [n_blocks, kKvBlockSize, n_head_kv, head_dim / 32]
  __half* v_scale = nullptr;  // same
};

// Bytes of one K (or V) array of `elements` elements, scales included.
inline size_t kv_array_bytes(KvType type, size_t elements) {
  return type == KvType::kQ8_0 ? elements + elements / 32 * sizeof(__half) : 2 * elements;
}

// Throws cohort::Error naming `op` for null or misaligned arrays, a bad
// geometry, or a Q8_0 cache without scales or with a head_dim that is not
// whole blocks of 32.
void check_cache(const KvCacheView& cache, const char* op);

// Writes token t's rows into slot slot[t] (t < n_tok) in the cache's type
// (F16 rounded to nearest even; the BF16 as it is; Q8_0 as quant::quantize
// makes it of the F32 values: d = amax / 127, q = round(x / d) halves away
// from zero, d stored as F16):
//   cache.k[slot[t], h, :] = k_new[t * token_stride + h * head_dim + :], likewise v.
// k_new / v_new are BF16, token t at k_new + t * token_stride (so they can be
// views into a fused QKV row). A slot < 0 is skipped (a padding token).
// REQUIRES: head_dim % 8 == 0 (% 32 for Q8_0); k_new, v_new, token_stride*2
// bytes and the caches 16-byte aligned; slots < n_blocks * kKvBlockSize (a
// larger slot is skipped too, so a bad slot never writes out of bounds); no
// two tokens share a slot.
void kv_store(const KvCacheView& cache, const __nv_bfloat16* k_new, const __nv_bfloat16* v_new,
              int64_t token_stride, const int32_t* slots, int64_t n_tok, cudaStream_t stream);

// rope(config, q, q_stride, positions, n_tok, n_head, head_dim) and
// rope(config, k, kv_stride, ...) of cache.n_head_kv heads, then
// kv_store(cache, k, v, kv_stride, slots, n_tok) of the rotated k, in one
// launch with the same results (rope_store.cu). REQUIRES: as those three.
void rope_store_kv(const RopeConfig& config, __nv_bfloat16* q, int64_t q_stride, int64_t n_head, __nv_bfloat16* k,
                   const __nv_bfloat16* v, int64_t kv_stride, const int32_t* positions, const KvCacheView& cache,
                   const int32_t* slots, int64_t n_tok, cudaStream_t stream);

// Bytes of device workspace decode_attention needs for these bounds
// (partial results of the context splits). Allocate once, for the largest.
size_t decode_attention_workspace_bytes(int64_t n_seq, int64_t n_head, int64_t head_dim, int64_t max_ctx);

// out [n_seq, n_head, head_dim] = softmax(scale * q·Kᵀ) · V per sequence and
// head, over the first ctx_lens[s] tokens of sequence s, query head h reading
// KV head h / (n_head / n_head_kv) (grouped-query attention).
//   q           [n_seq, n_head, head_dim] BF16
//   block_table [n_seq, max_blocks] int32, physical block numbers (entries
//               past a sequence's context are never read)
//   ctx_lens    [n_seq] int32, 0 <= ctx_lens[s] <= max_ctx (0 gives zeros)
//   workspace   decode_attention_workspace_bytes(n_seq, n_head, head_dim, max_ctx) bytes
//   table_rows  [n_seq] int32 row of block_table that query s reads, or null
//               for row s (many queries of one sequence share its row: a
//               prefill, each token with ctx_lens = its position + 1)
// Long contexts are split across thread blocks (flash-decoding): each split
// of kAttentionSplitTokens tokens (fewer, down to kAttentionMinSplitTokens,
// where the call would have fewer than kAttentionFillSplits splits) writes a
// partial max, sum and output to the workspace, and a second kernel
// combines the splits. With `xq` non-null, out is also written there
// quantized: the bytes of matvec_q8.h's quantize_activations(out, n_seq,
// n_head * head_dim, xq) (one pass fewer before a quantized matvec).
// REQUIRES: head_dim in {64, 128, 256}; n_head a multiple of n_head_kv;
// max_blocks * kKvBlockSize >= max_ctx; q, out and xq 16-byte aligned.
void decode_attention(const KvCacheView& cache, const __nv_bfloat16* q, const int32_t* block_table,
                      int64_t max_blocks, const int32_t* ctx_lens, int64_t n_seq, int64_t n_head,
                      int64_t max_ctx, float scale, void* workspace, __nv_bfloat16* out,
                      cudaStream_t stream, const int32_t* table_rows = nullptr, void* xq = nullptr);

inline constexpr int kAttentionSplitTokens = 256;
inline constexpr int kAttentionMinSplitTokens = 16;
// Splits of all sequences together that a call aims for: with 8 KV heads a
// block each, 256 blocks, about two per multiprocessor of an H200.
inline constexpr int kAttentionFillSplits = 32;

}  // namespace cohort::cuda
