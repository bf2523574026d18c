// The best k logits of each row, selected on the GPU: what a sampler whose
// chain starts with top_k (greedy is k = 1) needs of a step's logits, so
// that k (id, logit) pairs a row cross the bus instead of the whole
// vocabulary (128,256 floats, 513 KB, for Llama 3).
//
// The order is engine::select_top_k's: logit descending, then id ascending;
// NaN counts as -inf, and -0 equals +0 (the logit written is then +0). So
// a host sampler fed these pairs sees the candidates it would have selected
// from the full row.
//
// How: each block radix-sorts a chunk of kBestChunk keys (cub's
// BlockRadixSort: an LSD sort, stable, so equal logits keep their id order)
// and keeps its first k; the survivors of a row, chunk after chunk, are
// sorted again the same way until one chunk is left. k = 1 takes a block's
// minimum of (key, id) instead of a sort.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cohort::cuda {

// One candidate, laid out as engine::TokenLogit.
struct BestLogit {
  int32_t id;
  float logit;
};

// Elements a block sorts (256 threads x 16).
inline constexpr int kBestChunk = 4096;
// The largest k (llama.cpp's default top_k is 40). A chunk keeps at most a
// sixteenth of itself, so that each round shrinks a row.
inline constexpr int kMaxBestK = 64;  // backend::kMaxBestLogits

// Device scratch best_logits() needs for n_rows rows of n logits.
size_t best_logits_scratch_bytes(int64_t n_rows, int64_t n, int k);

// out [n_rows, k] = the best k of each row of logits [n_rows, n] (device,
// rows compact), in order. Fewer than k logits in a row (n < k) is an error.
// With `masks` (device, [n_rows, (n + 31) / 32] words: structured output's
// token masks), a logit whose bit (t % 32 of word t / 32) is clear counts
// as -inf: what the selection of the masked row gives.
// REQUIRES: 1 <= k <= kMaxBestK, k <= n, n < 2^31; scratch holds
// best_logits_scratch_bytes(n_rows, n, k) bytes.
void best_logits(const float* logits, int64_t n_rows, int64_t n, int k, void* scratch, BestLogit* out,
                 cudaStream_t stream, const uint32_t* masks = nullptr);

namespace kernels {
// best_logits() after its checks (best_logits.cu; nvcc does not compile fmt).
void launch_best_logits(const float* logits, int64_t n_rows, int64_t n, int k, void* scratch, BestLogit* out,
                        cudaStream_t stream, const uint32_t* masks);
}  // namespace kernels

}  // namespace cohort::cuda
