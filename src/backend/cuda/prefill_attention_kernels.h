// The launcher of prefill_attention.cu; the checks and error messages are in
// prefill_attention.cpp (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include "backend/cuda/prefill_attention.h"

namespace cohort::cuda::kernels {

struct PrefillShape {
  int n_tiles = 0, n_head = 0, n_head_kv = 0, head_dim = 0, max_blocks = 0;
};

// Checked by the caller: head_dim in {64, 128, 256}, n_head % n_head_kv == 0,
// 0 < n_tiles <= 65535.
void launch_prefill_attention(const KvCacheView& cache, const __nv_bfloat16* q, const PrefillTile* tiles,
                              const int32_t* block_table, const PrefillShape& shape, float scale,
                              __nv_bfloat16* out, cudaStream_t stream);

}  // namespace cohort::cuda::kernels
