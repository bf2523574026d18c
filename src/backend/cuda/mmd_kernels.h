// The launchers of mmd_*.cu; the checks and error messages are in mmd.cpp
// (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/matvec_parts.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda::kernels {

// y = W · x of every part for 1 <= n_tok <= kMmdMaxTokens tokens of BF16 x
// [n_tok, n_in]; y F32 when f32_out, else BF16. `k_split` blocks (a thread
// block cluster) share each block's rows, splitting K.
using MmdLauncher = void (*)(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
                             int k_split, cudaStream_t stream);

inline constexpr int kMmdMaxTokens = 64;
inline constexpr int kMmdBlockRows = 128;  // rows a block (8 warps of 16)
inline constexpr int kMmdMaxSplit = 8;     // blocks a cluster (the portable most)

// Clusters of k_split blocks that can be resident at once for n_tok tokens.
using MmdClusters = int (*)(int n_tok, int k_split);

// The launcher of `type`, its occupancy query and its step (columns n_in
// must be a multiple of), or {nullptr, nullptr, 0}.
struct MmdType {
  MmdLauncher run = nullptr;
  MmdClusters clusters = nullptr;
  int step_elems = 0;
};
MmdType mmd_type(gguf::TensorType type);

void mmd_q8_0(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, int, cudaStream_t);
int mmd_q8_0_clusters(int, int);
void mmd_q4_0(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, int, cudaStream_t);
int mmd_q4_0_clusters(int, int);
void mmd_q4_1(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, int, cudaStream_t);
int mmd_q4_1_clusters(int, int);
void mmd_q4_k(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, int, cudaStream_t);
int mmd_q4_k_clusters(int, int);
void mmd_q5_k(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, int, cudaStream_t);
int mmd_q5_k_clusters(int, int);
void mmd_q6_k(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, int, cudaStream_t);
int mmd_q6_k_clusters(int, int);

}  // namespace cohort::cuda::kernels
