// Causal prefill attention over the paged KV cache (attention.h describes the
// layout): every token of a micro-batch attends to the keys 0..its own
// position of its sequence, the earlier positions of a chunked prompt being
// already in the cache. The rows of the micro-batch are first cut into tiles
// on the host (plan_prefill_tiles); the kernel runs one thread block per
// (tile, query head).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/attention.h"

namespace cohort::cuda {

inline constexpr int kPrefillTileRows = 64;  // query rows of one thread block (4 warps of 16)

// Rows [row, row + n_rows) of the micro-batch are positions [pos, pos + n_rows)
// of packed sequence `seq` (its row of the block tables).
struct PrefillTile {
  int32_t row = 0, n_rows = 0, seq = 0, pos = 0;
};

// Splits the micro-batch into tiles of at most kPrefillTileRows consecutive
// rows that belong to one sequence at consecutive positions. positions and
// seq_index are the step input's host arrays ([n_tok] each: token t's
// position and its sequence's row of the block tables). `tiles` is cleared
// first; every row lands in exactly one tile, in row order. Pure host code.
// REQUIRES: positions.size() == seq_index.size().
void plan_prefill_tiles(std::span<const int32_t> positions, std::span<const int32_t> seq_index,
                        std::vector<PrefillTile>& tiles);

// For every row t of every tile and query head h:
//   out[t, h, :] = softmax(scale * q[t, h, :] · K[0..p]ᵀ) · V[0..p]
// with p = t's position and K, V the keys of KV head h / (n_head / n_head_kv)
// of t's sequence, read through row `seq` of block_table.
//   q, out      [n_tok, n_head, head_dim] BF16, contiguous (rows not in any
//               tile are left as they are)
//   tiles       [n_tiles] device array (plan_prefill_tiles, copied over)
//   block_table [n_seq, max_blocks] int32, physical block numbers
// Numerics: q is converted to F16, exact for |q| <= 65504 (BF16's 8-bit
// significand fits F16's 11; larger magnitudes saturate) where rounding the
// F16 keys to BF16 would lose 3 bits of each; q·k and P·V run on the tensor
// cores with F16 inputs and F32 accumulation, the softmax is in F32 (log2
// units) and the probabilities are rounded to F16 for P·V.
// REQUIRES: head_dim in {64, 128, 256}; n_head a multiple of n_head_kv;
// n_tiles and n_head at most 65535; each tile's pos + n_rows <= max_blocks *
// kKvBlockSize with those keys stored; q and out 16-byte aligned.
void prefill_attention(const KvCacheView& cache, const __nv_bfloat16* q, const PrefillTile* tiles,
                       int64_t n_tiles, const int32_t* block_table, int64_t max_blocks, int64_t n_head,
                       float scale, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace cohort::cuda
