// Encoders of the float and 32-element formats.
//
// Q8_0, Q4_0 and Q4_1 follow the round-to-nearest rules of ggml's reference
// quantizers (quantize_row_*_ref), which gguf-py's numpy quantizer mirrors;
// with -ffp-contract=off they produce the same bytes as gguf.quants.quantize
// for finite input. Non-finite input gives defined but meaningless blocks.
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quantize_util.h"

namespace cohort::quant::kernels {
namespace {

template <typename Block>
Block* blocks_of(void* dst) {
  return static_cast<Block*>(dst);
}

// Packs 32 values in [0, 15]: element j to the low nibble of byte j, j+16 to the high.
void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
}

}  // namespace

void quantize_f32(const float* src, void* dst, int64_t n_blocks) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * sizeof(float));
}

void quantize_f16(const float* src, void* dst, int64_t n_blocks) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n_blocks; ++i) h[i] = f32_to_f16(src[i]);
}

void quantize_bf16(const float* src, void* dst, int64_t n_blocks) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n_blocks; ++i) h[i] = f32_to_bf16(src[i]);
}

void quantize_q8_0(const float* src, void* dst, int64_t n_blocks) {
  BlockQ8_0* b = blocks_of<BlockQ8_0>(dst);
  for (int64_t ib = 0; ib < n_blocks; ++ib, src += kQK) {
    float amax = 0.0f;
    for (int i = 0; i < kQK; ++i) amax = std::fmax(amax, std::fabs(src[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[ib].d = f32_to_f16(d);
    for (int i = 0; i < kQK; ++i) {
      // roundf: halves away from zero, as ggml and numpy's np_roundf do
      b[ib].qs[i] = static_cast<int8_t>(clamp_to_int(std::round(src[i] * id), -127, 127));
    }
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t n_blocks) {
  BlockQ4_0* b = blocks_of<BlockQ4_0>(dst);
  for (int64_t ib = 0; ib < n_blocks; ++ib, src += kQK) {
    // The value of largest magnitude (the first, on ties) maps to -8, so the
    // one-sided range [-8, 7] is used fully on the side that needs it.
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kQK; ++i) {
      if (amax < std::fabs(src[i])) {
        amax = std::fabs(src[i]);
        max = src[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQK];
    for (int i = 0; i < kQK; ++i) q[i] = clamp_to_int(src[i] * id + 8.5f, 0, 15);  // truncates
    b[ib].d = f32_to_f16(d);
    pack_nibbles(q, b[ib].qs);
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n_blocks) {
  BlockQ4_1* b = blocks_of<BlockQ4_1>(dst);
  for (int64_t ib = 0; ib < n_blocks; ++ib, src += kQK) {
    float min = src[0], max = src[0];
    for (int i = 1; i < kQK; ++i) {
      min = std::fmin(min, src[i]);
      max = std::fmax(max, src[i]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQK];
    for (int i = 0; i < kQK; ++i) q[i] = clamp_to_int((src[i] - min) * id + 0.5f, 0, 15);
    b[ib].d = f32_to_f16(d);
    b[ib].m = f32_to_f16(min);
    pack_nibbles(q, b[ib].qs);
  }
}

}  // namespace cohort::quant::kernels
