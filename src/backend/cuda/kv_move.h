// The KV rows a context shift moves (kv::RowMove, kv/block_copy.h), on the
// device: every layer's K and V of a cache row into another row, K rotated
// by the move's position change with the forward's RoPE (rope.cuh), read and
// stored in the cache's type (Q8_0 requantized as store_kv quantizes).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/elementwise_kernels.h"
#include "kv/block_copy.h"

namespace cohort::cuda {

// The whole cache: n_layer pairs of K and V arrays of kv_array_bytes(type,
// elements) each, rows of row_elements elements (n_head_kv * head_dim).
struct KvArrays {
  uint8_t* base = nullptr;
  size_t array_bytes = 0;
  size_t elements = 0;  // per array
  int n_layer = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  KvType type = KvType::kF16;
};

// Performs moves[0, n) (device memory), which must touch distinct rows (one
// round of a shift), on `stream`.
void move_kv_rows(const KvArrays& cache, const kernels::RopeArgs& rope, const kv::RowMove* moves, int n,
                  cudaStream_t stream);

}  // namespace cohort::cuda
