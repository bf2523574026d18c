// Causal prefill attention over the paged KV cache, FlashAttention-2 style.
//
// One thread block of kWarps warps per (tile of up to kPrefillTileRows query
// rows, query head); warp w owns rows [16w, 16w + 16). Blocks of one tile
// and consecutive heads are adjacent in the grid, so the query heads of a
// KV-head group read the same K/V while it is in L2; the tiles run from the
// last (the most keys) to the first, so the long blocks start first.
//
// The cache holds F16, BF16 or Q8_0 (the view's type, a template parameter
// here): the matrix products take BF16 for a BF16 cache, else F16. Q is
// converted to it (F16) or taken as it is (BF16) and staged in shared memory
// once. The K and V tiles of kBc keys are copied from the paged cache with
// cp.async into two shared buffers (keys past the tile's last position are
// zero-filled and never read from the cache), so the copy of key tile i + 1
// overlaps the work on tile i. A Q8_0 tile is loaded into registers and
// stored dequantized to F16 instead (q * d in F32, rounded once), which does
// not overlap. Per key tile, each warp
//   1. S = Q Kᵀ with mma.sync m16n8k16 (F16 in, F32 accumulate), the K
//      fragments read by ldmatrix,
//   2. scales S by scale * log2(e) and masks keys past each row's position
//      (only on the tiles that reach past the warp's first position),
//   3. updates its online softmax (running max and sum per row, in log2
//      units, F32) and rescales O,
//   4. O += P V, P rounded to F16 (BF16) in the registers that held S (the m16n8
//      accumulator layout of two n-tiles is the m16k16 A-fragment layout),
//      the V fragments read by ldmatrix.trans.
// A warp skips the tiles that are masked for all its rows and, in a short
// tile, the rows past its end. Shared rows are padded by 16 bytes so the 8
// row addresses of an ldmatrix fall in distinct banks.
// head_dim 64 and 128 keep the Q fragments in registers with kBc 64;
// head_dim 256 re-reads them from shared memory with kBc 32, since its O
// accumulator alone is 128 floats a thread.
#include "backend/cuda/prefill_attention_kernels.h"

#include <cmath>

#include <cuda_fp16.h>

#include "backend/cuda/bf16x8.cuh"
#include "backend/cuda/cp_async.cuh"
#include "backend/cuda/cuda_check.h"

namespace cohort::cuda::kernels {
namespace {

constexpr int kWarps = kPrefillTileRows / 16;
constexpr int kThreads = kWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct Config {
  static constexpr int kBc = D <= 128 ? 64 : 32;  // keys per tile (untuned)
  static constexpr int kStride = D + 8;           // halves per shared row, padded
  static constexpr bool kQInRegisters = D <= 128;
  static constexpr int kTileHalves = kBc * kStride;
  // Q, then K and V of buffer 0, then of buffer 1.
  static constexpr size_t kSmemBytes = (kPrefillTileRows * kStride + 4 * kTileHalves) * sizeof(__half);
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a · b, one m16n8k16 tile, F16 (BF16 with kBf16) inputs, F32 accumulators.
template <bool kBf16>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  return static_cast<uint32_t>(__half_as_ushort(__float2half_rn(lo))) |
         (static_cast<uint32_t>(__half_as_ushort(__float2half_rn(hi))) << 16);
}

// Two F32 as the matrix inputs' type.
template <bool kBf16>
__device__ __forceinline__ uint32_t pack_in2(float lo, float hi) {
  return kBf16 ? pack2(lo, hi) : pack_f16x2(lo, hi);
}

// Eight BF16 to eight F16, saturating at the F16 range (exact inside it).
__device__ __forceinline__ uint4 bf16x8_to_f16x8(uint4 v) {
  float f[8];
  unpack8(v, f);
#pragma unroll
  for (float& x : f) x = fminf(fmaxf(x, -65504.0f), 65504.0f);
  return make_uint4(pack_f16x2(f[0], f[1]), pack_f16x2(f[2], f[3]), pack_f16x2(f[4], f[5]),
                    pack_f16x2(f[6], f[7]));
}

// The tile's q rows of head h into sQ as F16, or as BF16 with kBf16 (rows
// past n_rows as zeros).
template <int D, bool kBf16>
__device__ void stage_q(const __nv_bfloat16* __restrict__ q, const PrefillTile& tile, int h, int n_head,
                        __half* sq) {
  constexpr int kChunks = D / 8;
  for (int c = static_cast<int>(threadIdx.x); c < kPrefillTileRows * kChunks; c += kThreads) {
    const int r = c / kChunks, ch = c % kChunks;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < tile.n_rows) {
      const int64_t off = (static_cast<int64_t>(tile.row + r) * n_head + h) * D + 8 * ch;
      v = __ldg(reinterpret_cast<const uint4*>(q + off));
      if constexpr (!kBf16) v = bf16x8_to_f16x8(v);
    }
    *reinterpret_cast<uint4*>(sq + r * Config<D>::kStride + 8 * ch) = v;
  }
}

// Eight Q8_0 elements (quants and their F16 scale) as eight F16, q * d
// rounded once, saturating at the F16 range.
__device__ __forceinline__ uint4 q8x8_to_f16x8(uint2 q, __half scale) {
  const float d = __half2float(scale);
  float f[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t w = i < 4 ? q.x : q.y;
    f[i] = fminf(fmaxf(static_cast<float>(static_cast<int8_t>(w >> (8 * (i % 4)))) * d, -65504.0f), 65504.0f);
  }
  return make_uint4(pack_f16x2(f[0], f[1]), pack_f16x2(f[2], f[3]), pack_f16x2(f[4], f[5]),
                    pack_f16x2(f[6], f[7]));
}

// Starts the copy of keys [j0, j0 + kBc) of KV head kvh into sk, sv (for
// Q8_0: copies them); keys at or past kv_end are zeros.
template <int D, KvType kType>
__device__ void load_kv_tile(const KvCacheView& cache, const int32_t* __restrict__ table, int kvh, int j0,
                             int kv_end, __half* sk, __half* sv) {
  using C = Config<D>;
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = 0; i < C::kBc * kChunks / kThreads; ++i) {
    const int c = i * kThreads + static_cast<int>(threadIdx.x);
    const int r = c / kChunks, ch = c % kChunks, j = j0 + r;
    const bool valid = j < kv_end;
    int64_t off = 0;
    if (valid) {
      const int64_t slot = static_cast<int64_t>(__ldg(table + j / kKvBlockSize)) * kKvBlockSize + j % kKvBlockSize;
      off = (slot * cache.n_head_kv + kvh) * D + 8 * ch;
    }
    __half* dk = sk + r * C::kStride + 8 * ch;
    __half* dv = sv + r * C::kStride + 8 * ch;
    if constexpr (kType == KvType::kQ8_0) {
      uint4 k = make_uint4(0, 0, 0, 0), v = k;
      if (valid) {
        k = q8x8_to_f16x8(__ldg(reinterpret_cast<const uint2*>(static_cast<const int8_t*>(cache.k) + off)),
                          __ldg(cache.k_scale + off / 32));
        v = q8x8_to_f16x8(__ldg(reinterpret_cast<const uint2*>(static_cast<const int8_t*>(cache.v) + off)),
                          __ldg(cache.v_scale + off / 32));
      }
      *reinterpret_cast<uint4*>(dk) = k;
      *reinterpret_cast<uint4*>(dv) = v;
    } else {
      cp_async16(dk, static_cast<const __half*>(cache.k) + off, valid);
      cp_async16(dv, static_cast<const __half*>(cache.v) + off, valid);
    }
  }
}

// One warp's 16 rows: the Q fragments (when kept in registers), the online
// softmax state of the lane's two rows (g and g + 8 of the m16n8 layout)
// and its share of O.
template <int D, bool kBf16>
struct WarpRows {
  using C = Config<D>;
  static constexpr int kKSteps = D / 16;
  uint32_t qf[C::kQInRegisters ? kKSteps : 1][4];
  float o[D / 8][4];
  float m[2], l[2];

  __device__ void init(const __half* sq_warp, int lane) {
#pragma unroll
    for (auto& t : o) t[0] = t[1] = t[2] = t[3] = 0.0f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;
    if constexpr (C::kQInRegisters) {
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) load_q(qf[kk], sq_warp, kk, lane);
    }
  }

  // The A fragment of k-step kk: matrices (rows 0-7 | 8-15) x (dims 0-7 | 8-15).
  __device__ static void load_q(uint32_t (&a)[4], const __half* sq_warp, int kk, int lane) {
    ldmatrix_x4(a, sq_warp + (lane % 8 + (lane / 8) % 2 * 8) * C::kStride + kk * 16 + lane / 16 * 8);
  }

  // s = Q Kᵀ for the kBc keys of sk.
  __device__ void scores(float (&s)[C::kBc / 8][4], const __half* sq_warp, const __half* sk, int lane) const {
#pragma unroll
    for (auto& t : s) t[0] = t[1] = t[2] = t[3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      uint32_t a[4];
      if constexpr (C::kQInRegisters) {
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = qf[kk][i];
      } else {
        load_q(a, sq_warp, kk, lane);
      }
#pragma unroll
      for (int np = 0; np < C::kBc / 16; ++np) {
        uint32_t b[4];  // keys (np16 + 0-7 | 8-15) x dims (0-7 | 8-15) of this k-step
        ldmatrix_x4(b, sk + (np * 16 + lane / 16 * 8 + lane % 8) * C::kStride + kk * 16 + (lane / 8) % 2 * 8);
        mma<kBf16>(s[2 * np], a, b[0], b[1]);
        mma<kBf16>(s[2 * np + 1], a, b[2], b[3]);
      }
    }
  }

  // Scales s to log2 units, masks keys j > p (row positions p0, p0 + 8) when
  // `mask`, and turns s into the probabilities of the updated softmax.
  __device__ void softmax(float (&s)[C::kBc / 8][4], float qk_scale, bool mask, int j0, int p0, int lane) {
    float top[2] = {m[0], m[1]};
#pragma unroll
    for (int nt = 0; nt < C::kBc / 8; ++nt) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = j0 + nt * 8 + 2 * (lane % 4) + c % 2;
        s[nt][c] = mask && j > p0 + c / 2 * 8 ? -INFINITY : s[nt][c] * qk_scale;
        top[c / 2] = fmaxf(top[c / 2], s[nt][c]);
      }
    }
    float base[2], corr[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      top[r] = fmaxf(top[r], __shfl_xor_sync(0xFFFFFFFFu, top[r], 1));
      top[r] = fmaxf(top[r], __shfl_xor_sync(0xFFFFFFFFu, top[r], 2));
      base[r] = top[r] == -INFINITY ? 0.0f : top[r];  // a row with no key yet stays empty
      corr[r] = exp2f(m[r] - base[r]);                // 0 on the first keys (m = -inf)
      m[r] = top[r];
    }
#pragma unroll
    for (int nt = 0; nt < C::kBc / 8; ++nt) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        s[nt][c] = exp2f(s[nt][c] - base[c / 2]);
        sum[c / 2] += s[nt][c];
      }
    }
    // l and O are per lane: the lanes of a row share m, so their sums add up at the end.
#pragma unroll
    for (int r = 0; r < 2; ++r) l[r] = fmaf(l[r], corr[r], sum[r]);
#pragma unroll
    for (auto& t : o) {
      t[0] *= corr[0];
      t[1] *= corr[0];
      t[2] *= corr[1];
      t[3] *= corr[1];
    }
  }

  // O += P V for the kBc keys of sv.
  __device__ void accumulate(const float (&p)[C::kBc / 8][4], const __half* sv, int lane) {
#pragma unroll
    for (int kk = 0; kk < C::kBc / 16; ++kk) {
      const uint32_t a[4] = {pack_in2<kBf16>(p[2 * kk][0], p[2 * kk][1]),
                             pack_in2<kBf16>(p[2 * kk][2], p[2 * kk][3]),
                             pack_in2<kBf16>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                             pack_in2<kBf16>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        uint32_t b[4];  // keys (kk16 + 0-7 | 8-15) x dims (np16 + 0-7 | 8-15), transposed
        ldmatrix_x4_trans(b, sv + (kk * 16 + (lane / 8) % 2 * 8 + lane % 8) * C::kStride + np * 16 + lane / 16 * 8);
        mma<kBf16>(o[2 * np], a, b[0], b[1]);
        mma<kBf16>(o[2 * np + 1], a, b[2], b[3]);
      }
    }
  }

  // Normalises and writes the lane's rows that are in the tile.
  __device__ void store(__nv_bfloat16* __restrict__ out, const PrefillTile& tile, int h, int n_head, int row0,
                        int lane) {
#pragma unroll
    for (float& sum : l) {
      sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
      sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + lane / 4 + 8 * r;
      if (row >= tile.n_rows) continue;
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      __nv_bfloat16* dst = out + (static_cast<int64_t>(tile.row + row) * n_head + h) * D + 2 * (lane % 4);
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt) {
        *reinterpret_cast<uint32_t*>(dst + nt * 8) = pack2(o[nt][2 * r] * inv, o[nt][2 * r + 1] * inv);
      }
    }
  }
};

// grid: x = query heads, y = tiles (last first).
template <int D, KvType kType>
__global__ void __launch_bounds__(kThreads)
    prefill_attention_kernel(KvCacheView cache, const __nv_bfloat16* __restrict__ q,
                             const PrefillTile* __restrict__ tiles, const int32_t* __restrict__ block_table,
                             PrefillShape shape, float qk_scale, __nv_bfloat16* __restrict__ out) {
  using C = Config<D>;
  constexpr bool kBf16 = kType == KvType::kBf16;  // the matrix inputs' type (else F16)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* sq = reinterpret_cast<__half*>(smem_raw);
  __half* skv = sq + kPrefillTileRows * C::kStride;  // [2 buffers][K, V][kBc, kStride]
  const PrefillTile tile = tiles[shape.n_tiles - 1 - static_cast<int>(blockIdx.y)];
  const int h = static_cast<int>(blockIdx.x), kvh = h / (shape.n_head / shape.n_head_kv);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int32_t* table = block_table + static_cast<int64_t>(tile.seq) * shape.max_blocks;
  const int kv_end = tile.pos + tile.n_rows, n_kv = (kv_end + C::kBc - 1) / C::kBc;

  load_kv_tile<D, kType>(cache, table, kvh, 0, kv_end, skv, skv + C::kTileHalves);
  cp_async_commit();
  stage_q<D, kBf16>(q, tile, h, shape.n_head, sq);
  __syncthreads();
  const __half* sq_warp = sq + warp * 16 * C::kStride;
  WarpRows<D, kBf16> rows;
  rows.init(sq_warp, lane);
  const int first_pos = tile.pos + warp * 16;  // the warp's first row's position
  const bool active = warp * 16 < tile.n_rows;
  for (int it = 0; it < n_kv; ++it) {
    if (it + 1 < n_kv) {
      __half* next = skv + ((it + 1) % 2) * 2 * C::kTileHalves;
      load_kv_tile<D, kType>(cache, table, kvh, (it + 1) * C::kBc, kv_end, next, next + C::kTileHalves);
    }
    cp_async_commit();  // an empty group on the last tile keeps the count uniform
    cp_async_wait<1>();
    __syncthreads();
    const int j0 = it * C::kBc;
    if (active && j0 <= first_pos + 15) {
      const __half* sk = skv + (it % 2) * 2 * C::kTileHalves;
      float s[C::kBc / 8][4];
      rows.scores(s, sq_warp, sk, lane);
      rows.softmax(s, qk_scale, j0 + C::kBc - 1 > first_pos, j0, first_pos + lane / 4, lane);
      rows.accumulate(s, sk + C::kTileHalves, lane);
    }
    __syncthreads();  // the buffer is refilled by the next iteration but one
  }
  if (active) rows.store(out, tile, h, shape.n_head, warp * 16, lane);
}

template <int D, KvType kType>
void launch_for_type(const KvCacheView& cache, const __nv_bfloat16* q, const PrefillTile* tiles,
                     const int32_t* block_table, const PrefillShape& shape, float scale, __nv_bfloat16* out,
                     cudaStream_t stream) {
  constexpr size_t kBytes = Config<D>::kSmemBytes;
  // Set at every launch: the attribute is per device, and this is cheap.
  CUDA_CHECK(cudaFuncSetAttribute(prefill_attention_kernel<D, kType>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(kBytes)));
  const dim3 grid(static_cast<unsigned>(shape.n_head), static_cast<unsigned>(shape.n_tiles));
  prefill_attention_kernel<D, kType><<<grid, kThreads, kBytes, stream>>>(cache, q, tiles, block_table, shape,
                                                                         scale * kLog2e, out);
  CUDA_CHECK(cudaGetLastError());
}

template <int D>
void launch_for_dim(const KvCacheView& cache, const __nv_bfloat16* q, const PrefillTile* tiles,
                    const int32_t* block_table, const PrefillShape& shape, float scale, __nv_bfloat16* out,
                    cudaStream_t stream) {
  switch (cache.type) {
    case KvType::kF16: return launch_for_type<D, KvType::kF16>(cache, q, tiles, block_table, shape, scale, out, stream);
    case KvType::kBf16:
      return launch_for_type<D, KvType::kBf16>(cache, q, tiles, block_table, shape, scale, out, stream);
    case KvType::kQ8_0:
      return launch_for_type<D, KvType::kQ8_0>(cache, q, tiles, block_table, shape, scale, out, stream);
  }
}

}  // namespace

void launch_prefill_attention(const KvCacheView& cache, const __nv_bfloat16* q, const PrefillTile* tiles,
                              const int32_t* block_table, const PrefillShape& shape, float scale,
                              __nv_bfloat16* out, cudaStream_t stream) {
  switch (shape.head_dim) {
    case 64: return launch_for_dim<64>(cache, q, tiles, block_table, shape, scale, out, stream);
    case 128: return launch_for_dim<128>(cache, q, tiles, block_table, shape, scale, out, stream);
    default: return launch_for_dim<256>(cache, q, tiles, block_table, shape, scale, out, stream);
  }
}

}  // namespace cohort::cuda::kernels
