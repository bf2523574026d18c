// The BF16 tensor-core matmul of dequantized weights (mmd.h), shared by the
// weight types (included by mmd_*.cu; the decoders are mmq_decode.cuh's).
//
// A block of kWarps warps computes kMmdBlockRows rows (warp w: rows 16w ..
// 16w + 15) of a launch's parts for up to 8 NT tokens, over its share of the
// K steps: the k_split blocks of a thread-block cluster take consecutive
// shares of the steps. Per step, the block's threads copy the activations
// (8 NT tokens x the step's columns, BF16) into shared memory with cp.async,
// and every warp loads its rows' weights into registers, both a step ahead
// (two steps ahead in registers spilled at 6-8 tiles and lost: 14336 ->
// 4096 Q4_K at 64 tokens 62.6 -> 80.5 us). Per 32-column sub-block a thread
// dequantizes its 8 columns of rows g and g + 8 (w = dl q + nml: BF16
// pairs, or F32 rounded once; fragments()) into the A fragments of two
// mma.m16n8k16 (columns 8t .. 8t + 3 and 8t + 4 .. 8t + 7:
// any assignment of columns to k works as long as A and B agree), and per
// token tile it loads token g's same 8 columns (one 16-byte load: both B
// fragments) and issues the two mmas (F32 accumulation). No scale work is
// left per token: that is what the int8 mmq spends most of its issue slots
// on. The blocks of a cluster then add their sums through distributed
// shared memory, in cluster-rank order, each block storing a share of the
// rows: the result does not depend on timing, nor on n_tok (each token's
// column is summed alike).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include <cuda_bf16.h>

#include "backend/cuda/bf16x8.cuh"
#include "backend/cuda/cp_async.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matvec_rows.cuh"
#include "backend/cuda/mmd_kernels.h"
#include "backend/cuda/mmq_decode.cuh"

namespace cohort::cuda::kernels::mmd {

inline constexpr int kWarp = 32;
inline constexpr int kWarps = kMmdBlockRows / 16;
inline constexpr int kThreads = kWarps * kWarp;

// c += a · b, one m16n8k16 tile, BF16 inputs, F32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The activations of one K step in shared memory: [8 NT tokens][kRowBytes],
// a token's row padded by 64 bytes so that the 16-byte loads of lanes g and
// g + 1 (a quarter-warp: t = 0..3 of each) fall in different banks. Tokens
// past n_tok are zeros.
template <typename D, int NT>
struct Stage {
  static constexpr int kTokens = 8 * NT;
  static constexpr int kRowBytes = 2 * D::kStepElems + 64;
  static constexpr int kBytes = kTokens * kRowBytes;

  // Starts the copy of step s (every thread of the block takes part):
  // thread i copies 16-byte piece i % kPieces of tokens i / kPieces,
  // + kTokStep, ...
  static __device__ __forceinline__ void load(uint8_t* buf, const __nv_bfloat16* x, int n_tok, int n_in, int s) {
    constexpr int kPieces = 2 * D::kStepElems / 16, kTokStep = kThreads / kPieces;
    static_assert(kThreads % kPieces == 0 && kTokens % kTokStep == 0, "whole pieces and tokens a pass");
    const int piece = static_cast<int>(threadIdx.x) % kPieces, tok0 = static_cast<int>(threadIdx.x) / kPieces;
    uint8_t* const dst = buf + tok0 * kRowBytes + 16 * piece;
    const __nv_bfloat16* const src = x + s * D::kStepElems + 8 * piece;
#pragma unroll
    for (int k = 0; k < kTokens / kTokStep; ++k) {
      const int tok = tok0 + k * kTokStep;
      const bool valid = tok < n_tok;
      cp_async16(dst + k * kTokStep * kRowBytes, src + (valid ? tok : 0) * n_in, valid);
    }
  }
};

// The 8 weights of a thread's columns in one row: dl q + nml (the decoder's
// int8 q and its scales: mmq_decode.cuh). q becomes a float without an
// int-to-float conversion (a quarter of the FMA rate on sm_90): q + 128
// goes into the low byte of 2^23's significand, and 2^23 + 128 comes off
// exactly. Measured 3-7% faster than the conversion (Q4_K 4096 -> 14336 at
// 32 tokens 53.3 -> 51.5 us, Q8_0 82.2 -> 77.5 at 8).
template <bool kMins>
__device__ __forceinline__ void dequant(const mmq::Sub& r, float (&f)[8]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t biased = r.w[h] ^ 0x80808080u;  // q + 128 in each byte
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float q = __uint_as_float(__byte_perm(biased, 0x4B000000u, 0x7650u + i)) - 8388736.0f;
      f[4 * h + i] = kMins ? fmaf(r.dl, q, r.nml) : r.dl * q;
    }
  }
}

// Two weights of a row as a BF16 pair, dl q + nml for the bytes (q, 0..31)
// that kSel picks from w: q + 128 is exact in BF16 (a byte below 128 in
// the significand of 2^7: one byte permute), q comes off exactly, and one
// BF16 FMA rounds once, with dl and nml rounded to BF16 first (a relative
// 2^-9 on a sub-block's scale, as on its weights). Three instructions a
// pair against ten through F32.
//
// `exponent` is 0x43 (BF16 2^7's high byte), a kernel argument so that the
// compiler cannot fold it: as a constant, the permute's selector went to a
// register instead and was rebuilt before every use (two more instructions
// a pair).
template <uint32_t kSel>
__device__ __forceinline__ uint32_t pair_bf16(uint32_t w, uint32_t exponent, __nv_bfloat162 dl, __nv_bfloat162 nml) {
  const uint32_t biased = __byte_perm(w, exponent, kSel);
  const __nv_bfloat162 q = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&biased), __floats2bfloat162_rn(128.0f, 128.0f));
  const __nv_bfloat162 r = __hfma2(q, dl, nml);
  return *reinterpret_cast<const uint32_t*>(&r);
}

// The A fragments of sub-block J for rows g (raw[0]) and g + 8 (raw[1]):
// a_lo pairs columns 8t, 8t + 1 (row g, then g + 8) and 8t + 2, 8t + 3;
// a_hi columns 8t + 4 .. 8t + 7. The types with an offset hold unsigned
// values below 32 and take the BF16 pairs; the signed ones (Q8_0, Q6_K)
// go through F32.
template <typename D, int J>
__device__ __forceinline__ void fragments(const typename D::Raw (&raw)[2], uint32_t exponent, uint32_t (&a_lo)[4],
                                          uint32_t (&a_hi)[4]) {
  const mmq::Sub r0 = D::template sub<J>(raw[0]), r1 = D::template sub<J>(raw[1]);
  if constexpr (D::kMins) {
    const __nv_bfloat162 dl0 = __float2bfloat162_rn(r0.dl), nml0 = __float2bfloat162_rn(r0.nml);
    const __nv_bfloat162 dl1 = __float2bfloat162_rn(r1.dl), nml1 = __float2bfloat162_rn(r1.nml);
    a_lo[0] = pair_bf16<0x4140u>(r0.w[0], exponent, dl0, nml0);
    a_lo[1] = pair_bf16<0x4140u>(r1.w[0], exponent, dl1, nml1);
    a_lo[2] = pair_bf16<0x4342u>(r0.w[0], exponent, dl0, nml0);
    a_lo[3] = pair_bf16<0x4342u>(r1.w[0], exponent, dl1, nml1);
    a_hi[0] = pair_bf16<0x4140u>(r0.w[1], exponent, dl0, nml0);
    a_hi[1] = pair_bf16<0x4140u>(r1.w[1], exponent, dl1, nml1);
    a_hi[2] = pair_bf16<0x4342u>(r0.w[1], exponent, dl0, nml0);
    a_hi[3] = pair_bf16<0x4342u>(r1.w[1], exponent, dl1, nml1);
  } else {
    float f0[8], f1[8];
    dequant<D::kMins>(r0, f0);
    dequant<D::kMins>(r1, f1);
    a_lo[0] = pack2(f0[0], f0[1]);
    a_lo[1] = pack2(f1[0], f1[1]);
    a_lo[2] = pack2(f0[2], f0[3]);
    a_lo[3] = pack2(f1[2], f1[3]);
    a_hi[0] = pack2(f0[4], f0[5]);
    a_hi[1] = pack2(f1[4], f1[5]);
    a_hi[2] = pack2(f0[6], f0[7]);
    a_hi[3] = pack2(f1[6], f1[7]);
  }
}

// acc[nt] += sub-block J of the step in `raw` (rows g and g + 8) times every
// token tile of the staged step `buf`.
template <typename D, int NT, int J>
__device__ __forceinline__ void sub_block(const typename D::Raw (&raw)[2], uint32_t exponent, const uint8_t* buf,
                                          int g, int t, float (&acc)[NT][4]) {
  uint32_t a_lo[4], a_hi[4];
  fragments<D, J>(raw, exponent, a_lo, a_hi);
  const uint8_t* col = buf + g * Stage<D, NT>::kRowBytes + 2 * (32 * J + 8 * t);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const uint4 b = *reinterpret_cast<const uint4*>(col + 8 * nt * Stage<D, NT>::kRowBytes);
    mma_bf16(acc[nt], a_lo, b.x, b.y);
    mma_bf16(acc[nt], a_hi, b.z, b.w);
  }
}

template <typename D, int NT, int... J>
__device__ __forceinline__ void step(const typename D::Raw (&raw)[2], uint32_t exponent, const uint8_t* buf, int g,
                                     int t, float (&acc)[NT][4], std::integer_sequence<int, J...>) {
  (sub_block<D, NT, J>(raw, exponent, buf, g, t, acc), ...);
}

// Dynamic shared memory: two staged steps, later the block's sums
// [kMmdBlockRows][8 NT] F32 (at most as large).
template <typename D, int NT>
constexpr int smem_bytes() {
  constexpr int stages = 2 * Stage<D, NT>::kBytes, sums = kMmdBlockRows * 8 * NT * 4;
  return stages > sums ? stages : sums;
}

// grid: x = the launch's groups of kMmdBlockRows rows, y = the k_split
// blocks of a cluster (cluster dims (1, k_split, 1)).
// Two blocks a multiprocessor (16 warps): at most 128 registers a thread.
template <typename D, int NT, typename OutT, bool kOnePart>
__global__ void __launch_bounds__(kThreads, 2)
    mmd_kernel(const __grid_constant__ MatvecParts parts, const __nv_bfloat16* __restrict__ x, int n_tok, int n_in,
               int64_t row_bytes, uint32_t exponent) {
  using S = Stage<D, NT>;
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) uint8_t smem[];
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int g = lane / 4, t = lane % 4;
  const WarpRows<OutT> block = warp_rows<kMmdBlockRows, OutT, kOnePart>(parts, blockIdx.x);
  WarpRows<OutT> mine = block;
  mine.row0 += 16 * warp;
  const uint8_t* const rows[2] = {weight_row(mine, g, row_bytes), weight_row(mine, g + 8, row_bytes)};
  const int n_steps = n_in / D::kStepElems, split = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int s_begin = rank * n_steps / split, s_end = (rank + 1) * n_steps / split;

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
  typename D::Raw cur[2];
  if (s_begin < s_end) {
    cur[0] = D::load(rows[0], s_begin, t);
    cur[1] = D::load(rows[1], s_begin, t);
  }
  // The first weights are in flight while the kernel before finishes (launch.cuh).
  wait_then_launch_dependents();
  if (s_begin < s_end) S::load(smem, x, n_tok, n_in, s_begin);
  cp_async_commit();
  for (int s = s_begin, buf = 0; s < s_end; ++s, buf ^= 1) {
    typename D::Raw next[2];
    if (s + 1 < s_end) {
      next[0] = D::load(rows[0], s + 1, t);
      next[1] = D::load(rows[1], s + 1, t);
      S::load(smem + (buf ^ 1) * S::kBytes, x, n_tok, n_in, s + 1);
    }
    cp_async_commit();
    cp_async_wait<1>();  // this step's copies (the next step's may still fly)
    __syncthreads();
    step<D, NT>(cur, exponent, smem + buf * S::kBytes, g, t, acc, std::make_integer_sequence<int, D::kSubs>{});
    __syncthreads();  // read before the next iteration refills it (and before the sums below)
    cur[0] = next[0];
    cur[1] = next[1];
  }

  // The block's sums into its shared memory (the C layout: rows g, g + 8 x
  // tokens 2t, 2t + 1 of each tile), then the cluster's added in rank order.
  constexpr int kTok = 8 * NT;
  auto* sums = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) sums[(16 * warp + g + 8 * (i / 2)) * kTok + 8 * nt + 2 * t + i % 2] = acc[nt][i];
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int r_begin = rank * kMmdBlockRows / split, r_end = (rank + 1) * kMmdBlockRows / split;
  for (int i = static_cast<int>(threadIdx.x); i < (r_end - r_begin) * kTok; i += kThreads) {
    const int r = r_begin + i / kTok, tok = i % kTok;
    float sum = 0.0f;
    for (int k = 0; k < split; ++k) sum += cluster.map_shared_rank(sums, k)[r * kTok + tok];
    const int64_t row = block.row0 + r;
    if (tok < n_tok && row < block.n_out) store(block.y + tok * block.n_out + row, sum);
  }
  cluster.sync();  // no block leaves while another reads its sums
}

// The launch configuration of mmd_kernel<D, NT, ...> (attrs: two, filled here).
template <typename D, int NT, typename Kernel>
cudaLaunchConfig_t config_of(Kernel* kernel, unsigned groups, int k_split, cudaStream_t stream,
                             cudaLaunchAttribute (&attrs)[2]) {
  constexpr int kSmem = smem_bytes<D, NT>();
  // Set at every launch (the attribute is per device; a host call, allowed during capture).
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  attrs[0] = {};
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = 1;
  attrs[0].val.clusterDim.y = static_cast<unsigned>(k_split);
  attrs[0].val.clusterDim.z = 1;
  attrs[1] = {};
  attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[1].val.programmaticStreamSerializationAllowed = pdl_enabled() ? 1 : 0;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(groups, static_cast<unsigned>(k_split));
  config.blockDim = kThreads;
  config.dynamicSmemBytes = kSmem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = 2;
  return config;
}

template <typename D, int NT, typename OutT, bool kOnePart>
void launch_kernel_of(const MatvecParts& parts, const __nv_bfloat16* x, int n_tok, int64_t n_in, int k_split,
                      cudaStream_t stream) {
  auto* kernel = mmd_kernel<D, NT, OutT, kOnePart>;
  cudaLaunchAttribute attrs[2];
  const cudaLaunchConfig_t config =
      config_of<D, NT>(kernel, static_cast<unsigned>(parts.groups(kMmdBlockRows)), k_split, stream, attrs);
  const int64_t row_bytes = n_in / D::kBlockElems * D::kBlockBytes;
  constexpr uint32_t kExponent = 0x43;  // pair_bf16
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, parts, x, n_tok, static_cast<int>(n_in), row_bytes, kExponent));
}

template <typename D, int NT, typename OutT>
void launch_nt(const MatvecParts& parts, const __nv_bfloat16* x, int n_tok, int64_t n_in, int k_split,
               cudaStream_t stream) {
  if (parts.n == 1) return launch_kernel_of<D, NT, OutT, true>(parts, x, n_tok, n_in, k_split, stream);
  launch_kernel_of<D, NT, OutT, false>(parts, x, n_tok, n_in, k_split, stream);
}

static_assert(kMmdMaxTokens == 64, "launch_out's cases cover eight tiles of 8 tokens");

// Token tiles are taken in pairs (2, 4, 6, 8): fewer kernels to compile, at
// most 8 zero tokens of work.
template <typename D, typename OutT>
void launch_out(const MatvecParts& parts, const __nv_bfloat16* x, int n_tok, int64_t n_in, int k_split,
                cudaStream_t stream) {
  switch ((n_tok + 15) / 16) {
    case 1: return launch_nt<D, 2, OutT>(parts, x, n_tok, n_in, k_split, stream);
    case 2: return launch_nt<D, 4, OutT>(parts, x, n_tok, n_in, k_split, stream);
    case 3: return launch_nt<D, 6, OutT>(parts, x, n_tok, n_in, k_split, stream);
    case 4: return launch_nt<D, 8, OutT>(parts, x, n_tok, n_in, k_split, stream);
    default: return;  // unreachable: the entry passes 1 <= n_tok <= kMmdMaxTokens (64)
  }
}

// Clusters of k_split blocks that can be resident at once for n_tok tokens
// (the typed occupancy query of mmd_kernels.h).
template <typename D>
int resident_clusters(int n_tok, int k_split) {
  int n = 0;
  const auto query = [&](auto nt) {
    auto* kernel = mmd_kernel<D, decltype(nt)::value, __nv_bfloat16, true>;
    cudaLaunchAttribute attrs[2];
    const cudaLaunchConfig_t config = config_of<D, decltype(nt)::value>(kernel, 1, k_split, nullptr, attrs);
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, kernel, &config));
  };
  switch ((n_tok + 15) / 16) {
    case 1: query(std::integral_constant<int, 2>{}); break;
    case 2: query(std::integral_constant<int, 4>{}); break;
    case 3: query(std::integral_constant<int, 6>{}); break;
    default: query(std::integral_constant<int, 8>{}); break;
  }
  return n;
}

// The typed launcher (mmd_kernels.h).
template <typename D>
void launch(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in, int k_split,
            cudaStream_t stream) {
  if (f32_out) return launch_out<D, float>(parts, x, n_tok, n_in, k_split, stream);
  launch_out<D, __nv_bfloat16>(parts, x, n_tok, n_in, k_split, stream);
}

}  // namespace cohort::cuda::kernels::mmd
