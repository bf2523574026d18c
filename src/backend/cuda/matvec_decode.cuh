// The weight decoders of the matvec kernel, one per GGUF type. Written for
// the device and compiled for the host as well (with stand-ins for the few
// intrinsics), so that matvec_decode_test.cpp checks on any machine that
// every unit decodes to the values and columns of the CPU dequantizer.
//
// A decoder provides:
//   kUnitElems     columns per unit (n_in is a multiple of it)
//   kRuns          runs of kRunLen = 16 consecutive columns per unit
//   kBlockElems, kBlockBytes   the GGUF block (row bytes = n_in / kBlockElems * kBlockBytes)
//   Unit           the unit's raw bytes in registers
//   load(row, u)   unit u of a row (row = its first byte)
//   decode(unit, u, r, w)  run r of unit u into w[16], scale applied, F32;
//                  returns the run's first column
// Consecutive units lie at consecutive (or overlapping) bytes of the row, so
// lanes taking consecutive units read coalesced.
#pragma once

#include <cstdint>
#include <cstring>

#include <cuda_fp16.h>
#include <vector_functions.h>
#include <vector_types.h>

#include "quant/blocks.h"

#if defined(__CUDACC__)
#define COHORT_DECODE __device__ __forceinline__
#define COHORT_UNROLL _Pragma("unroll")
#else
#include <bit>
#include <cmath>

#include "common/half.h"
#define COHORT_DECODE inline
#define COHORT_UNROLL
#endif

namespace cohort::cuda::kernels::matvec_decode {

inline constexpr int kRunLen = 16;

#if defined(__CUDACC__)
template <typename T>
COHORT_DECODE T ldg(const T* p) { return __ldg(p); }
COHORT_DECODE float f16_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
#else
// Host stand-ins with the device semantics (tests only).
template <typename T>
inline T ldg(const T* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
inline float f16_to_float(uint16_t h) { return f16_to_f32(h); }
inline float __uint_as_float(uint32_t u) { return std::bit_cast<float>(u); }
inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  const uint64_t bytes = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
}
inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t shift) {
  shift &= 31u;
  return shift == 0 ? lo : (lo >> shift) | (hi << (32u - shift));
}
#endif

// The aligned 4-byte word holding byte `p` of a range [lo, hi): on the
// device one 4-byte load; on the host only the bytes inside the range are
// read (the rest are zero), so that the host tests never read outside a row.
COHORT_DECODE uint32_t ldg_word_at(const uint8_t* p, const uint8_t* lo, const uint8_t* hi) {
  const auto a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{3};
#if defined(__CUDACC__)
  (void)lo;
  (void)hi;
  return ldg(reinterpret_cast<const uint32_t*>(a));
#else
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    const auto* b = reinterpret_cast<const uint8_t*>(a) + k;
    if (b >= lo && b < hi) v |= static_cast<uint32_t>(*b) << (8 * k);
  }
  return v;
#endif
}

COHORT_DECODE uint32_t ldg_u16(const uint8_t* p) { return ldg(reinterpret_cast<const uint16_t*>(p)); }

// The 4N bytes at a 2-byte-aligned address p as N words, with aligned loads
// and funnel shifts: N 4-byte loads where p is 4-byte aligned; else a 2-byte
// load of the first two bytes, N - 1 4-byte loads and a 2-byte load of the
// last two. Only bytes of [p, p + 4N) are read.
template <int N>
COHORT_DECODE void ldg_words_a2(const uint8_t* p, uint32_t (&out)[N]) {
  const uint32_t shift = 8u * static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 2u);  // 0 or 16
  const uint8_t* base = p - shift / 8;                                                      // 4-byte aligned
  // v[i] = the aligned word at base + 4i (v[N] only where shift is 16).
  uint32_t v[N + 1];
  v[0] = shift != 0 ? ldg_u16(p) << 16 : ldg_word_at(base, p, p + 4 * N);
  COHORT_UNROLL
  for (int i = 1; i < N; ++i) v[i] = ldg_word_at(base + 4 * i, p, p + 4 * N);
  v[N] = shift != 0 ? ldg_u16(base + 4 * N) : v[N - 1];
  COHORT_UNROLL
  for (int i = 0; i < N; ++i) out[i] = __funnelshift_r(v[i], v[i + 1], shift);
}

COHORT_DECODE float ldg_half(const uint8_t* p) { return f16_to_float(ldg(reinterpret_cast<const uint16_t*>(p))); }

COHORT_DECODE float half_bits(uint32_t h) { return f16_to_float(static_cast<uint16_t>(h & 0xFFFFu)); }

// Byte k (compile-time 0..3) of `word` as a float, exact: the byte is put
// under the exponent of 2^23 (0x4B0000xx == 8388608 + xx) and 2^23 + bias
// subtracted, which is cheaper than an integer-to-float conversion.
template <int K>
COHORT_DECODE float byte_as_float(uint32_t word, float bias) {
  const uint32_t f = __byte_perm(word, 0x4B000000u, 0x7540u | K);
  return __uint_as_float(f) - (8388608.0f + bias);
}

// scale * byte k of `word`, rounded once: fma(scale, 2^23 + byte, -2^23
// scale) is exact before its rounding (2^23 scale is), one instruction
// after the byte permute instead of a subtraction and a product.
template <int K>
COHORT_DECODE float byte_times(uint32_t word, float scale) {
  const uint32_t f = __byte_perm(word, 0x4B000000u, 0x7540u | K);
  return fmaf(scale, __uint_as_float(f), -8388608.0f * scale);
}

// w[4i .. 4i+4) = scale * (byte k of words[i] - bias) + offset.
template <int N>
COHORT_DECODE void bytes_fma(const uint32_t (&words)[N], float bias, float scale, float offset,
                             float (&w)[4 * N]) {
  COHORT_UNROLL
  for (int i = 0; i < N; ++i) {
    w[4 * i + 0] = fmaf(scale, byte_as_float<0>(words[i], bias), offset);
    w[4 * i + 1] = fmaf(scale, byte_as_float<1>(words[i], bias), offset);
    w[4 * i + 2] = fmaf(scale, byte_as_float<2>(words[i], bias), offset);
    w[4 * i + 3] = fmaf(scale, byte_as_float<3>(words[i], bias), offset);
  }
}

// --- F32, F16, BF16: a unit is 16 columns (64 or 32 bytes, 16-byte loads) --

struct F32 {
  static constexpr int kUnitElems = 16, kRuns = 1, kBlockElems = 1, kBlockBytes = 4;
  struct Unit {
    float4 v[4];
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const auto* p = reinterpret_cast<const float4*>(row) + 4 * u;
    return {{ldg(p), ldg(p + 1), ldg(p + 2), ldg(p + 3)}};
  }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int, float (&w)[kRunLen]) {
    COHORT_UNROLL
    for (int i = 0; i < 4; ++i) {
      w[4 * i] = unit.v[i].x;
      w[4 * i + 1] = unit.v[i].y;
      w[4 * i + 2] = unit.v[i].z;
      w[4 * i + 3] = unit.v[i].w;
    }
    return kUnitElems * u;
  }
};

// 16 two-byte values in two uint4.
struct Pairs {
  uint4 v[2];
};

COHORT_DECODE Pairs load_pairs(const uint8_t* row, int64_t u) {
  const auto* p = reinterpret_cast<const uint4*>(row) + 2 * u;
  return {{ldg(p), ldg(p + 1)}};
}

// 16 two-byte floats per unit, two per 32-bit word; Pair::split converts a
// word's low and high halves (F16 and BF16 differ only there).
template <class Pair>
struct TwoByteFloats {
  static constexpr int kUnitElems = 16, kRuns = 1, kBlockElems = 1, kBlockBytes = 2;
  using Unit = Pairs;
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) { return load_pairs(row, u); }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int, float (&w)[kRunLen]) {
    COHORT_UNROLL
    for (int i = 0; i < 2; ++i) {
      const uint32_t v[4] = {unit.v[i].x, unit.v[i].y, unit.v[i].z, unit.v[i].w};
      COHORT_UNROLL
      for (int k = 0; k < 4; ++k) Pair::split(v[k], w[8 * i + 2 * k], w[8 * i + 2 * k + 1]);
    }
    return kUnitElems * u;
  }
};

struct F16Pair {
  static COHORT_DECODE void split(uint32_t v, float& lo, float& hi) {
    lo = half_bits(v);
    hi = half_bits(v >> 16);
  }
};

struct BF16Pair {
  static COHORT_DECODE void split(uint32_t v, float& lo, float& hi) {
    lo = __uint_as_float(v << 16);
    hi = __uint_as_float(v & 0xFFFF0000u);
  }
};

using F16 = TwoByteFloats<F16Pair>;
using BF16 = TwoByteFloats<BF16Pair>;

// --- Q8_0 (34-byte blocks, 2-byte aligned): half a block, 16 int8 values --
// read as aligned words (ldg_words_a2), and the block's f16 scale.

struct Q8_0 {
  static constexpr int kUnitElems = 16, kRuns = 1;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ8_0);
  struct Unit {
    uint32_t q[4];
    float d;
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / 2) * kBlockBytes;
    const uint8_t* qs = block + 2 + 16 * (u % 2);
    Unit unit;
    ldg_words_a2(qs, unit.q);
    unit.d = ldg_half(block);
    return unit;
  }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int, float (&w)[kRunLen]) {
    // int8 -> uint8 + 128 by flipping the sign bits, then bias 128 back.
    const uint32_t q[4] = {unit.q[0] ^ 0x80808080u, unit.q[1] ^ 0x80808080u, unit.q[2] ^ 0x80808080u,
                           unit.q[3] ^ 0x80808080u};
    bytes_fma(q, 128.0f, unit.d, 0.0f, w);
    return kUnitElems * u;
  }
};

// --- Q4_0 (18-byte blocks) and Q4_1 (20-byte blocks): a unit is one block, --
// two runs (low nibbles = columns 0-15, high nibbles = 16-31).

// Nibbles of run r (0 low, 1 high) as bytes.
COHORT_DECODE void nibbles(const uint32_t (&q)[4], int r, uint32_t (&out)[4]) {
  COHORT_UNROLL
  for (int i = 0; i < 4; ++i) out[i] = (q[i] >> (4 * r)) & 0x0F0F0F0Fu;
}

struct Q4_0 {
  static constexpr int kUnitElems = quant::kQK, kRuns = 2;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ4_0);
  struct Unit {
    uint32_t q[4];
    float d;
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + u * kBlockBytes;  // 2-byte aligned
    Unit unit;
    ldg_words_a2(block + 2, unit.q);
    unit.d = ldg_half(block);
    return unit;
  }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    uint32_t q[4];
    nibbles(unit.q, r, q);
    bytes_fma(q, 8.0f, unit.d, 0.0f, w);  // d * (q - 8)
    return kUnitElems * u + kRunLen * r;
  }
};

struct Q4_1 {
  static constexpr int kUnitElems = quant::kQK, kRuns = 2;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ4_1);
  struct Unit {
    uint4 q;
    uint32_t dm;  // d | m << 16
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    // 20-byte blocks in a 4-byte-aligned row: d, m and qs are 4-byte aligned.
    const auto* block = reinterpret_cast<const uint32_t*>(row + u * kBlockBytes);
    return {make_uint4(ldg(block + 1), ldg(block + 2), ldg(block + 3), ldg(block + 4)),
            ldg(block)};
  }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    const uint32_t raw[4] = {unit.q.x, unit.q.y, unit.q.z, unit.q.w};
    uint32_t q[4];
    nibbles(raw, r, q);
    // d * q + m
    bytes_fma(q, 0.0f, half_bits(unit.dm), half_bits(unit.dm >> 16), w);
    return kUnitElems * u + kRunLen * r;
  }
};

// --- Q4_K, Q5_K ------------------------------------------------------------
// Q4_K (144-byte super-blocks) and Q5_K (176 bytes), both
// 16-byte aligned in a 16-byte-aligned row. A unit is 16 bytes of qs (one
// 16-byte load) plus the block's 16-byte header (d, dmin, packed scales):
// unit j (0..7) of a block covers qs[32c + 16s, +16) with c = j / 2,
// s = j % 2, i.e. columns 64c + 16s + i (low nibbles, sub-block 2c: run 0)
// and 64c + 32 + 16s + i (high nibbles, sub-block 2c + 1: run 1), i < 16.

COHORT_DECODE uint32_t byte_at(uint32_t word, int k) { return (word >> (8 * k)) & 0xFFu; }

// Scale and min of sub-block j (run-time 0..7) from the header words; the
// packing of quant::unpack_scale_min, with shifts instead of an indexed
// array (which would live in local memory).
COHORT_DECODE void scale_min(const uint4& head, int j, float& dl, float& ml) {
  uint32_t sc, m;
  if (j < 4) {
    sc = byte_at(head.y, j) & 63u;
    m = byte_at(head.z, j) & 63u;
  } else {
    const int k = j - 4;
    sc = (byte_at(head.w, k) & 0xFu) | ((byte_at(head.y, k) >> 6) << 4);
    m = (byte_at(head.w, k) >> 4) | ((byte_at(head.z, k) >> 6) << 4);
  }
  dl = half_bits(head.x) * static_cast<float>(sc);
  ml = half_bits(head.x >> 16) * static_cast<float>(m);
}

COHORT_DECODE void split(const uint4& v, uint32_t (&out)[4]) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

template <int kBytes>
struct KUnit {
  static constexpr int kUnitElems = 32, kRuns = 2;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = kBytes;
  static constexpr int kUnitsPerBlock = kBlockElems / kUnitElems;

  static COHORT_DECODE int64_t column(int64_t u, int r) {
    const int j = static_cast<int>(u % kUnitsPerBlock);
    return (u / kUnitsPerBlock) * kBlockElems + 64 * (j / 2) + 32 * r + 16 * (j % 2);
  }
};

struct Q4_K : KUnit<sizeof(quant::BlockQ4_K)> {
  struct Unit {
    uint4 head, qs;
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / kUnitsPerBlock) * kBlockBytes;
    const int j = static_cast<int>(u % kUnitsPerBlock);
    const auto* qs = reinterpret_cast<const uint4*>(block + 16 + 32 * (j / 2) + 16 * (j % 2));
    return {ldg(reinterpret_cast<const uint4*>(block)), ldg(qs)};
  }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    const int j = static_cast<int>(u % kUnitsPerBlock);
    float dl, ml;
    scale_min(unit.head, 2 * (j / 2) + r, dl, ml);
    uint32_t raw[4], q[4];
    split(unit.qs, raw);
    COHORT_UNROLL
    for (int i = 0; i < 4; ++i) q[i] = (raw[i] >> (4 * r)) & 0x0F0F0F0Fu;
    bytes_fma(q, 0.0f, dl, -ml, w);  // dl * q - ml
    return column(u, r);
  }
};

// As Q4_K with the fifth bits: bit (2c + r) of qh[16s + i] for column i of
// the unit's run r; qh sits at bytes 16..48, qs at 48..176.
struct Q5_K : KUnit<sizeof(quant::BlockQ5_K)> {
  struct Unit {
    uint4 head, qh, qs;
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / kUnitsPerBlock) * kBlockBytes;
    const int j = static_cast<int>(u % kUnitsPerBlock);
    const auto* qh = reinterpret_cast<const uint4*>(block + 16 + 16 * (j % 2));
    const auto* qs = reinterpret_cast<const uint4*>(block + 48 + 32 * (j / 2) + 16 * (j % 2));
    return {ldg(reinterpret_cast<const uint4*>(block)), ldg(qh), ldg(qs)};
  }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    const int j = static_cast<int>(u % kUnitsPerBlock);
    const int sub = 2 * (j / 2) + r;
    float dl, ml;
    scale_min(unit.head, sub, dl, ml);
    uint32_t raw[4], high[4], q[4];
    split(unit.qs, raw);
    split(unit.qh, high);
    COHORT_UNROLL
    for (int i = 0; i < 4; ++i) {
      q[i] = ((raw[i] >> (4 * r)) & 0x0F0F0F0Fu) | (((high[i] >> sub) & 0x01010101u) << 4);
    }
    bytes_fma(q, 0.0f, dl, -ml, w);
    return column(u, r);
  }
};

// --- Q6_K ------------------------------------------------------------------
// Q6_K (210-byte super-blocks, 2-byte aligned). Unit
// j (0..3) of a block is half h = j / 2, quarter k = j % 2: the 64 columns
// 128h + 32q + 16k + i (q < 4 runs, i < 16). Their bits (blocks.h):
//   low 4:  ql[64h + 16k + i] (runs 0, 2: low, high nibble) and
//           ql[64h + 32 + 16k + i] (runs 1, 3: low, high nibble)
//   high 2: bits 2q of qh[32h + 16k + i]
//   scale:  scales[8h + k + 2q], times d.

struct Q6_K {
  static constexpr int kUnitElems = 64, kRuns = 4;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = sizeof(quant::BlockQ6_K);
  static constexpr int kUnitsPerBlock = kBlockElems / kUnitElems;
  static constexpr int kQh = 128, kScales = 192, kD = 208;  // byte offsets in the block
  struct Unit {
    uint32_t ql0[4], ql1[4], qh[4];
    uint32_t sc[2];  // scales[8h .. 8h + 8)
    float d;
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / kUnitsPerBlock) * kBlockBytes;
    const int j = static_cast<int>(u % kUnitsPerBlock), h = j / 2, k = j % 2;
    Unit unit;
    ldg_words_a2(block + 64 * h + 16 * k, unit.ql0);
    ldg_words_a2(block + 64 * h + 32 + 16 * k, unit.ql1);
    ldg_words_a2(block + kQh + 32 * h + 16 * k, unit.qh);
    ldg_words_a2(block + kScales + 8 * h, unit.sc);
    unit.d = ldg_half(block + kD);
    return unit;
  }
  static COHORT_DECODE int64_t decode(const Unit& unit, int64_t u, int q, float (&w)[kRunLen]) {
    const int j = static_cast<int>(u % kUnitsPerBlock), h = j / 2, k = j % 2;
    // scales[8h + k + 2q]: byte k + 2 (q % 2) of word q / 2 (q is a
    // compile-time index in the unrolled kernel, so sc stays in registers).
    const auto scale = static_cast<int8_t>((unit.sc[q / 2] >> (8 * (k + 2 * (q % 2)))) & 0xFFu);
    const float dl = unit.d * static_cast<float>(scale);
    const uint32_t(&ql)[4] = q % 2 == 0 ? unit.ql0 : unit.ql1;
    uint32_t v[4];
    COHORT_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i] = ((ql[i] >> (4 * (q / 2))) & 0x0F0F0F0Fu) | (((unit.qh[i] >> (2 * q)) & 0x03030303u) << 4);
    }
    bytes_fma(v, 32.0f, dl, 0.0f, w);  // dl * (q6 - 32)
    return (u / kUnitsPerBlock) * kBlockElems + 128 * h + 32 * q + 16 * k;
  }
};

}  // namespace cohort::cuda::kernels::matvec_decode
