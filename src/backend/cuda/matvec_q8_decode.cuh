// The weight decoders of the int8 matvec (matvec_q8.h), one per GGUF type,
// and the per-block activation quantizer. Compiled for the host as well
// (stand-ins for __dp4a and the loads, from matvec_decode.cuh), so that
// matvec_q8_test.cpp checks the arithmetic on any machine.
//
// A decoder provides:
//   kUnitElems                 columns per unit (one lane's share of a block)
//   kBlockElems, kBlockBytes   the GGUF block
//   Unit, load(row, u)         the raw bytes of unit u of a row
//   Prep, prepare(unit, u)     the weights as int8 words (4 per word, in
//                              column order) and their F32 scales; done once
//                              for all tokens
//   X, load_x<S>(u, q, ds)     one token's int8 x and block scales at the
//                              unit's columns (q, ds: that token's row),
//                              loaded once for all the rows of a warp, from
//                              device memory (S = GlobalX) or from the
//                              block's shared copy (SharedX,
//                              matvec_q8_impl.cuh)
//   dot(prep, x, acc)          acc + the unit's part of that token's dot
//                              product
// A dp4a word holds weights 4i..4i+3 of a run and meets the int8 word of x
// at the same columns (16-byte x loads, four dp4a each), so a weight costs
// 1/4 dp4a per token plus its share of the unpacking, which is token-free.
#pragma once

#include <cstdint>

#include "backend/cuda/matvec_decode.cuh"
#include "quant/blocks.h"

#if !defined(__CUDACC__)
#include <cmath>
#endif

namespace cohort::cuda::kernels::matvec_q8 {

using matvec_decode::half_bits;
using matvec_decode::ldg;
using matvec_decode::ldg_half;
using matvec_decode::ldg_u16;
using matvec_decode::ldg_word_at;

inline constexpr int kQBlock = 32;  // activation block
inline constexpr uint32_t kLowNibbles = 0x0F0F0F0Fu;

#if defined(__CUDACC__)
COHORT_DECODE int dp4a(uint32_t a, uint32_t b, int c) {
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
}
COHORT_DECODE float round_even(float v) { return rintf(v); }
#else
using matvec_decode::__funnelshift_r;
// c + the sum of the four products of the signed bytes of a and b.
inline int dp4a(uint32_t a, uint32_t b, int c) {
  for (int k = 0; k < 4; ++k) {
    c += static_cast<int8_t>(a >> (8 * k) & 0xFFu) * static_cast<int8_t>(b >> (8 * k) & 0xFFu);
  }
  return c;
}
inline float round_even(float v) { return std::nearbyint(v); }  // default mode: to nearest even
#endif

// The 4N bytes at a 2-byte-aligned address p as N words, without branches
// (lanes of a warp meet both alignments, e.g. 34-byte Q8_0 blocks, so a
// branch on it would run both sides): the N aligned words from the one
// holding p, then the two bytes at p + 4N - 2, joined by N funnel shifts
// (by 0 or 16 bits). N + 1 loads; where p is 2 mod 4 the first word holds
// the two bytes before p too (same aligned word, so inside p's allocation),
// and nothing past p + 4N is read.
template <int N>
COHORT_DECODE void ldg_words(const uint8_t* p, uint32_t (&out)[N]) {
  const uint32_t shift = 8u * static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 2u);  // 0 or 16
  const uint8_t* base = p - shift / 8;
  uint32_t v[N + 1];
  COHORT_UNROLL
  for (int i = 0; i < N; ++i) v[i] = ldg_word_at(base + 4 * i, p, p + 4 * N);
  v[N] = ldg_u16(p + 4 * N - 2);  // only used where shift is 16
  COHORT_UNROLL
  for (int i = 0; i < N; ++i) out[i] = __funnelshift_r(v[i], v[i + 1], shift);
}

// --- activations -----------------------------------------------------------

// One activation value: q = rint(v * inv) with inv = 127 / max|x| of the
// block (0 for a zero block); |v * inv| <= 127 (1 + 2^-23)^2 rounds to at
// most 127, so no clamp is needed. Host and device do the same IEEE
// operations (division and products rounded to nearest), hence equal bytes.
COHORT_DECODE float block_inv(float amax) { return amax > 0.0f ? 127.0f / amax : 0.0f; }
COHORT_DECODE int quantize_one(float v, float inv) { return static_cast<int>(round_even(v * inv)); }
// {d, s} of a block from its max|x| and the sum of its q.
COHORT_DECODE float2 block_ds(float amax, int q_sum) {
  const float d = amax / 127.0f;
  return make_float2(d, d * static_cast<float>(q_sum));
}

// --- shared pieces ---------------------------------------------------------

// x read from device memory through the read-only path: 16 int8 values at
// a multiple of 16 columns, and the {d, s} of 32-block b.
struct GlobalX {
  static COHORT_DECODE uint4 q16(const int8_t* q, int64_t col) {
    return ldg(reinterpret_cast<const uint4*>(q + col));
  }
  static COHORT_DECODE float2 ds(const float2* ds, int64_t b) { return ldg(ds + b); }
};

// acc + the dot product of 16 int8 weights (w[0..3]) and 16 int8 x (x).
COHORT_DECODE int dot16(const uint32_t* w, uint4 x, int acc) {
  acc = dp4a(w[0], x.x, acc);
  acc = dp4a(w[1], x.y, acc);
  acc = dp4a(w[2], x.z, acc);
  return dp4a(w[3], x.w, acc);
}

// out[i] = low (hi = 0) or high (hi = 1) nibbles of the N words as bytes:
// one AND (and one shift) per four weights.
template <int N>
COHORT_DECODE void nibbles(const uint32_t* in, int hi, uint32_t* out) {
  COHORT_UNROLL
  for (int i = 0; i < N; ++i) out[i] = (in[i] >> (4 * hi)) & kLowNibbles;
}

// The x of a unit of one 32-block (Q8_0, Q4_0, Q4_1): its 32 int8 values
// and {d, s}.
struct X32 {
  uint4 v[2];
  float2 ds;
};

template <typename S>
COHORT_DECODE X32 load_x32(int64_t u, const int8_t* q, const float2* ds) {
  return {{S::q16(q, kQBlock * u), S::q16(q, kQBlock * u + 16)}, S::ds(ds, u)};
}

// --- Q8_0: a unit is one 34-byte block (2-byte aligned, ldg_words) ---------
// The int8 weights are dp4a operands as they are: 8 dp4a per token, then
// one F32 FMA with d_w * d_x.

struct Q8_0 {
  static constexpr int kUnitElems = quant::kQK;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ8_0);
  struct Unit {
    uint32_t q[8];
    float d;
  };
  using Prep = Unit;
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + u * kBlockBytes;
    Unit unit;
    ldg_words(block + 2, unit.q);
    unit.d = ldg_half(block);
    return unit;
  }
  using X = X32;
  static COHORT_DECODE Prep prepare(const Unit& unit, int64_t) { return unit; }
  template <typename S = GlobalX>
  static COHORT_DECODE X load_x(int64_t u, const int8_t* q, const float2* ds) { return load_x32<S>(u, q, ds); }
  static COHORT_DECODE float dot(const Prep& p, const X& x, float acc) {
    const int sum = dot16(p.q + 4, x.v[1], dot16(p.q, x.v[0], 0));
    return fmaf(p.d * x.ds.x, static_cast<float>(sum), acc);  // d_w d_x sum(q_w q_x)
  }
};

// --- Q4_0 (18-byte blocks) and Q4_1 (20-byte blocks): a unit is one block --
// Low nibbles are columns 0-15, high nibbles 16-31: an AND (and a shift) per
// word gives four int8 weights in [0, 15]. The offsets are applied with the
// block sum s = d_x sum(q_x):
//   Q4_0: sum x w = d_w (d_x sum(q_x q_w) - 8 s)
//   Q4_1: sum x w = d_w d_x sum(q_x q_w) + m s

struct Q4Prep {
  uint32_t w[8];  // columns 0-15 (low nibbles), then 16-31 (high)
  float d, m;
};

COHORT_DECODE int q4_sum(const Q4Prep& p, const X32& x) { return dot16(p.w + 4, x.v[1], dot16(p.w, x.v[0], 0)); }

struct Q4_0 {
  static constexpr int kUnitElems = quant::kQK;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ4_0);
  struct Unit {
    uint32_t q[4];
    float d;
  };
  using Prep = Q4Prep;
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + u * kBlockBytes;  // 2-byte aligned
    Unit unit;
    ldg_words(block + 2, unit.q);
    unit.d = ldg_half(block);
    return unit;
  }
  static COHORT_DECODE Prep prepare(const Unit& unit, int64_t) {
    Prep p;
    nibbles<4>(unit.q, 0, p.w);
    nibbles<4>(unit.q, 1, p.w + 4);
    p.d = unit.d;
    p.m = 0.0f;
    return p;
  }
  using X = X32;
  template <typename S = GlobalX>
  static COHORT_DECODE X load_x(int64_t u, const int8_t* q, const float2* ds) { return load_x32<S>(u, q, ds); }
  static COHORT_DECODE float dot(const Prep& p, const X& x, float acc) {
    return fmaf(p.d, fmaf(x.ds.x, static_cast<float>(q4_sum(p, x)), -8.0f * x.ds.y), acc);
  }
};

struct Q4_1 {
  static constexpr int kUnitElems = quant::kQK;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ4_1);
  struct Unit {
    uint32_t q[4];
    uint32_t dm;  // d | m << 16
  };
  using Prep = Q4Prep;
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    // 20-byte blocks in a 4-byte-aligned row: five aligned words.
    const auto* block = reinterpret_cast<const uint32_t*>(row + u * kBlockBytes);
    return {{ldg(block + 1), ldg(block + 2), ldg(block + 3), ldg(block + 4)}, ldg(block)};
  }
  static COHORT_DECODE Prep prepare(const Unit& unit, int64_t) {
    Prep p;
    nibbles<4>(unit.q, 0, p.w);
    nibbles<4>(unit.q, 1, p.w + 4);
    p.d = half_bits(unit.dm);
    p.m = half_bits(unit.dm >> 16);
    return p;
  }
  using X = X32;
  template <typename S = GlobalX>
  static COHORT_DECODE X load_x(int64_t u, const int8_t* q, const float2* ds) { return load_x32<S>(u, q, ds); }
  static COHORT_DECODE float dot(const Prep& p, const X& x, float acc) {
    return fmaf(p.d * x.ds.x, static_cast<float>(q4_sum(p, x)), fmaf(p.m, x.ds.y, acc));
  }
};

}  // namespace cohort::cuda::kernels::matvec_q8

#include "backend/cuda/matvec_q8_decode_k.cuh"
