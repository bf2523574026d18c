// Encoders of the K formats (Q4_K, Q5_K, Q6_K).
//
// Each sub-block gets its own scale (and min) by a small search: starting
// from the scale that maps the sub-block's range onto the integer range,
// 2 * kSteps + 1 nearby scales are tried; for each, values are rounded and
// the scale (and offset) refitted by least squares; the fit with the least
// squared error wins. The sub-block scales are then themselves quantized
// against the super-block scales (6 or 8 bits), and the values rounded once
// more with the scales exactly as a decoder will see them.
//
// Scales live in f16, so inputs must stay well inside its range (|x| below
// about 1e6); larger or non-finite inputs give defined but meaningless blocks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/half.h"
#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quantize_util.h"

namespace cohort::quant::kernels {
namespace {

// Candidate scales per sub-block: (nmax + kStepSize * k) / range for
// |k| <= kSteps. On Gaussian data 7 steps came within 2% of the error of 15
// steps (Q4_K 0.0716 vs 0.0712 relative RMS) at half the encoding time.
constexpr int kSteps = 7;
constexpr float kStepSize = 0.1f;

// Sums over one candidate rounding q[i] = round_clamp(x[i] * iscale + shift)
// of n values (n a multiple of 8). Eight partial sums of q*x (one per lane)
// let the compiler vectorize this without reassociating float additions.
struct CandidateSums {
  int sq = 0;      // sum q
  int sqq = 0;     // sum q^2
  float sqx = 0;   // sum q*x
};

template <int n>
CandidateSums candidate_sums(const float* x, float iscale, float shift, int lo, int hi) {
  static_assert(n % 8 == 0);
  float part[8] = {};
  int sq = 0, sqq = 0;
  for (int i = 0; i < n; i += 8) {
    for (int l = 0; l < 8; ++l) {
      const int q = round_clamp(x[i + l] * iscale + shift, lo, hi);
      sq += q;
      sqq += q * q;
      part[l] += static_cast<float>(q) * x[i + l];
    }
  }
  const float sqx = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  return {sq, sqq, sqx};
}

// x ~ scale * q - min with q in [0, nmax] and min >= 0.
struct AsymFit {
  float scale;
  float min;
};

// Best (scale, min) for n values; see the file comment.
template <int n>
AsymFit fit_asym(const float* x, int nmax) {
  float lo = x[0], hi = x[0], sx = 0.0f, sxx = 0.0f;
  for (int i = 0; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
    sx += x[i];
    sxx += x[i] * x[i];
  }
  lo = std::fmin(lo, 0.0f);  // the format can only subtract a min
  if (!(hi > lo)) return {0.0f, -lo};
  AsymFit best{(hi - lo) / static_cast<float>(nmax), -lo};
  double best_err = std::numeric_limits<double>::infinity();
  for (int k = -kSteps; k <= kSteps; ++k) {
    const float iscale = (static_cast<float>(nmax) + kStepSize * static_cast<float>(k)) / (hi - lo);
    // (x - lo) * iscale, as x * iscale + shift so that candidate_sums serves both fits
    const auto [sq, sqq, sqx] = candidate_sums<n>(x, iscale, -lo * iscale, 0, nmax);
    // Least squares for x ~ s * q + o, with o <= 0 enforced afterwards.
    const double det = static_cast<double>(n) * sqq - static_cast<double>(sq) * sq;
    if (det <= 0) continue;
    double s = (n * static_cast<double>(sqx) - sq * static_cast<double>(sx)) / det;
    double o = (sqq * static_cast<double>(sx) - sq * static_cast<double>(sqx)) / det;
    if (o > 0) {
      o = 0;
      s = sqx / static_cast<double>(sqq);
    }
    if (s <= 0) continue;
    const double err = sxx - 2 * s * sqx - 2 * o * sx + s * s * sqq + 2 * s * o * sq + n * o * o;
    if (err < best_err) {
      best_err = err;
      best = {static_cast<float>(s), static_cast<float>(-o)};
    }
  }
  return best;
}

// Best signed scale for n values, x ~ scale * q with q in [-nmax, nmax - 1].
template <int n>
float fit_sym(const float* x, int nmax) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best = max / static_cast<float>(-nmax);
  double best_gain = 0.0;  // the squared error is sum(x^2) - sqx^2 / sqq
  for (int k = -kSteps; k <= kSteps; ++k) {
    const float iscale = -(static_cast<float>(nmax) + kStepSize * static_cast<float>(k)) / max;
    const auto [sq, sqq, sqx] = candidate_sums<n>(x, iscale, 0.0f, -nmax, nmax - 1);
    if (sqq == 0) continue;
    const double gain = static_cast<double>(sqx) * sqx / sqq;
    if (gain > best_gain) {
      best_gain = gain;
      best = static_cast<float>(sqx / static_cast<double>(sqq));
    }
  }
  return best;
}

// The super-block scale max / levels, which codes the sub-block scale `max`
// as the integer `levels`: returns its f16 bits and, in `value`, the value a
// decoder will read back (the sub-block scales are rounded against that).
uint16_t super_scale(float max, int levels, float& value) {
  const uint16_t h = f32_to_f16(max / static_cast<float>(levels));
  value = f16_to_f32(h);
  return h;
}

// Q4_K/Q5_K common part: fits the 8 sub-blocks of x, writes d, dmin and the
// packed scales, and the final q in [0, nmax] of all 256 values.
template <typename Block>
void encode_k_asym(const float* x, int nmax, Block& b, int* q) {
  AsymFit fit[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    fit[j] = fit_asym<32>(x + 32 * j, nmax);
    max_scale = std::max(max_scale, fit[j].scale);
    max_min = std::max(max_min, fit[j].min);
  }
  float d = 0.0f, dmin = 0.0f;
  b.d = super_scale(max_scale, 63, d);
  b.dmin = super_scale(max_min, 63, dmin);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0.0f ? round_clamp(fit[j].scale / d, 0, 63) : 0);
    m[j] = static_cast<uint8_t>(dmin > 0.0f ? round_clamp(fit[j].min / dmin, 0, 63) : 0);
  }
  pack_scale_min(sc, m, b.scales);
  for (int j = 0; j < 8; ++j) {
    const float ds = d * static_cast<float>(sc[j]);
    const float dm = dmin * static_cast<float>(m[j]);
    const float id = ds > 0.0f ? 1.0f / ds : 0.0f;
    for (int i = 0; i < 32; ++i) q[32 * j + i] = round_clamp((x[32 * j + i] + dm) * id, 0, nmax);
  }
}

// Low nibbles of sub-blocks 2c and 2c+1 share the bytes qs[32c, 32c+32).
void pack_k_nibbles(const int* q, uint8_t* qs) {
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) {
      qs[32 * c + i] = static_cast<uint8_t>((q[64 * c + i] & 0xF) | ((q[64 * c + 32 + i] & 0xF) << 4));
    }
  }
}

}  // namespace

void quantize_q4_k(const float* src, void* dst, int64_t n_blocks) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t ib = 0; ib < n_blocks; ++ib, src += kQKK) {
    int q[kQKK];
    encode_k_asym(src, 15, b[ib], q);
    pack_k_nibbles(q, b[ib].qs);
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n_blocks) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t ib = 0; ib < n_blocks; ++ib, src += kQKK) {
    int q[kQKK];
    encode_k_asym(src, 31, b[ib], q);
    pack_k_nibbles(q, b[ib].qs);
    for (int i = 0; i < 32; ++i) {
      int h = 0;
      for (int j = 0; j < 8; ++j) h |= (q[32 * j + i] >> 4) << j;
      b[ib].qh[i] = static_cast<uint8_t>(h);
    }
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n_blocks) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t ib = 0; ib < n_blocks; ++ib, src += kQKK) {
    float scale[16], max_scale = 0.0f;
    for (int s = 0; s < 16; ++s) {
      scale[s] = fit_sym<16>(src + 16 * s, 32);
      if (std::fabs(scale[s]) > std::fabs(max_scale)) max_scale = scale[s];
    }
    // The largest sub-block scale maps to -128, the end of the int8 range
    // with the most room, as in Q4_0.
    float d = 0.0f;
    b[ib].d = super_scale(max_scale, -128, d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int s = 0; s < 16; ++s) b[ib].scales[s] = static_cast<int8_t>(round_clamp(scale[s] * id, -128, 127));
    std::fill(b[ib].ql, b[ib].ql + sizeof(b[ib].ql), uint8_t{0});
    std::fill(b[ib].qh, b[ib].qh + sizeof(b[ib].qh), uint8_t{0});
    for (int i = 0; i < kQKK; ++i) {
      const float ds = d * static_cast<float>(b[ib].scales[i / 16]);
      const int q = ds != 0.0f ? round_clamp(src[i] / ds, -32, 31) + 32 : 32;
      const int h = i / 128, r = i % 128;
      b[ib].ql[64 * h + r % 64] = static_cast<uint8_t>(b[ib].ql[64 * h + r % 64] | ((q & 0xF) << (4 * (r / 64))));
      b[ib].qh[32 * h + r % 32] = static_cast<uint8_t>(b[ib].qh[32 * h + r % 32] | ((q >> 4) << (2 * (r / 32))));
    }
  }
}

}  // namespace cohort::quant::kernels
