// The K-quant decoders of the int8 matvec (included by matvec_q8_decode.cuh).
// A unit is 64 columns, a quarter of a 256-column super-block, so lane l
// always meets quarter l % 4 and the header of a super-block is shared by
// four consecutive lanes (one DRAM read, L1 hits for the others).
#pragma once

#include <cstdint>

#include "backend/cuda/matvec_q8_decode.cuh"

namespace cohort::cuda::kernels::matvec_q8 {

inline constexpr int kKQuarters = quant::kQKK / 64;

COHORT_DECODE void words(const uint4& v, uint32_t* out) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

// --- Q4_K (144-byte super-blocks), Q5_K (176 bytes), 16-byte aligned ------
// Quarter c holds sub-blocks 2c and 2c + 1 (columns 64c + [0, 32) and
// 64c + 32 + [0, 32)): the low and the high nibbles of qs[32c, 32c + 32),
// two 16-byte loads. Per sub-block j, value = dl_j q - ml_j, so
//   sum x w = dl_j d_x sum(q_x q_w) - ml_j s
// with the block sum s of the activations: 16 dp4a and 8 F32 operations per
// token for 64 weights.

struct KPrep {
  uint32_t w[16];  // sub-block 2c (columns 64c + 4i), then 2c + 1
  float dl[2];     // d * sc
  float nml[2];    // -dmin * m
};

// The scales and mins of sub-blocks 2c, 2c + 1 (the unpack_scale_min
// packing, without branches: lanes of one warp hold different c). The 6-bit
// sc[0..3] / m[0..3] are the low bits of bytes 0-3 / 4-7 (head.y / head.z);
// sc[4..7] / m[4..7] are the low / high nibbles of bytes 8-11 (head.w) with
// bits 4-5 from the top two bits of bytes 0-3 / 4-7. Both quads are built
// as words of four bytes and the pair picked by shifts.
COHORT_DECODE void k_scales(const uint4& head, int c, KPrep& p) {
  const uint32_t sc_lo = head.y & 0x3F3F3F3Fu, m_lo = head.z & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (head.w & kLowNibbles) | ((head.y >> 2) & 0x30303030u);
  const uint32_t m_hi = ((head.w >> 4) & kLowNibbles) | ((head.z >> 2) & 0x30303030u);
  const uint32_t sc = c < 2 ? sc_lo : sc_hi, m = c < 2 ? m_lo : m_hi;  // selects of computed words
  const int shift = 16 * (c & 1);
  const float d = half_bits(head.x), dmin = half_bits(head.x >> 16);
  COHORT_UNROLL
  for (int k = 0; k < 2; ++k) {
    p.dl[k] = d * static_cast<float>((sc >> (shift + 8 * k)) & 0xFFu);
    p.nml[k] = -dmin * static_cast<float>((m >> (shift + 8 * k)) & 0xFFu);
  }
}

template <int kBytes>
struct KQuant {
  static constexpr int kUnitElems = 64;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = kBytes;
  using Prep = KPrep;
  static COHORT_DECODE int quarter(int64_t u) { return static_cast<int>(u % kKQuarters); }
  static COHORT_DECODE const uint8_t* block(const uint8_t* row, int64_t u) {
    return row + (u / kKQuarters) * kBlockBytes;
  }
  struct X {
    uint4 v[4];    // columns 64c + 16i
    float2 ds[2];  // the two 32-blocks
  };
  template <typename S = GlobalX>
  static COHORT_DECODE X load_x(int64_t u, const int8_t* q, const float2* ds) {
    const int64_t col = (u / kKQuarters) * kBlockElems + 64 * quarter(u);
    return {{S::q16(q, col), S::q16(q, col + 16), S::q16(q, col + 32), S::q16(q, col + 48)},
            {S::ds(ds, col / kQBlock), S::ds(ds, col / kQBlock + 1)}};
  }
  static COHORT_DECODE float dot(const Prep& p, const X& x, float acc) {
    COHORT_UNROLL
    for (int k = 0; k < 2; ++k) {
      const int sum = dot16(p.w + 8 * k + 4, x.v[2 * k + 1], dot16(p.w + 8 * k, x.v[2 * k], 0));
      acc = fmaf(p.dl[k] * x.ds[k].x, static_cast<float>(sum), fmaf(p.nml[k], x.ds[k].y, acc));
    }
    return acc;
  }
};

struct Q4_K : KQuant<sizeof(quant::BlockQ4_K)> {
  struct Unit {
    uint4 head, qs[2];
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* b = block(row, u);
    const auto* qs = reinterpret_cast<const uint4*>(b + 16 + 32 * quarter(u));
    return {ldg(reinterpret_cast<const uint4*>(b)), {ldg(qs), ldg(qs + 1)}};
  }
  static COHORT_DECODE Prep prepare(const Unit& unit, int64_t u) {
    uint32_t raw[8];
    words(unit.qs[0], raw);
    words(unit.qs[1], raw + 4);
    Prep p;
    nibbles<8>(raw, 0, p.w);      // sub-block 2c: 1 AND per 4 weights
    nibbles<8>(raw, 1, p.w + 8);  // 2c + 1: a shift and an AND
    k_scales(unit.head, quarter(u), p);
    return p;
  }
};

// As Q4_K with a fifth bit: bit j of qh[i] for element i of sub-block j
// (qh: 32 bytes at 16..48, qs at 48..176), moved to bit 4 of each byte.
struct Q5_K : KQuant<sizeof(quant::BlockQ5_K)> {
  struct Unit {
    uint4 head, qh[2], qs[2];
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* b = block(row, u);
    const auto* qh = reinterpret_cast<const uint4*>(b + 16);
    const auto* qs = reinterpret_cast<const uint4*>(b + 48 + 32 * quarter(u));
    return {ldg(reinterpret_cast<const uint4*>(b)), {ldg(qh), ldg(qh + 1)}, {ldg(qs), ldg(qs + 1)}};
  }
  static COHORT_DECODE Prep prepare(const Unit& unit, int64_t u) {
    const int c = quarter(u);
    uint32_t raw[8], high[8];
    words(unit.qs[0], raw);
    words(unit.qs[1], raw + 4);
    words(unit.qh[0], high);
    words(unit.qh[1], high + 4);
    Prep p;
    COHORT_UNROLL
    for (int i = 0; i < 8; ++i) {
      p.w[i] = (raw[i] & kLowNibbles) | (((high[i] >> (2 * c)) & 0x01010101u) << 4);
      p.w[8 + i] = ((raw[i] >> 4) & kLowNibbles) | (((high[i] >> (2 * c + 1)) & 0x01010101u) << 4);
    }
    k_scales(unit.head, c, p);
    return p;
  }
};

// --- Q6_K (210-byte super-blocks, 2-byte aligned) -------------------------
// Unit j (0..3) is half h = j / 2, quarter k = j % 2 (matvec_decode.cuh's
// Q6_K unit): four runs q of 16 columns 128h + 32q + 16k + i, run q with the
// signed scale scales[8h + 2q + k]. The 6-bit values q6 (low 4 bits from
// ql, high 2 from qh) become q6 - 32 in signed bytes by
// ((v | 0x80) - 0x20) ^ 0x80 per byte (v + 96 never borrows), so the -32
// needs no activation sum: per run 4 dp4a and 3 F32 operations per token.

struct Q6_K {
  static constexpr int kUnitElems = 64;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = sizeof(quant::BlockQ6_K);
  static constexpr int kQh = 128, kScales = 192, kD = 208;  // byte offsets in the block
  struct Unit {
    uint32_t ql0[4], ql1[4], qh[4];
    uint32_t sc[2];  // scales[8h .. 8h + 8)
    float d;
  };
  struct Prep {
    uint32_t w[16];  // run q at w[4q..4q+4)
    float dl[4];     // d * scale of run q
  };
  static COHORT_DECODE Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / kKQuarters) * kBlockBytes;
    const int j = static_cast<int>(u % kKQuarters), h = j / 2, k = j % 2;
    Unit unit;
    ldg_words(block + 64 * h + 16 * k, unit.ql0);
    ldg_words(block + 64 * h + 32 + 16 * k, unit.ql1);
    ldg_words(block + kQh + 32 * h + 16 * k, unit.qh);
    ldg_words(block + kScales + 8 * h, unit.sc);
    unit.d = ldg_half(block + kD);
    return unit;
  }
  static COHORT_DECODE Prep prepare(const Unit& unit, int64_t u) {
    const int k = static_cast<int>(u % 2);
    Prep p;
    COHORT_UNROLL
    for (int q = 0; q < 4; ++q) {
      const uint32_t* ql = q % 2 == 0 ? unit.ql0 : unit.ql1;
      COHORT_UNROLL
      for (int i = 0; i < 4; ++i) {
        const uint32_t v = ((ql[i] >> (4 * (q / 2))) & kLowNibbles) | (((unit.qh[i] >> (2 * q)) & 0x03030303u) << 4);
        p.w[4 * q + i] = ((v | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
      }
      // scales[8h + 2q + k]: byte 2 (q % 2) + k of word q / 2.
      const auto s = static_cast<int8_t>((unit.sc[q / 2] >> (8 * (2 * (q % 2) + k))) & 0xFFu);
      p.dl[q] = unit.d * static_cast<float>(s);
    }
    return p;
  }
  struct X {
    uint4 v[4];   // run r: columns base + 32r + [0, 16)
    float dx[4];  // d of the 32-block of run r
  };
  template <typename S = GlobalX>
  static COHORT_DECODE X load_x(int64_t u, const int8_t* q, const float2* ds) {
    const int j = static_cast<int>(u % kKQuarters);
    const int64_t base = (u / kKQuarters) * kBlockElems + 128 * (j / 2) + 16 * (j % 2);
    X x;
    COHORT_UNROLL
    for (int r = 0; r < 4; ++r) {
      x.v[r] = S::q16(q, base + 32 * r);
      x.dx[r] = S::ds(ds, (base + 32 * r) / kQBlock).x;
    }
    return x;
  }
  static COHORT_DECODE float dot(const Prep& p, const X& x, float acc) {
    COHORT_UNROLL
    for (int r = 0; r < 4; ++r) {
      acc = fmaf(p.dl[r] * x.dx[r], static_cast<float>(dot16(p.w + 4 * r, x.v[r], 0)), acc);
    }
    return acc;
  }
};

}  // namespace cohort::cuda::kernels::matvec_q8
