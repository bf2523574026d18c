// Byte layouts of the quantized block formats, as ggml writes them.
//
// Every struct is exactly one block of the file format (sizes pinned by the
// static_asserts below; a unit test checks them against gguf/tensor_type.cpp). Scales are IEEE half
// floats stored as raw uint16_t bits (convert with common/half.h). Blocks
// only need 2-byte alignment, which every row in a GGUF file has (tensor data
// is 32-byte aligned and every block size is even).
//
// Element numbering inside a block follows ggml; it is spelled out next to
// each packed field because the kernels depend on it.
#pragma once

#include <cstdint>

// The layout helpers below are shared with the CUDA kernels (backend/cuda).
#include "common/host_device.h"

namespace cohort::quant {

inline constexpr int kQK = 32;    // elements per block of the 32-element formats
inline constexpr int kQKK = 256;  // elements per super-block of the K formats
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K/Q5_K

// value[i] = d * (q[i] - 8), q in [0, 15].
struct BlockQ4_0 {
  uint16_t d;         // f16 scale
  uint8_t qs[kQK / 2];  // element j in the low nibble of qs[j], element j+16 in the high
};

// value[i] = d * q[i] + m, q in [0, 15].
struct BlockQ4_1 {
  uint16_t d;         // f16 scale
  uint16_t m;         // f16 offset (the block minimum)
  uint8_t qs[kQK / 2];  // as BlockQ4_0
};

// value[i] = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;      // f16 scale
  int8_t qs[kQK];  // element i
};

// 8 sub-blocks of 32 elements, sub-block j with a 6-bit scale sc[j] and min m[j]:
// value = (d * sc[j]) * q - (dmin * m[j]), q in [0, 15].
struct BlockQ4_K {
  uint16_t d;                    // f16 super-block scale of the sub-block scales
  uint16_t dmin;                 // f16 super-block scale of the sub-block mins
  uint8_t scales[kKScaleBytes];  // sc and m, 6 bits each; see unpack_scale_min()
  uint8_t qs[kQKK / 2];          // sub-blocks 2c and 2c+1 share qs[32c, 32c+32):
                                 // low nibble = sub-block 2c, high = 2c+1
};

// As BlockQ4_K with a fifth bit: q = low nibble | (bit j of qh[i % 32]) << 4
// for element i of sub-block j, q in [0, 31].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQKK / 8];  // bit j of qh[k]: high bit of element k of sub-block j
  uint8_t qs[kQKK / 2];  // low nibbles, as BlockQ4_K::qs
};

// 16 sub-blocks of 16 elements: value = (d * scales[i / 16]) * (q - 32), q in [0, 63].
// The block is two halves of 128 elements; element 128h + r (r < 128) has
//   low 4 bits  = (ql[64h + r % 64] >> 4 * (r / 64)) & 15
//   high 2 bits = (qh[32h + r % 32] >> 2 * (r / 32)) & 3.
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];  // signed 8-bit sub-block scales
  uint16_t d;                // f16 super-block scale (last, unlike the other formats)
};

// Activation formats of the integer dot products (vec_dot.h). Weights never
// use them; they hold one row of activations quantized for the duration of a
// matmul, in ggml's layouts.

// value[i] = d * qs[i], q in [-127, 127]; s = d * sum(qs), what the offset
// term m * sum(x) of a Q4_1 weight block needs.
struct BlockQ8_1 {
  uint16_t d;      // f16 scale
  uint16_t s;      // f16 of d * sum(qs)
  int8_t qs[kQK];  // element i
};

// value[i] = d * qs[i], q in [-127, 127]; bsums[j] = sum of qs[16j, 16j+16),
// what the mins of Q4_K/Q5_K and the offset -32 of Q6_K multiply.
struct BlockQ8_K {
  float d;                     // f32 scale (not f16, unlike the other formats)
  int8_t qs[kQKK];             // element i
  int16_t bsums[kQKK / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 2);
static_assert(sizeof(BlockQ4_1) == 20 && alignof(BlockQ4_1) == 2);
static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) == 2);
static_assert(sizeof(BlockQ4_K) == 144 && alignof(BlockQ4_K) == 2);
static_assert(sizeof(BlockQ5_K) == 176 && alignof(BlockQ5_K) == 2);
static_assert(sizeof(BlockQ6_K) == 210 && alignof(BlockQ6_K) == 2);
static_assert(sizeof(BlockQ8_1) == 36 && alignof(BlockQ8_1) == 2);
static_assert(sizeof(BlockQ8_K) == 292 && alignof(BlockQ8_K) == 4);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block. Packing:
//   bytes 0-3:  sc[0..3] in the low 6 bits, top 2 bits = bits 4-5 of sc[4..7]
//   bytes 4-7:  m[0..3]  in the low 6 bits, top 2 bits = bits 4-5 of m[4..7]
//   bytes 8-11: low nibble = bits 0-3 of sc[4..7], high nibble = bits 0-3 of m[4..7]
COHORT_HOST_DEVICE inline void unpack_scale_min(const uint8_t* packed, int j, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = packed[j] & 63;
    m = packed[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

// Inverse of unpack_scale_min for all 8 sub-blocks; sc and m must be < 64.
inline void pack_scale_min(const uint8_t sc[8], const uint8_t m[8], uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

}  // namespace cohort::quant
