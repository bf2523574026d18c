// AVX2 tile kernels of the 32-element formats (Q4_0 x Q8_0, Q4_1 x Q8_1,
// Q8_0 x Q8_0) and of the float formats (F16, BF16, F32).
//
// Per (row, activation, block) the work is vpmaddubsw, vpmaddwd, vcvtdq2ps
// and one vfmadd with the product of the two block scales (plus one op for
// the signs of Q8_0 or the offset 8 of Q4_0); the order of F32 operations is
// the one vec_dot_scalar.cpp defines. Q4_0 keeps one chain per pair over
// whole-block sums: the int32 lanes of 8 pairs (a micro-tile) or of 8
// blocks (a matvec row) are summed side by side (hsum8_epi32) before the
// F32 step, one vfmadd for the 8 pairs, or 8 scalar FMAs for the row. What
// differs between the two paths below is only how the f16 scales reach the
// registers:
//
//  - One activation (a matvec, and vec_dot()): one row at a time, blocks in
//    groups of 8; the group's 8 scales of the row and of the activation are
//    gathered into one vector each (vpinsrw, vcvtph2ps) and multiplied once;
//    each block's product is then broadcast from a stack copy. Rows go one
//    by one because a matvec streams its matrix from memory, and interleaving
//    rows hurts that: on the Zen 4 machine this was tuned on, a decode step of
//    the default model (96 MB of weights) took 7.5-8.3 ms row by row and
//    10-12 ms with 4 rows interleaved (2 rows: 7.6-12 ms; software prefetch
//    did not close the gap), though 4 rows are 1.2-1.3x faster when the
//    matrix sits in L2.
//  - Several activations: the scales are converted to F32 arrays up front,
//    those of up to kMaxActGroup activations once per group and those of a
//    row group once, and micro-tiles of 2 rows x 4 activations keep 8
//    accumulators in registers, so each weight block is unpacked once per 4
//    activations and each activation block loaded once per 2 rows. Rows
//    longer than kChunk blocks are walked in chunks, the accumulators parked
//    in memory between chunks (chunk starts are multiples of 8 blocks, so
//    the Q4_1 offset lanes b % 8 stay the same).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "quant/avx2_tile.h"
#include "quant/blocks.h"
#include "quant/vec_dot_kernels.h"

namespace cohort::quant::kernels {
namespace {

using namespace avx2;

enum class Kind { q4_0, q4_1, q8_0 };

template <Kind> struct Fmt;
template <> struct Fmt<Kind::q4_0> { using W = BlockQ4_0; using A = BlockQ8_0; };
template <> struct Fmt<Kind::q4_1> { using W = BlockQ4_1; using A = BlockQ8_1; };
template <> struct Fmt<Kind::q8_0> { using W = BlockQ8_0; using A = BlockQ8_0; };

// Q4_1 x Q8_1 adds sum_b m_b * s_b in 8 more lanes (block b in lane b % 8).
constexpr bool has_offset(Kind k) { return k == Kind::q4_1; }
// Q4_0 keeps one F32 chain per (row, activation) over whole-block integer
// sums (llama.cpp's repacked Q4_0 kernels); the others 8 lanes per pair.
constexpr bool one_chain(Kind k) { return k == Kind::q4_0; }

constexpr int64_t kChunk = 512;            // blocks (16384 elements) per chunk of a row
constexpr int64_t kActScaleFloats = 8192;  // 32 KiB of activation scales per group
constexpr int64_t kMaxActGroup = 64;

int64_t round_up8(int64_t n) { return (n + 7) / 8 * 8; }

// The 32 weights of a block as bytes in element order: 0..15 for Q4_0/Q4_1
// (the offset 8 of Q4_0 is taken off later), -127..127 for Q8_0.
template <Kind k>
COHORT_AVX2_INLINE __m256i weight_bytes(const typename Fmt<k>::W& b) {
  if constexpr (k == Kind::q8_0) {
    return loadu(b.qs);
  } else {
    // The 16 bytes in both halves (one broadcast load), the upper half
    // shifted right by 4: low nibbles, then high nibbles.
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)));
    const __m256i shifted = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(shifted, _mm256_set1_epi8(0xF));
  }
}

// Per (row, activation) pair of one block: sums of 4 products of w and a in
// int32 lanes, as floats. For Q8_0, wabs = |w| (vpmaddubsw wants one operand
// unsigned; the signs move to a); for Q4_0, eight_a = the pairs of 8 * a.
template <Kind k>
COHORT_AVX2_INLINE __m256i ilanes(__m256i w, __m256i wabs, __m256i av, __m256i eight_a) {
  __m256i p16;
  if constexpr (k == Kind::q8_0) {
    p16 = _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(av, w));
  } else {
    p16 = _mm256_maddubs_epi16(w, av);
  }
  if constexpr (k == Kind::q4_0) p16 = _mm256_sub_epi16(p16, eight_a);
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

template <Kind k>
COHORT_AVX2_INLINE __m256 lanes(__m256i w, __m256i wabs, __m256i av, __m256i eight_a) {
  return _mm256_cvtepi32_ps(ilanes<k>(w, wabs, av, eight_a));
}

template <Kind k>
COHORT_AVX2_INLINE __m256i eight_times(__m256i av) {
  if constexpr (k == Kind::q4_0) return _mm256_maddubs_epi16(_mm256_set1_epi8(8), av);
  return _mm256_setzero_si256();
}

// ---- one activation ----------------------------------------------------

COHORT_AVX2_INLINE uint16_t load_u16(const uint8_t* p) {
  uint16_t v = 0;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The f16 at p + J * stride for J = 0..7, in lane J (with kClamp, J is
// capped at `last`: the caller zeroes the lanes past it).
template <bool kClamp, size_t... J>
COHORT_AVX2_INLINE __m128i insert8(const uint8_t* p, size_t stride, size_t last, std::index_sequence<J...>) {
  __m128i h = _mm_setzero_si128();
  ((h = _mm_insert_epi16(h, load_u16(p + (kClamp ? std::min(J, last) : J) * stride), J)), ...);
  return h;
}

// The f16 field at byte `offset` of `count` (1..8) consecutive blocks as
// F32 lanes; lanes from `count` on are zero.
template <typename Block>
COHORT_AVX2_INLINE __m256 gather_half8(const Block* b, size_t offset, int64_t count) {
  const auto* p = reinterpret_cast<const uint8_t*>(b) + offset;
  constexpr auto kLanes = std::make_index_sequence<8>();
  if (count == 8) return _mm256_cvtph_ps(insert8<false>(p, sizeof(Block), 7, kLanes));
  const __m256 v = _mm256_cvtph_ps(insert8<true>(p, sizeof(Block), static_cast<size_t>(count - 1), kLanes));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane);
  return _mm256_and_ps(v, _mm256_castsi256_ps(keep));
}

// The activation's scales (d, and s for Q8_1) as F32 in 8-block groups,
// converted once per call where the row is at most kChunk blocks long; a
// longer row gathers them group by group.
struct ActScales {
  const float* d = nullptr;  // [round_up8(n_blocks)], zero-padded; null: gather
  const float* s = nullptr;
};

// The whole-block integer sums of `count` (1..8) consecutive blocks as F32
// lanes (block j in lane j; lanes from `count` on are zero).
template <Kind k>
COHORT_AVX2_INLINE __m256 block_sums8(const typename Fmt<k>::W* w, const typename Fmt<k>::A* a,
                                      int64_t count) {
  __m256i p[8];
  for (int64_t j = 0; j < 8; ++j) {
    if (j < count) {
      const __m256i av = loadu(a[j].qs);
      p[j] = ilanes<k>(weight_bytes<k>(w[j]), __m256i{}, av, eight_times<k>(av));
    } else {
      p[j] = _mm256_setzero_si256();
    }
  }
  return _mm256_cvtepi32_ps(hsum8_epi32(p));
}

template <Kind k>
void matvec_row(const typename Fmt<k>::W* w, const typename Fmt<k>::A* a, const ActScales& as,
                int64_t n_blocks, float* y) {
  using W = typename Fmt<k>::W;
  using A = typename Fmt<k>::A;
  __m256 c = _mm256_setzero_ps();
  float ms = 0.0f, chain = 0.0f;
  for (int64_t g = 0; g < n_blocks; g += 8) {
    const int64_t count = std::min<int64_t>(8, n_blocks - g);
    const __m256 da = as.d != nullptr ? _mm256_load_ps(as.d + g) : gather_half8(a + g, offsetof(A, d), count);
    // dw * da of the group's blocks, read back one at a time as broadcasts
    // (a load, where picking lanes in registers would take a shuffle).
    alignas(32) float dd[8];
    _mm256_store_ps(dd, _mm256_mul_ps(gather_half8(w + g, offsetof(W, d), count), da));
    if constexpr (has_offset(k)) {
      alignas(32) float mw[8], sa[8];
      _mm256_store_ps(sa, as.s != nullptr ? _mm256_load_ps(as.s + g) : gather_half8(a + g, offsetof(A, s), count));
      _mm256_store_ps(mw, gather_half8(w + g, offsetof(W, m), count));
      for (int64_t j = 0; j < count; ++j) ms = std::fma(mw[j], sa[j], ms);
    }
    if constexpr (one_chain(k)) {
      // The group's whole-block sums side by side, then the chain block by block.
      alignas(32) float sums[8];
      _mm256_store_ps(sums, block_sums8<k>(w + g, a + g, count));
      for (int64_t j = 0; j < count; ++j) chain = std::fma(sums[j], dd[j], chain);
      continue;
    }
    for (int64_t j = 0; j < count; ++j) {
      const __m256i av = loadu(a[g + j].qs);
      const __m256i wq = weight_bytes<k>(w[g + j]);
      const __m256i wabs = k == Kind::q8_0 ? _mm256_sign_epi8(wq, wq) : wq;
      c = _mm256_fmadd_ps(_mm256_broadcast_ss(&dd[j]), lanes<k>(wq, wabs, av, eight_times<k>(av)), c);
    }
  }
  if constexpr (one_chain(k)) {
    *y = chain;
    return;
  }
  float v = hsum(c);
  if constexpr (has_offset(k)) v += ms;
  *y = v;
}

// Q4_0 matvec: the chain of a row is a sequence of dependent FMAs (latency
// bound), so chains run behind the vector work: rows go in pairs, and while
// rows r, r + 1 find their whole-block sums (each row streamed on its own),
// the chains of rows r - 2 and r - 1 consume the sums and scale products
// stored for them, two independent chains side by side. act_d: the
// activation's scales as F32.
template <Kind k>
void matvec_chains(const void* rows, size_t row_stride, int64_t n_rows, const typename Fmt<k>::A* a,
                   const float* act_d, int64_t n_blocks, float* y) {
  using W = typename Fmt<k>::W;
  alignas(32) float sums[4][kChunk], prods[4][kChunk];
  auto fill = [&](int64_t r, int64_t g, int64_t count) COHORT_AVX2_LAMBDA_INLINE {
    const W* w = row_at<W>(rows, row_stride, r);
    _mm256_store_ps(sums[r % 4] + g, block_sums8<k>(w + g, a + g, count));
    _mm256_store_ps(prods[r % 4] + g,
                    _mm256_mul_ps(gather_half8(w + g, offsetof(W, d), count), _mm256_load_ps(act_d + g)));
  };
  for (int64_t r0 = 0; r0 < n_rows + 2; r0 += 2) {
    const bool has_a = r0 >= 2, has_b = r0 >= 2 && r0 - 1 < n_rows;  // chains of rows r0 - 2, r0 - 1
    const float* sa = sums[(r0 + 2) % 4];
    const float* pa = prods[(r0 + 2) % 4];
    const float* sb = sums[(r0 + 3) % 4];
    const float* pb = prods[(r0 + 3) % 4];
    float ca = 0.0f, cb = 0.0f;
    for (int64_t g = 0; g < n_blocks; g += 8) {
      const int64_t count = std::min<int64_t>(8, n_blocks - g);
      if (r0 < n_rows) fill(r0, g, count);
      if (has_a) {
        for (int64_t j = g; j < g + count; ++j) ca = std::fma(sa[j], pa[j], ca);
      }
      if (has_b) {
        for (int64_t j = g; j < g + count; ++j) cb = std::fma(sb[j], pb[j], cb);
      }
    }
    if (r0 + 1 < n_rows) {
      for (int64_t g = 0; g < n_blocks; g += 8) fill(r0 + 1, g, std::min<int64_t>(8, n_blocks - g));
    }
    if (has_a) y[r0 - 2] = ca;
    if (has_b) y[r0 - 1] = cb;
  }
}

template <Kind k>
void matvec32(const void* rows, size_t row_stride, int64_t n_rows, const void* act,
              int64_t n_blocks, float* y) {
  using A = typename Fmt<k>::A;
  const auto* a = static_cast<const A*>(act);
  alignas(32) float d[kChunk], s[kChunk];
  ActScales as;
  if (n_blocks <= kChunk) {
    for (int64_t g = 0; g < n_blocks; g += 8) {
      const int64_t count = std::min<int64_t>(8, n_blocks - g);
      _mm256_store_ps(d + g, gather_half8(a + g, offsetof(A, d), count));
      if constexpr (has_offset(k)) _mm256_store_ps(s + g, gather_half8(a + g, offsetof(A, s), count));
    }
    as = {d, s};
  }
  if constexpr (one_chain(k)) {
    if (n_blocks <= kChunk) {
      matvec_chains<k>(rows, row_stride, n_rows, a, d, n_blocks, y);
      return;
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    matvec_row<k>(row_at<typename Fmt<k>::W>(rows, row_stride, r), a, as, n_blocks, y + r);
  }
}

// ---- several activations -------------------------------------------------

// Scales (d) and, for Q4_1/Q8_1, offsets (m or s) of blocks [b0, b0 + len)
// as F32: d[i * d_stride], off[i]; entries up to `padded` are zero.
template <typename Block>
void convert_scales(const Block* blk, int64_t b0, int64_t len, int64_t padded, float* d,
                    int64_t d_stride, float* off) {
  for (int64_t i = 0; i < len; ++i) {
    d[i * d_stride] = _cvtsh_ss(blk[b0 + i].d);
    if constexpr (requires { blk->m; }) off[i] = _cvtsh_ss(blk[b0 + i].m);
    if constexpr (requires { blk->s; }) off[i] = _cvtsh_ss(blk[b0 + i].s);
  }
  for (int64_t i = len; i < padded; ++i) {
    d[i * d_stride] = 0.0f;
    if (off != nullptr) off[i] = 0.0f;
  }
}

// One chunk of blocks for a micro-tile. The d scales are stored block-major
// (the T activations' or R rows' scales of a block side by side, so that the
// inner loop walks one pointer per side); the Q4_1 offsets row-major, for
// the scalar chain of offset products. The state (accumulators between
// chunks) is indexed by the activation's place in its group, then by row.
template <Kind k, int kRows>
struct Micro32 {
  static_assert(!one_chain(k) || kRows == 2);
  using W = typename Fmt<k>::W;
  using A = typename Fmt<k>::A;

  const void* rows;
  size_t row_stride;
  const void* acts;
  size_t act_stride;
  int64_t b0, b1;       // blocks of this chunk
  int64_t group;        // activations per group
  int64_t stride;       // entries per row/activation of the offset arrays
  const float* row_d;   // [block][kRows]
  const float* row_m;   // [kRows][stride], Q4_1 only
  const float* act_d;   // [block][group]
  const float* act_s;   // [group][stride], Q4_1 only
  int64_t t_group;      // first activation of the group
  __m256* acc;          // [group][kRows]; read unless b0 == 0
  __m256* offsets;      // [group][kRows], Q4_1 only

  // Q4_0: one chain per pair, the 2 x 4 pairs of a micro-tile in the lanes
  // of one vector (lane 2t + r). Per block, the pairs' whole-block integer
  // sums side by side (hsum8_epi32), times dw * da. Between chunks a pair's
  // chain is parked in lane 0 of its state vector.
  template <int R, int T>
  COHORT_AVX2_INLINE void chains(const W* const* w, const A* const* a, int64_t tg) const {
    alignas(32) float init[8] = {};
    if (b0 != 0) {
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) init[2 * t + r] = _mm256_cvtss_f32(acc[(tg + t) * kRows + r]);
      }
    }
    __m256 c = _mm256_load_ps(init);
    const float* ad = act_d + tg;
    const float* rd = row_d;
    for (int64_t b = b0; b < b1; ++b, ad += group, rd += kRows) {
      __m256i wq[R];
      for (int r = 0; r < R; ++r) wq[r] = weight_bytes<k>(w[r][b]);
      __m256i p[8];
      for (__m256i& v : p) v = _mm256_setzero_si256();
      for (int t = 0; t < T; ++t) {
        const __m256i av = loadu(a[t][b].qs);
        const __m256i eight_a = eight_times<k>(av);
        for (int r = 0; r < R; ++r) p[2 * t + r] = ilanes<k>(wq[r], wq[r], av, eight_a);
      }
      __m256 dd;
      if constexpr (R == 2 && T == 4) {
        const __m256 rows2 = _mm256_castpd_ps(_mm256_broadcast_sd(reinterpret_cast<const double*>(rd)));
        const __m256 acts4 = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(ad)),
                                                      _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
        dd = _mm256_mul_ps(rows2, acts4);
      } else {
        alignas(32) float prod[8] = {};
        for (int t = 0; t < T; ++t) {
          for (int r = 0; r < R; ++r) prod[2 * t + r] = rd[r] * ad[t];
        }
        dd = _mm256_load_ps(prod);
      }
      c = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8_epi32(p)), dd, c);
    }
    alignas(32) float out[8];
    _mm256_store_ps(out, c);
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) acc[(tg + t) * kRows + r] = _mm256_setr_ps(out[2 * t + r], 0, 0, 0, 0, 0, 0, 0);
    }
  }

  template <int R, int T>
  void operator()(int64_t r0, int64_t t0) const {
    const W* w[R];
    const A* a[T];
    for (int r = 0; r < R; ++r) w[r] = row_at<W>(rows, row_stride, r0 + r);
    for (int t = 0; t < T; ++t) a[t] = row_at<A>(acts, act_stride, t0 + t);
    const int64_t tg = t0 - t_group;
    if constexpr (one_chain(k)) {
      chains<R, T>(w, a, tg);
      return;
    }
    __m256 c[R][T];
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) c[r][t] = b0 == 0 ? _mm256_setzero_ps() : acc[(tg + t) * kRows + r];
    }
    const float* ad = act_d + tg;
    const float* rd = row_d;
    for (int64_t b = b0; b < b1; ++b, ad += group, rd += kRows) {
      __m256i wq[R], wabs[R];
      for (int r = 0; r < R; ++r) {
        wq[r] = weight_bytes<k>(w[r][b]);
        wabs[r] = k == Kind::q8_0 ? _mm256_sign_epi8(wq[r], wq[r]) : wq[r];
      }
      for (int t = 0; t < T; ++t) {
        const __m256i av = loadu(a[t][b].qs);
        const __m256i eight_a = eight_times<k>(av);
        const __m256 da = _mm256_broadcast_ss(ad + t);
        for (int r = 0; r < R; ++r) {
          const __m256 dd = _mm256_mul_ps(_mm256_broadcast_ss(rd + r), da);
          c[r][t] = _mm256_fmadd_ps(dd, lanes<k>(wq[r], wabs[r], av, eight_a), c[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) acc[(tg + t) * kRows + r] = c[r][t];
    }
    if constexpr (has_offset(k)) {
      // One chain per (row, activation) in block order, kept in lane 0 (the
      // other lanes stay 0); the R * T chains advance together, block by
      // block, so that they overlap instead of waiting on each other.
      float m[R][T];
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) {
          m[r][t] = b0 == 0 ? 0.0f : _mm256_cvtss_f32(offsets[(tg + t) * kRows + r]);
        }
      }
      for (int64_t i = 0; i < b1 - b0; ++i) {
        for (int r = 0; r < R; ++r) {
          const float mw = row_m[r * stride + i];
          for (int t = 0; t < T; ++t) m[r][t] = std::fma(mw, act_s[(tg + t) * stride + i], m[r][t]);
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) {
          offsets[(tg + t) * kRows + r] = _mm256_setr_ps(m[r][t], 0, 0, 0, 0, 0, 0, 0);
        }
      }
    }
  }
};

template <Kind k, int R, int T>
void tile32_groups(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                   size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride) {
  using W = typename Fmt<k>::W;
  using A = typename Fmt<k>::A;
  constexpr bool kOffset = has_offset(k);
  constexpr int64_t kPer = kOffset ? 2 : 1;  // scale arrays per activation
  const int64_t chunk = std::min(round_up8(n_blocks), kChunk);
  const int64_t group = std::clamp(kActScaleFloats / (kPer * chunk) / T * T, int64_t{T}, kMaxActGroup);
  const bool one_chunk = n_blocks <= chunk;

  alignas(32) float act_scales[kActScaleFloats];
  alignas(32) float row_scales[R * 2 * kChunk];
  __m256 state[kMaxActGroup * R * 2];
  float* act_d = act_scales;
  float* act_s = act_scales + group * chunk;
  float* row_d = row_scales;
  float* row_m = row_scales + R * chunk;
  __m256* acc = state;
  __m256* offsets = state + group * R;

  auto convert_acts = [&](int64_t ta, int64_t tb, int64_t c0, int64_t len) {
    for (int64_t t = ta; t < tb; ++t) {
      convert_scales(row_at<A>(acts, act_stride, t), c0, len, chunk, act_d + (t - ta), group,
                     kOffset ? act_s + (t - ta) * chunk : nullptr);
    }
  };
  for (int64_t ta = 0; ta < n_acts; ta += group) {
    const int64_t tb = std::min(ta + group, n_acts);
    if (one_chunk) convert_acts(ta, tb, 0, n_blocks);
    for (int64_t r0 = 0; r0 < n_rows; r0 += R) {
      const int nr = static_cast<int>(std::min<int64_t>(R, n_rows - r0));
      for (int64_t c0 = 0; c0 < n_blocks; c0 += chunk) {
        const int64_t len = std::min(chunk, n_blocks - c0);
        if (!one_chunk) convert_acts(ta, tb, c0, len);
        for (int r = 0; r < nr; ++r) {
          convert_scales(row_at<W>(rows, row_stride, r0 + r), c0, len, chunk, row_d + r, R,
                         kOffset ? row_m + r * chunk : nullptr);
        }
        Micro32<k, R> micro{rows, row_stride, acts, act_stride, c0, c0 + len, group, chunk, row_d,
                            row_m, act_d, act_s, ta, acc, offsets};
        over_acts<R, T>(nr, r0, ta, tb, micro);
      }
      for (int64_t t = ta; t < tb; ++t) {
        for (int r = 0; r < nr; ++r) {
          float v = one_chain(k) ? _mm256_cvtss_f32(acc[(t - ta) * R + r]) : hsum(acc[(t - ta) * R + r]);
          if constexpr (kOffset) v += hsum(offsets[(t - ta) * R + r]);
          y[t * y_stride + r0 + r] = v;
        }
      }
    }
  }
}

template <Kind k>
void tile32(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
            size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride) {
  if (n_acts == 1) {
    matvec32<k>(rows, row_stride, n_rows, acts, n_blocks, y);
  } else {
    tile32_groups<k, 2, 4>(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);
  }
}

// Float rows: two accumulators per (row, activation), element i in lane i % 8
// of accumulator (i / 8) % 2, so that a lone row still has two FMA chains
// (BF16 rows of whole 32-element groups pair elements as vdpbf16ps does).
struct F16 { uint16_t bits; };
struct BF16 { uint16_t bits; };

template <typename E>
COHORT_AVX2_INLINE __m256 widen8(const E* p) {
  if constexpr (std::is_same_v<E, float>) {
    return _mm256_loadu_ps(p);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same_v<E, F16>) return _mm256_cvtph_ps(h);
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <typename E>
COHORT_AVX2_INLINE float widen1(E v) {
  if constexpr (std::is_same_v<E, float>) return v;
  else if constexpr (std::is_same_v<E, F16>) return _cvtsh_ss(v.bits);
  else return std::bit_cast<float>(static_cast<uint32_t>(v.bits) << 16);
}

template <typename E>
struct MicroFloat {
  const void* rows;
  size_t row_stride;
  const void* acts;
  size_t act_stride;
  int64_t n;
  float* y;
  int64_t y_stride;

  template <int R, int T>
  void operator()(int64_t r0, int64_t t0) const {
    const E* w[R];
    const E* a[T];
    for (int r = 0; r < R; ++r) w[r] = row_at<E>(rows, row_stride, r0 + r);
    for (int t = 0; t < T; ++t) a[t] = row_at<E>(acts, act_stride, t0 + t);
    __m256 c[2][R][T];
    for (auto& half : c) {
      for (auto& row : half) {
        for (__m256& v : row) v = _mm256_setzero_ps();
      }
    }
    // 8 elements at i into accumulator h.
    auto step = [&](int64_t i, int h) COHORT_AVX2_LAMBDA_INLINE {
      __m256 wv[R];
      for (int r = 0; r < R; ++r) wv[r] = widen8(w[r] + i);
      for (int t = 0; t < T; ++t) {
        const __m256 av = widen8(a[t] + i);
        for (int r = 0; r < R; ++r) c[h][r][t] = _mm256_fmadd_ps(wv[r], av, c[h][r][t]);
      }
    };
    const int64_t n8 = n - n % 8;
    int64_t i = 0;
    if constexpr (std::is_same_v<E, BF16>) {
      // vdpbf16ps pairing, see vec_dot_scalar.cpp: 16 elements per accumulator.
      auto pairs = [&](int64_t at, int h) COHORT_AVX2_LAMBDA_INLINE {
        const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
        __m256 wo[R], we[R];
        for (int r = 0; r < R; ++r) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r] + at));
          wo[r] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
          we[r] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        }
        for (int t = 0; t < T; ++t) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t] + at));
          const __m256 ao = _mm256_castsi256_ps(_mm256_and_si256(v, high));
          const __m256 ae = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
          for (int r = 0; r < R; ++r) {
            c[h][r][t] = _mm256_fmadd_ps(we[r], ae, _mm256_fmadd_ps(wo[r], ao, c[h][r][t]));
          }
        }
      };
      if (n % 32 == 0) {
        for (; i < n; i += 32) {
          pairs(i, 0);
          pairs(i + 16, 1);
        }
      }
    }
    for (; i + 16 <= n8; i += 16) {
      step(i, 0);
      step(i + 8, 1);
    }
    if (i < n8) step(i, 0);
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        float total = hsum(_mm256_add_ps(c[0][r][t], c[1][r][t]));
        for (int64_t k = n8; k < n; ++k) total = std::fma(widen1(w[r][k]), widen1(a[t][k]), total);
        y[(t0 + t) * y_stride + r0 + r] = total;
      }
    }
  }
};

// 2 rows x 3 activations (12 accumulators) per micro-tile; a matvec goes row
// by row, see the top of this file.
template <typename E>
void tile_float(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                size_t act_stride, int64_t n_acts, int64_t n, float* y, int64_t y_stride) {
  MicroFloat<E> micro{rows, row_stride, acts, act_stride, n, y, y_stride};
  if (n_acts == 1) {
    for (int64_t r0 = 0; r0 < n_rows; ++r0) micro.template operator()<1, 1>(r0, 0);
    return;
  }
  constexpr int R = 2, T = 3;
  for (int64_t r0 = 0; r0 < n_rows; r0 += R) {
    over_acts<R, T>(static_cast<int>(std::min<int64_t>(R, n_rows - r0)), r0, 0, n_acts, micro);
  }
}

}  // namespace

#define COHORT_AVX2_TILE(name, ...)                                                            \
  void name(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,             \
            size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride) {  \
    __VA_ARGS__(rows, row_stride, n_rows, acts, act_stride, n_acts, n_blocks, y, y_stride);    \
  }

COHORT_AVX2_TILE(tile_q4_0_q8_0_avx2, tile32<Kind::q4_0>)
COHORT_AVX2_TILE(tile_q4_1_q8_1_avx2, tile32<Kind::q4_1>)
COHORT_AVX2_TILE(tile_q8_0_q8_0_avx2, tile32<Kind::q8_0>)
COHORT_AVX2_TILE(tile_f16_f16_avx2, tile_float<F16>)
COHORT_AVX2_TILE(tile_bf16_bf16_avx2, tile_float<BF16>)
COHORT_AVX2_TILE(tile_f32_f32_avx2, tile_float<float>)

#undef COHORT_AVX2_TILE

}  // namespace cohort::quant::kernels
