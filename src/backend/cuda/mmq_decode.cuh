// The weight decoders of the int8 tensor-core matmul (mmq.h), one per GGUF
// type. Compiled for the host as well (as matvec_q8_decode.cuh), so that
// mmq_decode_test.cpp checks on any machine that the fragments a thread
// builds hold the integers and scales of the CPU dequantizer.
//
// The kernel multiplies 16 rows by 8 tokens over 32 columns with one
// mma.m16n8k32 (int8 in, int32 out). A fragment register of the weights (A)
// holds four int8 of one row; thread (g, t) of a warp (g = lane / 4, t =
// lane % 4) holds rows g and g + 8, and the instruction pairs its first
// register of a row with the activations' (B's) first register of the same
// thread, its second with the second. Which columns a thread holds may be
// chosen freely as long as A and B agree, so thread t takes columns
// 8t .. 8t + 7 of each 32-column sub-block: its weights are 8 consecutive
// bytes (or nibbles) of a row, and its activations 8 consecutive bytes of a
// token (one 8-byte load each).
//
// A decoder provides, for one row:
//   kStepElems           columns a step (a multiple of 32; n_in must be a
//                        multiple of it)
//   kSubs                32-column sub-blocks a step (kStepElems / 32)
//   kMins                whether a sub-block has an offset (the activation
//                        block sum s enters with the factor nml)
//   kHalves              1, or 2 where each 16 columns of a sub-block have
//                        their own scale (Q6_K): dl is then that of the
//                        thread's half (threads 0-1: columns 0-15, 2-3:
//                        16-31), and the kernel multiplies the halves apart
//   kBlockElems, kBlockBytes   the GGUF block
//   Raw, load(row, s, t) thread t's bytes of step s of the row
//   sub<j>(raw)          sub-block j's two fragment words (columns 8t ..
//                        8t + 3 and 8t + 4 .. 8t + 7, as int8) and its F32
//                        scale dl and offset factor nml:
//                          sum x w over the sub-block
//                            = dl * d_x * sum(q_x q_w) + nml * s
#pragma once

#include <cstdint>

#include "backend/cuda/matvec_q8_decode.cuh"

namespace cohort::cuda::kernels::mmq {

using matvec_decode::half_bits;
using matvec_decode::ldg;
using matvec_decode::ldg_half;
using matvec_q8::kLowNibbles;
using matvec_q8::ldg_words;

// One sub-block's share of a thread: A's words of one row, and the scales.
struct Sub {
  uint32_t w[2];
  float dl, nml;
};

// --- Q8_0: a step is four 34-byte blocks (2-byte aligned) -----------------

struct Q8_0 {
  static constexpr int kHalves = 1;
  static constexpr int kSubs = 4, kStepElems = 32 * kSubs;
  static constexpr bool kMins = false;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ8_0);
  struct Raw {
    uint32_t q[kSubs][2];
    float d[kSubs];
  };
  static COHORT_DECODE Raw load(const uint8_t* row, int64_t s, int t) {
    Raw raw;
    COHORT_UNROLL
    for (int b = 0; b < kSubs; ++b) {
      const uint8_t* block = row + (kSubs * s + b) * kBlockBytes;
      ldg_words(block + 2 + 8 * t, raw.q[b]);
      raw.d[b] = ldg_half(block);
    }
    return raw;
  }
  template <int J>
  static COHORT_DECODE Sub sub(const Raw& raw) {
    return {{raw.q[J][0], raw.q[J][1]}, raw.d[J], 0.0f};
  }
};

// --- Q4_0 (18-byte blocks) and Q4_1 (20-byte blocks), four a step --------
// Column i < 16 of a block is the low nibble of byte i, column 16 + i the
// high one: thread t takes bytes 8 (t % 2) .. + 7 and the nibble t / 2.
// Q4_0's values are q - 8: dl = d, nml = -8 d; Q4_1's q d + m: nml = m.

template <int kBytes, bool kOffsetHalf>
struct Q4Blocks {
  static constexpr int kHalves = 1;
  static constexpr int kSubs = 4, kStepElems = 32 * kSubs;
  static constexpr bool kMins = true;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = kBytes;
  static constexpr int kHeader = kBytes - 16;  // d (Q4_0), or d and m (Q4_1)
  struct Raw {
    uint32_t q[kSubs][2];
    float d[kSubs], m[kSubs];
    int hi;
  };
  static COHORT_DECODE Raw load(const uint8_t* row, int64_t s, int t) {
    Raw raw;
    COHORT_UNROLL
    for (int b = 0; b < kSubs; ++b) {
      const uint8_t* block = row + (kSubs * s + b) * kBlockBytes;
      ldg_words(block + kHeader + 8 * (t % 2), raw.q[b]);
      raw.d[b] = ldg_half(block);
      raw.m[b] = kOffsetHalf ? ldg_half(block + 2) : -8.0f * raw.d[b];
    }
    raw.hi = t / 2;
    return raw;
  }
  template <int J>
  static COHORT_DECODE Sub sub(const Raw& raw) {
    const int shift = 4 * raw.hi;
    return {{(raw.q[J][0] >> shift) & kLowNibbles, (raw.q[J][1] >> shift) & kLowNibbles}, raw.d[J], raw.m[J]};
  }
};
using Q4_0 = Q4Blocks<sizeof(quant::BlockQ4_0), false>;
using Q4_1 = Q4Blocks<sizeof(quant::BlockQ4_1), true>;

// --- Q4_K (144-byte super-blocks, 16-byte aligned): a step is one ---------
// Sub-block j is the low (j even) or high (j odd) nibbles of qs[32 (j / 2),
// + 32): thread t's columns are bytes 8t .. 8t + 7 of that run. Its 6-bit
// scale and min are unpacked from the 12 bytes after d and dmin (the
// get_scale_min_k4 packing).

// The 6-bit scales (sc) and mins (m) of a Q4_K / Q5_K super-block, a byte
// each, four sub-blocks a word: lo holds sub-blocks 0-3 (the low six bits
// of scale bytes 0-3 and 4-7), hi sub-blocks 4-7 (the nibbles of bytes
// 8-11 under the top two bits of bytes 0-3 and 4-7). The head's words y, z,
// w are scale bytes 0-3, 4-7, 8-11.
struct KScaleBytes {
  uint32_t sc_lo, m_lo, sc_hi, m_hi;
};
COHORT_DECODE KScaleBytes k_scale_bytes(const uint4& head) {
  return {head.y & 0x3F3F3F3Fu, head.z & 0x3F3F3F3Fu, (head.w & 0x0F0F0F0Fu) | ((head.y >> 2) & 0x30303030u),
          ((head.w >> 4) & 0x0F0F0F0Fu) | ((head.z >> 2) & 0x30303030u)};
}

// Scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block (the
// unpacking above is shared by a step's sub-blocks once inlined).
template <int J>
COHORT_DECODE void k_scale_min(const uint4& head, float& dl, float& nml) {
  using matvec_decode::byte_times;
  const KScaleBytes b = k_scale_bytes(head);
  dl = byte_times<J % 4>(J < 4 ? b.sc_lo : b.sc_hi, half_bits(head.x));
  nml = byte_times<J % 4>(J < 4 ? b.m_lo : b.m_hi, -half_bits(head.x >> 16));
}

struct Q4_K {
  static constexpr int kHalves = 1;
  static constexpr int kSubs = 8, kStepElems = quant::kQKK;
  static constexpr bool kMins = true;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = sizeof(quant::BlockQ4_K);
  struct Raw {
    uint4 head;
    uint2 qs[4];  // bytes 8t .. 8t + 7 of each 32-byte run
  };
  static COHORT_DECODE Raw load(const uint8_t* row, int64_t s, int t) {
    const uint8_t* block = row + s * kBlockBytes;
    Raw raw;
    raw.head = ldg(reinterpret_cast<const uint4*>(block));
    COHORT_UNROLL
    for (int c = 0; c < 4; ++c) raw.qs[c] = ldg(reinterpret_cast<const uint2*>(block + 16 + 32 * c + 8 * t));
    return raw;
  }
  template <int J>
  static COHORT_DECODE Sub sub(const Raw& raw) {
    const uint2 q = raw.qs[J / 2];
    constexpr int kShift = 4 * (J % 2);
    Sub s{{(q.x >> kShift) & kLowNibbles, (q.y >> kShift) & kLowNibbles}, 0.0f, 0.0f};
    k_scale_min<J>(raw.head, s.dl, s.nml);
    return s;
  }
};

// --- Q5_K (176-byte super-blocks): Q4_K with a fifth bit ------------------
// Bit j of qh[i] is the fifth bit of column i of sub-block j (qh: 32 bytes
// at 16, qs: 128 at 48); thread t's are qh bytes 8t .. 8t + 7.

struct Q5_K {
  static constexpr int kHalves = 1;
  static constexpr int kSubs = 8, kStepElems = quant::kQKK;
  static constexpr bool kMins = true;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = sizeof(quant::BlockQ5_K);
  struct Raw {
    uint4 head;
    uint2 qh;
    uint2 qs[4];
  };
  static COHORT_DECODE Raw load(const uint8_t* row, int64_t s, int t) {
    const uint8_t* block = row + s * kBlockBytes;
    Raw raw;
    raw.head = ldg(reinterpret_cast<const uint4*>(block));
    raw.qh = ldg(reinterpret_cast<const uint2*>(block + 16 + 8 * t));
    COHORT_UNROLL
    for (int c = 0; c < 4; ++c) raw.qs[c] = ldg(reinterpret_cast<const uint2*>(block + 48 + 32 * c + 8 * t));
    return raw;
  }
  template <int J>
  static COHORT_DECODE Sub sub(const Raw& raw) {
    const uint2 q = raw.qs[J / 2];
    constexpr int kShift = 4 * (J % 2);
    Sub s{{((q.x >> kShift) & kLowNibbles) | (((raw.qh.x >> J) & 0x01010101u) << 4),
           ((q.y >> kShift) & kLowNibbles) | (((raw.qh.y >> J) & 0x01010101u) << 4)},
          0.0f, 0.0f};
    k_scale_min<J>(raw.head, s.dl, s.nml);
    return s;
  }
};

// --- Q6_K (210-byte super-blocks, 2-byte aligned): a step is one ----------
// Column 128h + 32q + i (half h, quarter q, i < 32) has its low four bits in
// ql[64h + 32 (q % 2) + i] (the low nibble for q < 2, else the high one)
// and its high two in bits 2q of qh[32h + i]; sub-block j = 4h + q. Its
// scale is scales[8h + 2q + i / 16], so a thread's 8 columns share one (8t
// and 8t + 7 fall in the same 16), but a sub-block has two (kHalves).
// Values are q6 - 32: made signed bytes by
// ((v | 0x80) - 0x20) ^ 0x80 (v + 96 never borrows), so no offset.

struct Q6_K {
  static constexpr int kHalves = 2;
  static constexpr int kSubs = 8, kStepElems = quant::kQKK;
  static constexpr bool kMins = false;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = sizeof(quant::BlockQ6_K);
  static constexpr int kQh = 128, kScales = 192, kD = 208;  // byte offsets in the block
  struct Raw {
    uint32_t ql[2][2][2];  // [h][q % 2]: bytes 8t .. 8t + 7
    uint32_t qh[2][2];     // [h]
    uint32_t sc[4];        // scales[0..16)
    float d;
    int t;
  };
  static COHORT_DECODE Raw load(const uint8_t* row, int64_t s, int t) {
    const uint8_t* block = row + s * kBlockBytes;
    Raw raw;
    COHORT_UNROLL
    for (int h = 0; h < 2; ++h) {
      ldg_words(block + 64 * h + 8 * t, raw.ql[h][0]);
      ldg_words(block + 64 * h + 32 + 8 * t, raw.ql[h][1]);
      ldg_words(block + kQh + 32 * h + 8 * t, raw.qh[h]);
    }
    ldg_words(block + kScales, raw.sc);
    raw.d = ldg_half(block + kD);
    raw.t = t;
    return raw;
  }
  template <int J>
  static COHORT_DECODE Sub sub(const Raw& raw) {
    constexpr int kH = J / 4, kQ = J % 4;
    Sub s;
    COHORT_UNROLL
    for (int k = 0; k < 2; ++k) {
      const uint32_t v = ((raw.ql[kH][kQ % 2][k] >> (4 * (kQ / 2))) & kLowNibbles) |
                         (((raw.qh[kH][k] >> (2 * kQ)) & 0x03030303u) << 4);
      s.w[k] = ((v | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
    }
    // scales[8h + 2q + t / 2]: byte (2q + t / 2) % 4 of word 2h + q / 2.
    const int i = 2 * kQ + raw.t / 2;
    const auto sc = static_cast<int8_t>((raw.sc[2 * kH + i / 4] >> (8 * (i % 4))) & 0xFFu);
    s.dl = raw.d * static_cast<float>(sc);
    s.nml = 0.0f;
    return s;
  }
};

}  // namespace cohort::cuda::kernels::mmq
