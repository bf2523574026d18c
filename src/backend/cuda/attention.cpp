#include "backend/cuda/attention.h"

#include <algorithm>

#include "backend/cuda/attention_kernels.h"
#include "backend/cuda/cuda_check.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How a call cuts each sequence's context: splits of kAttentionSplitTokens
// tokens, or shorter ones (down to kAttentionMinSplitTokens, a multiple of
// 16) where that leaves fewer than kAttentionFillSplits splits in all: a
// split's tokens are a serial loop of dependent loads (the block table,
// then K and V), so at short contexts a few long splits left the GPU idle
// (18 us for 128 positions of one sequence, 2026-12-03). Depends only on
// the shape of the call (n_seq, max_ctx), never on the context lengths, so
// a captured step replays with the same grid.
struct SplitPlan {
  int64_t tokens = 0, count = 0;
};
SplitPlan split_plan(int64_t n_seq, int64_t max_ctx) {
  const int64_t wanted = ceil_div(kAttentionFillSplits, std::max<int64_t>(n_seq, 1));
  const int64_t tokens = std::clamp<int64_t>(ceil_div(ceil_div(max_ctx, wanted), 16) * 16, kAttentionMinSplitTokens,
                                             kAttentionSplitTokens);
  return {tokens, ceil_div(max_ctx, tokens)};
}

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

void check_cache(const KvCacheView& c, const char* op) {
  if (c.k == nullptr || c.v == nullptr || !aligned16(c.k) || !aligned16(c.v)) {
    fail("cuda: {}: the K and V caches must be non-null and 16-byte aligned", op);
  }
  if (c.n_blocks <= 0 || c.n_head_kv <= 0 || c.head_dim <= 0 || c.head_dim % 8 != 0) {
    fail("cuda: {}: bad cache geometry ({} blocks, {} KV heads, head_dim {})", op, c.n_blocks, c.n_head_kv,
         c.head_dim);
  }
  if (c.type == KvType::kQ8_0 && (c.k_scale == nullptr || c.v_scale == nullptr || c.head_dim % 32 != 0)) {
    fail("cuda: {}: a q8_0 cache needs its scales and a head_dim that is whole blocks of 32 (head_dim {})", op,
         c.head_dim);
  }
}

void kv_store(const KvCacheView& cache, const __nv_bfloat16* k_new, const __nv_bfloat16* v_new,
              int64_t token_stride, const int32_t* slots, int64_t n_tok, cudaStream_t stream) {
  check_cache(cache, "kv_store");
  if (n_tok < 0 || n_tok > 65535) fail("cuda: kv_store of {} tokens (at most 65535 a call)", n_tok);
  if (token_stride < cache.n_head_kv * cache.head_dim || token_stride % 8 != 0 || !aligned16(k_new) ||
      !aligned16(v_new)) {
    fail("cuda: kv_store: token stride {} (a multiple of 8, at least {}) or misaligned rows", token_stride,
         cache.n_head_kv * cache.head_dim);
  }
  if (n_tok > 0) kernels::launch_kv_store(cache, k_new, v_new, token_stride, slots, n_tok, stream);
}

void rope_store_kv(const RopeConfig& config, __nv_bfloat16* q, int64_t q_stride, int64_t n_head, __nv_bfloat16* k,
                   const __nv_bfloat16* v, int64_t kv_stride, const int32_t* positions, const KvCacheView& cache,
                   const int32_t* slots, int64_t n_tok, cudaStream_t stream) {
  check_cache(cache, "rope_store_kv");
  const kernels::RopeArgs a = kernels::rope_args(config, cache.head_dim);
  const int64_t row = cache.n_head_kv * cache.head_dim;
  if (n_tok < 0 || n_tok > 65535 || n_head <= 0 || n_head > 65535 - cache.n_head_kv ||
      q_stride < n_head * cache.head_dim || kv_stride < row || kv_stride % 8 != 0 || cache.head_dim % 32 != 0 ||
      !aligned16(k) || !aligned16(v)) {
    fail("cuda: rope_store_kv of {} tokens, {} heads and {} KV heads of {} (strides {} and {}, head_dim a multiple "
         "of 32, KV rows 16-byte aligned): bad shape",
         n_tok, n_head, cache.n_head_kv, cache.head_dim, q_stride, kv_stride);
  }
  if (n_tok > 0) {
    kernels::launch_rope_store(a, q, q_stride, n_head, k, v, kv_stride, positions, cache, slots, n_tok, stream);
  }
}

size_t decode_attention_workspace_bytes(int64_t n_seq, int64_t n_head, int64_t head_dim, int64_t max_ctx) {
  // Fewer sequences may take more splits each: the most over every count up to n_seq.
  int64_t most = 0;
  for (int64_t n = 1; n <= n_seq; ++n) most = std::max(most, n * split_plan(n, max_ctx).count);
  const auto rows = static_cast<size_t>(n_head * most);
  return 2 * align256(rows * sizeof(float)) + align256(rows * static_cast<size_t>(head_dim) * sizeof(float));
}

void decode_attention(const KvCacheView& cache, const __nv_bfloat16* q, const int32_t* block_table,
                      int64_t max_blocks, const int32_t* ctx_lens, int64_t n_seq, int64_t n_head,
                      int64_t max_ctx, float scale, void* workspace, __nv_bfloat16* out,
                      cudaStream_t stream, const int32_t* table_rows, void* xq) {
  check_cache(cache, "decode_attention");
  const int64_t d = cache.head_dim;
  if (d != 64 && d != 128 && d != 256) fail("cuda: decode_attention: head_dim {} (64, 128 or 256)", d);
  if (n_head <= 0 || n_head % cache.n_head_kv != 0) {
    fail("cuda: decode_attention: {} heads is not a multiple of {} KV heads", n_head, cache.n_head_kv);
  }
  const SplitPlan plan = split_plan(n_seq, max_ctx);
  if (n_seq < 0 || n_seq > 65535 || max_ctx < 0 || plan.count > 65535) {
    fail("cuda: decode_attention: {} sequences or max_ctx {} out of range", n_seq, max_ctx);
  }
  if (max_blocks * kKvBlockSize < max_ctx || max_blocks > INT32_MAX) {
    fail("cuda: decode_attention: {} blocks per sequence cannot hold max_ctx {}", max_blocks, max_ctx);
  }
  if (workspace == nullptr || !aligned16(q) || !aligned16(out) || !aligned16(workspace) || !aligned16(xq)) {
    fail("cuda: decode_attention: q, out, xq and the workspace must be 16-byte aligned (all but xq non-null)");
  }
  if (n_seq == 0 || max_ctx == 0) {
    const auto n = static_cast<size_t>(n_seq * n_head * d);
    if (n > 0) CUDA_CHECK(cudaMemsetAsync(out, 0, n * 2, stream));
    // Zeros quantize to zero bytes and {d, s} = {0, 0}.
    if (n > 0 && xq != nullptr) CUDA_CHECK(cudaMemsetAsync(xq, 0, n + n / 32 * sizeof(float2), stream));
    return;
  }
  kernels::AttentionShape shape;
  shape.n_seq = static_cast<int>(n_seq);
  shape.n_head = static_cast<int>(n_head);
  shape.n_head_kv = static_cast<int>(cache.n_head_kv);
  shape.head_dim = static_cast<int>(d);
  shape.max_blocks = static_cast<int>(max_blocks);
  shape.n_splits = static_cast<int>(plan.count);
  shape.split_tokens = static_cast<int>(plan.tokens);
  shape.table_rows = table_rows;
  const auto rows = static_cast<size_t>(n_seq * n_head * shape.n_splits);
  auto* base = static_cast<char*>(workspace);
  kernels::AttentionPartials p;
  p.m = reinterpret_cast<float*>(base);
  p.l = reinterpret_cast<float*>(base + align256(rows * sizeof(float)));
  p.acc = reinterpret_cast<float*>(base + 2 * align256(rows * sizeof(float)));
  kernels::launch_decode_attention(cache, q, block_table, ctx_lens, shape, scale, p, out, xq, stream);
}

}  // namespace cohort::cuda
