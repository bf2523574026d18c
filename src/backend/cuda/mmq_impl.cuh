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
#include <type_traits>
#include <utility>

#include <cuda_bf16.h>

#include "backend/cuda/cp_async.cuh"
#include "backend/cuda/cuda_check.h"
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

// A warp's activations of one step, staged in shared memory (kStaged):
// [8 NT tokens][kRowBytes] int8 (the step's columns, then padding), then
// [8 NT tokens][kSubs] {d, s}. Tokens past n_tok are zeros. A token's row
// is padded by 32 bytes so that the 8-byte loads of a half-warp (tokens g
// = 0-3, columns 8t) fall in 16 different banks.
template <typename D, int NT>
struct XStage {
  static constexpr int kTokens = 8 * NT;
  static constexpr int kRowBytes = D::kStepElems + 32;
  static constexpr int kQBytes = kTokens * kRowBytes;
  static constexpr int kBytes = kQBytes + kTokens * D::kSubs * static_cast<int>(sizeof(float2));
  static_assert(D::kStepElems % 16 == 0 && D::kSubs % 2 == 0, "whole 16-byte pieces a token");

  // Starts the copy of step s (all lanes of the warp take part).
  static __device__ __forceinline__ void load(uint8_t* buf, const int8_t* q, const float2* ds, int n_tok, int n_in,
                                              int nb, int s, int lane) {
    constexpr int kQPieces = D::kStepElems / 16, kDsPieces = D::kSubs / 2;
#pragma unroll
    for (int i = lane; i < kTokens * kQPieces; i += kWarp) {
      const int tok = i / kQPieces, piece = i % kQPieces;
      const bool valid = tok < n_tok;
      cp_async16(buf + tok * kRowBytes + 16 * piece, q + (valid ? tok : 0) * n_in + s * D::kStepElems + 16 * piece,
                 valid);
    }
#pragma unroll
    for (int i = lane; i < kTokens * kDsPieces; i += kWarp) {
      const int tok = i / kDsPieces, piece = i % kDsPieces;
      const bool valid = tok < n_tok;
      cp_async16(buf + kQBytes + (tok * D::kSubs + 2 * piece) * 8, ds + (valid ? tok : 0) * nb + s * D::kSubs + 2 * piece,
                 valid);
    }
  }
};

// The accessor of a staged step (the same calls as XLanes; col and blk
// relative to the step).
template <typename D, int NT>
struct XStaged {
  using Stage = XStage<D, NT>;
  const uint8_t* buf;
  int g, t;
  template <int, int kTile>
  __device__ __forceinline__ uint2 b(int col) const {
    return *reinterpret_cast<const uint2*>(buf + (8 * kTile + g) * Stage::kRowBytes + col);
  }
  template <int, int kTile>
  __device__ __forceinline__ float2 c(int i, int blk) const {
    return reinterpret_cast<const float2*>(buf + Stage::kQBytes)[(8 * kTile + 2 * t + i) * D::kSubs + blk];
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
template <typename D, int NT, int J, typename X, int... kTiles>
__device__ __forceinline__ void sub_block(const typename D::Raw (&raw)[2], const X& x, int col, int blk,
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
    const uint2 b = x.template b<NT, kTile>(col);
    const float2 x0 = x.template c<NT, kTile>(0, blk), x1 = x.template c<NT, kTile>(1, blk);
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

// Step s of the weights in `raw` times the activations: the whole row's
// columns from XLanes, or the step's own from a staged copy.
template <typename D, int NT, typename X, int... J>
__device__ __forceinline__ void step(const typename D::Raw (&raw)[2], const X& x, int s, float (&acc)[NT][4],
                                     std::integer_sequence<int, J...>) {
  constexpr bool kStaged = !std::is_same_v<X, XLanes>;
  const int col0 = kStaged ? 0 : s * D::kStepElems, blk0 = kStaged ? 0 : s * D::kSubs;
  (sub_block<D, NT, J>(raw, x, col0 + 32 * J + 8 * x.t, blk0 + J, acc, std::make_integer_sequence<int, NT>{}), ...);
}

// The K loop of a warp (steps warp, warp + kSplit, ...): the next step's
// weights in flight during this one's work. The activations are read through
// XLanes, or (kStaged) copied by the warp a step ahead into its two buffers
// of `stage` with cp.async, so that their L2 latency is off the path of the
// mmas.
template <typename D, int NT, int kSplit, bool kStaged>
__device__ __forceinline__ void k_loop(const uint8_t* const (&rows)[2], const XLanes& x, int warp, int n_steps,
                                       uint8_t* stage, float (&acc)[NT][4]) {
  using Stage = XStage<D, NT>;
  const int lane = 4 * x.g + x.t;
  typename D::Raw cur[2];
  int s = warp;
  if (s < n_steps) {
    cur[0] = D::load(rows[0], s, x.t);
    cur[1] = D::load(rows[1], s, x.t);
  }
  // The first weights are in flight while the kernel before finishes (launch.cuh).
  wait_then_launch_dependents();
  if constexpr (kStaged) {
    if (s < n_steps) Stage::load(stage, x.q, x.ds, x.n_tok, x.n_in, x.nb, s, lane);
    cp_async_commit();
  }
  for (int buf = 0; s < n_steps; s += kSplit, buf ^= 1) {
    typename D::Raw next[2];
    if (s + kSplit < n_steps) {
      next[0] = D::load(rows[0], s + kSplit, x.t);
      next[1] = D::load(rows[1], s + kSplit, x.t);
      if constexpr (kStaged) {
        Stage::load(stage + (buf ^ 1) * Stage::kBytes, x.q, x.ds, x.n_tok, x.n_in, x.nb, s + kSplit, lane);
      }
    }
    constexpr auto kSubs = std::make_integer_sequence<int, D::kSubs>{};
    if constexpr (kStaged) {
      cp_async_commit();
      cp_async_wait<1>();  // this step's copies (the next step's may still fly)
      __syncwarp();
      step<D, NT>(cur, XStaged<D, NT>{stage + buf * Stage::kBytes, x.g, x.t}, s, acc, kSubs);
      __syncwarp();  // read before the next iteration refills it
    } else {
      step<D, NT>(cur, x, s, acc, kSubs);
    }
    cur[0] = next[0];
    cur[1] = next[1];
  }
}

// Dynamic shared memory of a block: each warp's two staged steps.
template <typename D, int NT>
constexpr int stage_bytes(bool staged) {
  return staged ? split_warps(NT) * 2 * XStage<D, NT>::kBytes : 0;
}

// y = W x for the tile's rows and n_tok <= 8 NT tokens. Thread (g, t) ends
// holding rows g, g + 8 for tokens 8 nt + 2t, + 1 (the mma's C layout).
template <typename D, int NT, typename OutT, bool kOnePart, bool kStaged>
__global__ void __launch_bounds__(split_warps(NT) * kWarp, min_blocks(NT))
    mmq_kernel(const __grid_constant__ MatvecParts parts, const int8_t* __restrict__ q, const float2* __restrict__ ds,
               int n_tok, int64_t n_in, int64_t row_bytes) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int g = lane / 4, t = lane % 4;
  constexpr int kSplit = split_warps(NT);
  const WarpRows<OutT> tile = warp_rows<kRows, OutT, kOnePart>(parts, blockIdx.x);
  const uint8_t* const rows[2] = {weight_row(tile, g, row_bytes), weight_row(tile, g + 8, row_bytes)};
  const auto n_steps = static_cast<int>(n_in / D::kStepElems);
  const XLanes x{q, ds, n_tok, static_cast<int>(n_in), static_cast<int>(n_in / 32), g, t};
  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
  }
  extern __shared__ __align__(16) uint8_t stage[];
  k_loop<D, NT, kSplit, kStaged>(rows, x, warp, n_steps, stage + warp * 2 * XStage<D, NT>::kBytes, acc);
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

template <typename D, int NT, typename OutT, bool kOnePart, bool kStaged>
void launch_kernel_of(const MatvecParts& parts, const int8_t* q, const float2* ds, int n_tok, int64_t n_in,
                      cudaStream_t stream) {
  const int64_t row_bytes = n_in / D::kBlockElems * D::kBlockBytes;
  const auto blocks = static_cast<unsigned>(parts.groups(kRows));
  constexpr int kSmem = stage_bytes<D, NT>(kStaged);
  auto* kernel = mmq_kernel<D, NT, OutT, kOnePart, kStaged>;
  // Set at every launch (the attribute is per device; a host call, allowed
  // during capture): with the static `partial`, even 48 KB needs it.
  if constexpr (kStaged) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  }
  launch_kernel(kernel, blocks, split_warps(NT) * kWarp, kSmem, stream, parts, q, ds, n_tok, n_in, row_bytes);
}

template <typename D, unsigned kStagedTiles, int NT, typename OutT>
void launch_nt(const MatvecParts& parts, const int8_t* q, const float2* ds, int n_tok, int64_t n_in,
               cudaStream_t stream) {
  const bool staged = mmq_staged(NT, kStagedTiles);
  if (parts.n == 1) {
    if (staged) return launch_kernel_of<D, NT, OutT, true, true>(parts, q, ds, n_tok, n_in, stream);
    return launch_kernel_of<D, NT, OutT, true, false>(parts, q, ds, n_tok, n_in, stream);
  }
  if (staged) return launch_kernel_of<D, NT, OutT, false, true>(parts, q, ds, n_tok, n_in, stream);
  launch_kernel_of<D, NT, OutT, false, false>(parts, q, ds, n_tok, n_in, stream);
}

static_assert(kMmqMaxTokens == 32, "launch_out's cases cover four tiles of 8 tokens");

template <typename D, unsigned kStagedTiles, typename OutT>
void launch_out(const MatvecParts& parts, const int8_t* q, const float2* ds, int n_tok, int64_t n_in,
                cudaStream_t stream) {
  switch ((n_tok + 7) / 8) {
    case 1: return launch_nt<D, kStagedTiles, 1, OutT>(parts, q, ds, n_tok, n_in, stream);
    case 2: return launch_nt<D, kStagedTiles, 2, OutT>(parts, q, ds, n_tok, n_in, stream);
    case 3: return launch_nt<D, kStagedTiles, 3, OutT>(parts, q, ds, n_tok, n_in, stream);
    case 4: return launch_nt<D, kStagedTiles, 4, OutT>(parts, q, ds, n_tok, n_in, stream);
    default: return;  // unreachable: the entry passes 1 <= n_tok <= kMmqMaxTokens (32)
  }
}

// The typed launcher (mmq_kernels.h). Bit nt - 1 of kStagedTiles: a launch
// of nt token tiles stages its activations (where that was measured faster).
template <typename D, unsigned kStagedTiles>
void launch(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, int n_tok, int64_t n_in,
            cudaStream_t stream) {
  if (f32_out) return launch_out<D, kStagedTiles, float>(parts, q, ds, n_tok, n_in, stream);
  launch_out<D, kStagedTiles, __nv_bfloat16>(parts, q, ds, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels::mmq
