// The int8 matvec kernels shared by the weight types (included by
// matvec_q8_*.cu). A warp computes R consecutive output rows; lane l takes
// units l, l + 32, ... of each row (consecutive lanes read consecutive
// bytes). The next units are loaded before the current ones are used, so
// two units per row and lane are in flight. Each unit is unpacked to int8
// words once (prepare) and multiplied with every token's int8 x by dp4a
// (dot; x loaded once per token for the R rows), so W is read once for all
// NT <= 8 tokens. The 32 partial sums of a row are added by warp shuffles.
//
// Two kernels differ in where x comes from. A lane's x loads are 16 bytes
// at a 64-byte stride across the warp (its unit's columns), so each one
// touches 16 cache lines: read from device memory (matvec_q8_kernel) they
// cost the L1 four times the wavefronts of a coalesced load, and at 8
// tokens those x loads, not the weights, bound the kernel. The resident
// kernel (matvec_q8_resident_kernel) first copies x into shared memory,
// coalesced, in 16-byte chunks swizzled so that the same lane pattern meets
// 8 different banks groups per quarter warp; its warps then take row groups
// in a grid-stride loop, so that a block copies x once for several groups.
// It is used from kResidentMinTokens tokens on, wherever x of NT tokens
// fits the block's shared memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <cuda_bf16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matvec_q8_decode.cuh"
#include "backend/cuda/matvec_q8_kernels.h"
#include "backend/cuda/matvec_rows.cuh"

namespace cohort::cuda::kernels::matvec_q8 {

inline constexpr int kWarpsPerBlock = 4;
inline constexpr int kWarp = 32;
// The resident kernel from this many tokens on. On an H200 (2026-12-03,
// cuda_kernel_bench, the llama3-8b shapes) it took 0.4-0.5x the time of the
// other at 8 tokens, but at 1-4 tokens (two rows per warp, more registers,
// so fewer warps fit) it was as fast or up to 30% slower, type by type.
inline constexpr int kResidentMinTokens = 5;
// Rows per warp: 2 up to 4 tokens (two rows' units in flight per lane), 1
// beyond (registers: the accumulators grow with the tokens).
constexpr int rows_per_warp(int n_tok) { return n_tok > 4 ? 1 : 2; }

template <typename D, int R>
__device__ __forceinline__ void load_units(const uint8_t* const (&wrow)[R], int64_t u, int64_t n_units,
                                           typename D::Unit (&units)[R]) {
  if (u < n_units) {
#pragma unroll
    for (int r = 0; r < R; ++r) units[r] = D::load(wrow[r], u);
  }
}

// acc[r][t] += unit u of row r times token t. The units are unpacked
// first; each token's x is then loaded once (from S: GlobalX or SharedX)
// and used for all R rows. Token t's x is at q + t * q_stride and its
// scales at ds + t * ds_stride.
template <typename D, int NT, int R, typename S = GlobalX>
__device__ __forceinline__ void accumulate(const typename D::Unit (&units)[R], int64_t u,
                                           const int8_t* __restrict__ q, int64_t q_stride,
                                           const float2* __restrict__ ds, int64_t ds_stride,
                                           float (&acc)[R][NT]) {
  typename D::Prep p[R];
#pragma unroll
  for (int r = 0; r < R; ++r) p[r] = D::prepare(units[r], u);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const typename D::X x = D::template load_x<S>(u, q + t * q_stride, ds + t * ds_stride);
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r][t] = D::dot(p[r], x, acc[r][t]);
  }
}

// The rows of `parts` (matvec_parts.h) of row_bytes each, x from device
// memory.
template <typename D, int NT, int R, typename OutT, bool kOnePart>
__device__ __forceinline__ void matvec_q8_body(const MatvecParts& parts, const int8_t* __restrict__ q,
                                               const float2* __restrict__ ds, int64_t n_in, int64_t row_bytes) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  const WarpRows<OutT> wr = warp_rows<R, OutT, kOnePart>(parts, g);
  if (!wr.valid) return;  // the whole warp leaves together
  // Past the part's last row the last row is read again and its sums are
  // not stored.
  const uint8_t* wrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = weight_row(wr, r, row_bytes);
  const int64_t n_units = n_in / D::kUnitElems;
  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;
  }
  typename D::Unit cur[R];
  load_units<D, R>(wrow, lane, n_units, cur);
  // The first weights are in flight while the kernel before finishes (launch.cuh).
  wait_then_launch_dependents();
  for (int64_t u = lane; u < n_units; u += kWarp) {
    typename D::Unit next[R];
    load_units<D, R>(wrow, u + kWarp, n_units, next);
    accumulate<D, NT, R>(cur, u, q, n_in, ds, n_in / kQBlock, acc);
#pragma unroll
    for (int r = 0; r < R; ++r) cur[r] = next[r];
  }
  reduce_and_store<R, NT, OutT>(acc, lane, wr);
}

template <typename D, int NT, int R, typename OutT, bool kOnePart>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
    matvec_q8_kernel(const __grid_constant__ MatvecParts parts, const int8_t* __restrict__ q,
                     const float2* __restrict__ ds, int64_t n_in, int64_t row_bytes) {
  matvec_q8_body<D, NT, R, OutT, kOnePart>(parts, q, ds, n_in, row_bytes);
}

// As matvec_impl.cuh's matvec_parts1_kernel: several parts at one token,
// held to the blocks of the one-part kernel (71 registers on sm_90, 7
// blocks; 88 without the bound).
inline constexpr int kParts1MinBlocks = 7;
template <typename D, int R, typename OutT>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp, kParts1MinBlocks)
    matvec_q8_parts1_kernel(const __grid_constant__ MatvecParts parts, const int8_t* __restrict__ q,
                            const float2* __restrict__ ds, int64_t n_in, int64_t row_bytes) {
  matvec_q8_body<D, 1, R, OutT, false>(parts, q, ds, n_in, row_bytes);
}

// --- x resident in shared memory ---------------------------------------------

// x of one token in shared memory: rows of stride(n_in) 16-byte chunks;
// chunk k of a row sits at k ^ ((k >> 3) & 7), a permutation inside each
// aligned group of 8 chunks (128 bytes). A quarter warp's 16-byte loads of
// chunk 4u + i (K-quants) or 2u + i (32-blocks) of 8 consecutive units u
// then fall in 8 different 16-byte bank groups. The {d, s} of all tokens
// follow, unswizzled, token t's at t * (n_in / 32).
struct SharedX {
  static __device__ __forceinline__ int slot(int k) { return k ^ ((k >> 3) & 7); }
  static __device__ __forceinline__ uint4 q16(const int8_t* q, int64_t col) {
    return reinterpret_cast<const uint4*>(q)[slot(static_cast<int>(col) >> 4)];  // col < n_in < 2^31
  }
  static __device__ __forceinline__ float2 ds(const float2* ds, int64_t b) { return ds[static_cast<int>(b)]; }
  // Chunks per token row: n_in / 16 rounded up to whole groups of 8.
  static constexpr __host__ __device__ int64_t stride(int64_t n_in) { return (n_in / 16 + 7) / 8 * 8; }
  static constexpr __host__ __device__ size_t bytes(int n_tok, int64_t n_in) {
    return static_cast<size_t>(n_tok) * (static_cast<size_t>(stride(n_in)) * 16 + static_cast<size_t>(n_in / kQBlock) * 8);
  }
};

// The R rows of group g (past its part's last row the last again, whose
// sums are not stored) and their first units.
template <typename D, int R, typename OutT>
__device__ __forceinline__ WarpRows<OutT> start_group(const MatvecParts& parts, int64_t g, int64_t row_bytes,
                                                      int lane, int64_t n_units, const uint8_t* (&wrow)[R],
                                                      typename D::Unit (&units)[R]) {
  const WarpRows<OutT> wr = warp_rows<R, OutT, false>(parts, g);
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = weight_row(wr, r, row_bytes);
  load_units<D, R>(wrow, lane, n_units, units);
  return wr;
}

template <typename D, int NT, int R, typename OutT>
__global__ void __launch_bounds__(512)
    matvec_q8_resident_kernel(const __grid_constant__ MatvecParts parts, const int8_t* __restrict__ q,
                              const float2* __restrict__ ds, int64_t n_in, int64_t row_bytes) {
  extern __shared__ uint4 xs[];
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  const int64_t n_groups = parts.groups(R), n_units = n_in / D::kUnitElems;
  const int64_t step = static_cast<int64_t>(gridDim.x) * warps;
  int64_t g = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / kWarp;
  // The first group's weights are requested before x is copied.
  const uint8_t* wrow[R];
  typename D::Unit cur[R];
  WarpRows<OutT> wr{};
  if (g < n_groups) wr = start_group<D, R, OutT>(parts, g, row_bytes, lane, n_units, wrow, cur);
  wait_then_launch_dependents();  // x is the kernel before's output (launch.cuh)
  const int64_t chunks = n_in / 16, stride = SharedX::stride(n_in), nb = n_in / kQBlock;
  for (int64_t i = threadIdx.x; i < NT * chunks; i += blockDim.x) {
    const int64_t t = i / chunks, k = i - t * chunks;
    xs[t * stride + SharedX::slot(static_cast<int>(k))] = ldg(reinterpret_cast<const uint4*>(q + t * n_in) + k);
  }
  float2* dss = reinterpret_cast<float2*>(xs + NT * stride);
  for (int64_t i = threadIdx.x; i < NT * nb; i += blockDim.x) dss[i] = ldg(ds + i);
  __syncthreads();
  const auto* qs = reinterpret_cast<const int8_t*>(xs);
  for (; g < n_groups; g += step) {
    float acc[R][NT];
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;
    }
    for (int64_t u = lane; u < n_units; u += kWarp) {
      typename D::Unit next[R];
      load_units<D, R>(wrow, u + kWarp, n_units, next);
      accumulate<D, NT, R, SharedX>(cur, u, qs, stride * 16, dss, nb, acc);
#pragma unroll
      for (int r = 0; r < R; ++r) cur[r] = next[r];
    }
    const WarpRows<OutT> done = wr;
    if (g + step < n_groups) wr = start_group<D, R, OutT>(parts, g + step, row_bytes, lane, n_units, wrow, cur);
    reduce_and_store<R, NT, OutT>(acc, lane, done);
  }
}

// Launches the resident kernel of D for NT tokens; false (nothing launched)
// where their x does not fit one block's shared memory.
template <typename D, int NT, typename OutT>
bool launch_resident(const MatvecParts& parts, const int8_t* q, const float2* ds, int64_t n_in, int64_t row_bytes,
                     cudaStream_t stream) {
  constexpr int R = rows_per_warp(NT);
  const ResidentLimits& lim = resident_limits();
  const size_t x_bytes = SharedX::bytes(NT, n_in);
  if (x_bytes > lim.smem_per_block) return false;
  auto* kernel = matvec_q8_resident_kernel<D, NT, R, OutT>;
  // The opt-in to more than 48 KB, once per device (bit d of `raised`).
  static std::atomic<uint64_t> raised{0};
  const uint64_t bit = uint64_t{1} << (lim.device % 64);
  if (x_bytes > 48 * 1024 && (raised.load(std::memory_order_relaxed) & bit) == 0) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(lim.smem_per_block)));
    raised.fetch_or(bit, std::memory_order_relaxed);
  }
  static const int regs = [&] {
    cudaFuncAttributes a{};
    CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
    return a.numRegs;
  }();
  // 8 warps a block while x is small (several blocks share a multiprocessor),
  // 16 when it is large (one block holds it for more warps).
  const int warps = x_bytes <= 32 * 1024 ? 8 : 16;
  const int threads = warps * kWarp;
  const int by_regs = 65536 / (threads * ((regs + 7) / 8 * 8));
  const int by_smem = static_cast<int>(lim.smem_per_sm / (x_bytes + 1024));
  const int per_sm = std::max(1, std::min({by_regs, by_smem, 2048 / threads, 32}));
  const int64_t n_groups = parts.groups(R);
  const int64_t wanted = (n_groups + warps - 1) / warps;  // one group per warp
  // Fewer blocks than that where copying x into every block would read more
  // than a quarter of W's bytes again: then the warps loop over groups.
  const int64_t w_bytes = row_bytes * parts.rows();
  const int64_t by_traffic =
      std::max<int64_t>(static_cast<int64_t>(per_sm) * lim.sm_count, w_bytes / (4 * static_cast<int64_t>(x_bytes)));
  const auto blocks = static_cast<unsigned>(std::min(wanted, by_traffic));
  launch_kernel(kernel, blocks, threads, x_bytes, stream, parts, q, ds, n_in, row_bytes);
  return true;
}

template <typename D, int NT, typename OutT>
void launch_nt(const MatvecParts& parts, const int8_t* q, const float2* ds, bool global_x, int64_t n_in,
               cudaStream_t stream) {
  const int64_t row_bytes = n_in / D::kBlockElems * D::kBlockBytes;
  if constexpr (NT >= kResidentMinTokens) {
    if (!global_x && launch_resident<D, NT, OutT>(parts, q, ds, n_in, row_bytes, stream)) return;
  }
  constexpr int R = rows_per_warp(NT);
  const auto blocks = static_cast<unsigned>((parts.groups(R) + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const unsigned threads = kWarpsPerBlock * kWarp;
  if (parts.n == 1) {  // without the parts' lookups (warp_rows)
    launch_kernel(matvec_q8_kernel<D, NT, R, OutT, true>, blocks, threads, 0, stream, parts, q, ds, n_in, row_bytes);
  } else if constexpr (NT == 1) {
    launch_kernel(matvec_q8_parts1_kernel<D, R, OutT>, blocks, threads, 0, stream, parts, q, ds, n_in, row_bytes);
  } else {
    launch_kernel(matvec_q8_kernel<D, NT, R, OutT, false>, blocks, threads, 0, stream, parts, q, ds, n_in, row_bytes);
  }
}

template <typename D, typename OutT>
void launch_out(const MatvecParts& parts, const int8_t* q, const float2* ds, bool global_x, int n_tok, int64_t n_in,
                cudaStream_t stream) {
  switch (n_tok) {
    case 1: return launch_nt<D, 1, OutT>(parts, q, ds, global_x, n_in, stream);
    case 2: return launch_nt<D, 2, OutT>(parts, q, ds, global_x, n_in, stream);
    case 3: return launch_nt<D, 3, OutT>(parts, q, ds, global_x, n_in, stream);
    case 4: return launch_nt<D, 4, OutT>(parts, q, ds, global_x, n_in, stream);
    case 5: return launch_nt<D, 5, OutT>(parts, q, ds, global_x, n_in, stream);
    case 6: return launch_nt<D, 6, OutT>(parts, q, ds, global_x, n_in, stream);
    case 7: return launch_nt<D, 7, OutT>(parts, q, ds, global_x, n_in, stream);
    case 8: return launch_nt<D, 8, OutT>(parts, q, ds, global_x, n_in, stream);
    default: return;  // unreachable: the entry checks 1 <= n_tok <= 8
  }
}

// The typed launcher: n_tok (1..8, checked by the entry) picks the kernel;
// global_x keeps x in device memory (the resident kernel otherwise, from
// kResidentMinTokens tokens on, where x fits).
template <typename D>
void launch(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, bool global_x, int n_tok,
            int64_t n_in, cudaStream_t stream) {
  if (f32_out) return launch_out<D, float>(parts, q, ds, global_x, n_tok, n_in, stream);
  launch_out<D, __nv_bfloat16>(parts, q, ds, global_x, n_tok, n_in, stream);
}

}  // namespace cohort::cuda::kernels::matvec_q8
