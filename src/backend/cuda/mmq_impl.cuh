// The int8 tensor-core matmul kernel shared by the weight types (included
// by mmq_*.cu; the decoders are in mmq_decode.cuh).
//
// A block of kSplit warps (split_warps) computes one tile of 16 rows of a
// launch's parts (matvec_parts.h) for up to 8 * NT tokens (NT tiles of 8).
// The K dimension is split over the warps: warp w takes steps w, w +
// kSplit, ... of every row, so the block's warps read neighbouring bytes of
// its 16 rows and
// each lane has two steps of weights in flight (the next step is loaded
// before the current one is used). Per 32-column sub-block a warp issues one
// mma.m16n8k32 per token tile (int8 weights and activations, exact int32
// sums) and scales the sums in F32 with the weights' sub-block scale and
// the activations' block scale (d_x, and s for the offsets). The warps' sums
// are added in warp order through shared memory, so the result does not
// depend on timing. Activations (matvec_q8.h's xq) are read from device
// memory: the same bytes for every block, so they stay in L1 and L2.
#pragma once

#include <cstdint>
#include <utility>

#include <cuda_bf16.h>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/matvec_q8_kernels.h"
#include "backend/cuda/matvec_rows.cuh"
#include "backend/cuda/mmq_decode.cuh"
#include "backend/cuda/mmq_kernels.h"

namespace cohort::cuda::kernels::mmq {

inline constexpr int kWarp = 32;
inline constexpr int kRows = 16;  // rows a block (the mma's M)
// Warps a block (splitting K) and blocks a multiprocessor holds at least,
// by token tiles. Up to two tiles: 8 warps held to 128 registers (2 blocks,
// 16 warps a multiprocessor; small spills), since a 4096-row matrix is only
// 256 blocks; three and four: 4 warps with as many registers as the
// compiler takes (about 250: 8 warps a multiprocessor), which ran faster
// there. Measured on an H200 (cuda_kernel_bench, Q4_K 4096 x 4096): 8
// tokens 9.4 -> 8.5 us, 16 tokens 15.1 -> 11.5 us with the 8 warps, but 32
// tokens 19.0 -> 19.6 us.
__host__ __device__ constexpr int split_warps(int nt) { return nt <= 2 ? 8 : 4; }
__host__ __device__ constexpr int min_blocks(int nt) { return nt <= 2 ? 2 : 1; }

// c = the int32 product of a 16 x 32 (rows) and a 32 x 8 (tokens) int8 tile.
__device__ __forceinline__ void mma_s8(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

// Where a lane's activations are: its B token (8 nt + g) and its C tokens
// (8 nt + 2t, + 1) of tile nt, as offsets from q and ds computed in 32-bit
// integers (n_tok * n_in < 2^31, checked by the entry); past the last
// token, the last (read, not stored). Only the last tile can pass it.
struct XLanes {
  const int8_t* q;
  const float2* ds;
  int n_tok, n_in, nb, g, t;
  template <int NT, int kTile>
  __device__ __forceinline__ int token(int tok) const {
    return kTile < NT - 1 || tok < n_tok ? tok : n_tok - 1;
  }
  template <int NT, int kTile>
  __device__ __forceinline__ uint2 b(int col) const {
    return ldg(reinterpret_cast<const uint2*>(q + token<NT, kTile>(8 * kTile + g) * n_in + col));
  }
  template <int NT, int kTile>
  __device__ __forceinline__ float2 c(int i, int blk) const {
    return ldg(ds + token<NT, kTile>(8 * kTile + 2 * t + i) * nb + blk);
  }
};

// o[0..3] (rows g, g + 8 x tokens 2t, 2t + 1) += the scaled sums c of
// rows with scales dl0, dl1 and the tokens' activation scales x0, x1.
__device__ __forceinline__ void scale_into(float* o, const int (&c)[4], float dl0, float dl1, float2 x0, float2 x1) {
  o[0] = fmaf(dl0 * x0.x, static_cast<float>(c[0]), o[0]);
  o[1] = fmaf(dl0 * x1.x, static_cast<float>(c[1]), o[1]);
  o[2] = fmaf(dl1 * x0.x, static_cast<float>(c[2]), o[2]);
  o[3] = fmaf(dl1 * x1.x, static_cast<float>(c[3]), o[3]);
}

// acc[nt] += sub-block J of the step in `raw` (rows g and g + 8) times
// token tile nt, for nt in kTiles: the sub-block's columns start at `col`,
// its activation block is `blk`. With two scales a sub-block (kHalves),
// each half is one mma with the other half's weights zero, and a thread
// takes the other half's scales from the thread that holds them (lane ^ 2).
template <typename D, int NT, int J, int... kTiles>
__device__ __forceinline__ void sub_block(const typename D::Raw (&raw)[2], const XLanes& x, int col, int blk,
                                          float (&acc)[NT][4], std::integer_sequence<int, kTiles...>) {
  const Sub r0 = D::template sub<J>(raw[0]), r1 = D::template sub<J>(raw[1]);
  const uint32_t a[4] = {r0.w[0], r1.w[0], r0.w[1], r1.w[1]};
  float dl[2][2] = {{r0.dl, r1.dl}, {r0.dl, r1.dl}};  // [half][row]
  uint32_t ah[2][4] = {};
  if constexpr (D::kHalves == 2) {
    const int own = x.t / 2;
    const float o0 = __shfl_xor_sync(0xFFFFFFFFu, r0.dl, 2), o1 = __shfl_xor_sync(0xFFFFFFFFu, r1.dl, 2);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (h != own) {
        dl[h][0] = o0;
        dl[h][1] = o1;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) ah[h][i] = h == own ? a[i] : 0u;
    }
  }
  const auto tile = [&]<int kTile>(std::integral_constant<int, kTile>) {
    const uint2 b = x.b<NT, kTile>(col);
    const float2 x0 = x.c<NT, kTile>(0, blk), x1 = x.c<NT, kTile>(1, blk);
    float* o = acc[kTile];
    if constexpr (D::kMins) {
      o[0] = fmaf(r0.nml, x0.y, o[0]);
      o[1] = fmaf(r0.nml, x1.y, o[1]);
      o[2] = fmaf(r1.nml, x0.y, o[2]);
      o[3] = fmaf(r1.nml, x1.y, o[3]);
    }
    int c[4];
    if constexpr (D::kHalves == 1) {
      mma_s8(c, a, b.x, b.y);
      scale_into(o, c, r0.dl, r1.dl, x0, x1);
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mma_s8(c, ah[h], b.x, b.y);
        scale_into(o, c, dl[h][0], dl[h][1], x0, x1);
      }
    }
  };
  (tile(std::integral_constant<int, kTiles>{}), ...);
}

template <typename D, int NT, int... J>
__device__ __forceinline__ void step(const typename D::Raw (&raw)[2], const XLanes& x, int s, float (&acc)[NT][4],
                                     std::integer_sequence<int, J...>) {
  (sub_block<D, NT, J>(raw, x, s * D::kStepElems + 32 * J + 8 * x.t, s * D::kSubs + J, acc,
                       std::make_integer_sequence<int, NT>{}),
   ...);
}

// y = W x for the tile's rows and n_tok <= 8 NT tokens. Thread (g, t) ends
// holding rows g, g + 8 for tokens 8 nt + 2t, + 1 (the mma's C layout).
template <typename D, int NT, typename OutT, bool kOnePart>
__global__ void __launch_bounds__(split_warps(NT) * kWarp, min_blocks(NT))
    mmq_kernel(const __grid_constant__ MatvecParts parts, const int8_t* __restrict__ q, const float2* __restrict__ ds,
               int n_tok, int64_t n_in, int64_t row_bytes) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int g = lane / 4, t = lane % 4;
  constexpr int kSplit = split_warps(NT);
  const WarpRows<OutT> tile = warp_rows<kRows, OutT, kOnePart>(parts, blockIdx.x);
  const uint8_t* rows[2] = {weight_row(tile, g, row_bytes), weight_row(tile, g + 8, row_bytes)};
  const int64_t n_steps = n_in / D::kStepElems;
  const XLanes x{q, ds, n_tok, static_cast<int>(n_in), static_cast<int>(n_in / 32), g, t};
  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
  }
  typename D::Raw cur[2];
  int64_t s = warp;
  if (s < n_steps) {
    cur[0] = D::load(rows[0], s, t);
    cur[1] = D::load(rows[1], s, t);
  }
  // The first weights are in flight while the kernel before finishes (launch.cuh).
  wait_then_launch_dependents();
  for (; s < n_steps; s += kSplit) {
    typename D::Raw next[2];
    if (s + kSplit < n_steps) {
      next[0] = D::load(rows[0], s + kSplit, t);
      next[1] = D::load(rows[1], s + kSplit, t);
    }
    step<D, NT>(cur, x, static_cast<int>(s), acc, std::make_integer_sequence<int, D::kSubs>{});
    cur[0] = next[0];
    cur[1] = next[1];
  }
  // The warps' sums, added in warp order by warp 0 ([k][i][lane]: each
  // warp's stores and warp 0's loads meet 32 different banks).
  __shared__ float partial[kSplit - 1][NT * 4][kWarp];
  if (warp > 0) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) partial[warp - 1][4 * nt + i][lane] = acc[nt][i];
    }
  }
  __syncthreads();
  if (warp > 0) return;
#pragma unroll
  for (int k = 0; k < kSplit - 1; ++k) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] += partial[k][4 * nt + i][lane];
    }
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int tok = 8 * nt + 2 * t + i % 2;
      const int64_t row = tile.row0 + g + 8 * (i / 2);
      if (tok < n_tok && row < tile.n_out) store(tile.y + tok * tile.n_out + row, acc[nt][i]);
    }
  }
}

template <typename D, int NT, typename OutT>
void launch_nt(const MatvecParts& parts, const int8_t* q, const float2* ds, int n_tok, int64_t n_in,
               cudaStream_t stream) {
  const int64_t row_bytes = n_in / D::kBlockElems * D::kBlockBytes;
  const auto blocks = static_cast<unsigned>(parts.groups(kRows));
  const unsigned threads = split_warps(NT) * kWarp;
  if (parts.n == 1) {
    launch_kernel(mmq_kernel<D, NT, OutT, true>, blocks, threads, 0, stream, parts, q, ds, n_tok, n_in, row_bytes);
  } else {
    launch_kernel(mmq_kernel<D, NT, OutT, false>, blocks, threads, 0, stream, parts, q, ds, n_tok, n_in, row_bytes);
  }
}

static_assert(kMmqMaxTokens == 32, "launch_out's cases cover four tiles of 8 tokens");

template <typename D, typename OutT>
void launch_out(const MatvecParts& parts, const int8_t* q, const float2* ds, int n_tok, int64_t n_in,
                cudaStream_t stream) {
  switch ((n_tok + 7) / 8) {
    case 1: return launch_nt<D, 1, OutT>(parts, q, ds, n_tok, n_in, stream);
    case 2: return launch_nt<D, 2, OutT>(parts, q, ds, n_tok, n_in, stream);
    case 3: return launch_nt<D, 3, OutT>(parts, q, ds, n_tok, n_in, stream);
    case 4: return launch_nt<D, 4, OutT>(parts, q, ds, n_tok, n_in, stream);
    default: return;  // unreachable: the entry passes 1 <= n_tok <= kMmqMaxTokens (32)
  }
}

// The typed launcher (mmq_kernels.h).
template <typename D>
void launch(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, int n_tok, int64_t n_in,
            cudaStream_t stream) {
  if (f32_out) return launch_out<D, float>(parts, q, ds, n_tok, n_in, stream);
  launch_out<D, __nv_bfloat16>(parts, q, ds, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels::mmq
