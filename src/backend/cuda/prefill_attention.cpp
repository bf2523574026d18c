#include "backend/cuda/prefill_attention.h"

#include "backend/cuda/prefill_attention_kernels.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether row t continues the tile `last` (same sequence, next position, room left).
bool continues(const PrefillTile& last, int32_t seq, int32_t pos) {
  return last.seq == seq && last.pos + last.n_rows == pos && last.n_rows < kPrefillTileRows;
}

}  // namespace

void plan_prefill_tiles(std::span<const int32_t> positions, std::span<const int32_t> seq_index,
                        std::vector<PrefillTile>& tiles) {
  tiles.clear();
  for (size_t t = 0; t < positions.size(); ++t) {
    const int32_t seq = seq_index[t], pos = positions[t];
    if (!tiles.empty() && continues(tiles.back(), seq, pos)) {
      ++tiles.back().n_rows;
    } else {
      tiles.push_back({static_cast<int32_t>(t), 1, seq, pos});
    }
  }
}

void prefill_attention(const KvCacheView& cache, const __nv_bfloat16* q, const PrefillTile* tiles,
                       int64_t n_tiles, const int32_t* block_table, int64_t max_blocks, int64_t n_head,
                       float scale, __nv_bfloat16* out, cudaStream_t stream) {
  check_cache(cache, "prefill_attention");
  const int64_t d = cache.head_dim;
  if (d != 64 && d != 128 && d != 256) fail("cuda: prefill_attention: head_dim {} (64, 128 or 256)", d);
  if (n_head <= 0 || n_head > 65535 || n_head % cache.n_head_kv != 0) {
    fail("cuda: prefill_attention: {} heads is not a multiple of {} KV heads (at most 65535)", n_head,
         cache.n_head_kv);
  }
  if (n_tiles < 0 || n_tiles > 65535) fail("cuda: prefill_attention: {} tiles (at most 65535 a call)", n_tiles);
  if (max_blocks <= 0 || max_blocks > INT32_MAX) fail("cuda: prefill_attention: {} blocks per sequence", max_blocks);
  if (!aligned16(q) || !aligned16(out) || tiles == nullptr || block_table == nullptr) {
    fail("cuda: prefill_attention: q and out must be 16-byte aligned, tiles and block_table non-null");
  }
  if (n_tiles == 0) return;
  kernels::PrefillShape shape;
  shape.n_tiles = static_cast<int>(n_tiles);
  shape.n_head = static_cast<int>(n_head);
  shape.n_head_kv = static_cast<int>(cache.n_head_kv);
  shape.head_dim = static_cast<int>(d);
  shape.max_blocks = static_cast<int>(max_blocks);
  kernels::launch_prefill_attention(cache, q, tiles, block_table, shape, scale, out, stream);
}

}  // namespace cohort::cuda
