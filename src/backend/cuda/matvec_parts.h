// The matrices of one matvec launch: up to kMaxParts matrices of the same
// weight type and n_in, multiplied with the same x, each into its own
// output (the q, k and v projections of a layer; its gate and up). Row i of
// the launch is row i - start(p) of the part p whose rows hold it, so one
// grid covers them all: one launch instead of three, and the small k and v
// matrices share the multiprocessors with q instead of leaving most idle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/host_device.h"

namespace cohort::cuda {

// One matrix of a launch: W [n_out, n_in] and its y [n_tok, n_out].
struct MatvecPart {
  const void* w = nullptr;
  void* y = nullptr;
  int64_t n_out = 0;
};
// At most this many parts a launch.
inline constexpr size_t kMatvecMaxParts = 3;

}  // namespace cohort::cuda

namespace cohort::cuda::kernels {

// A warp computes R consecutive rows of one part (a group); the groups of
// part p follow those of part p - 1, each part's last group padded past its
// rows. So a warp looks its part up once, and its rows never straddle two.
struct MatvecParts {
  static constexpr int kMaxParts = static_cast<int>(kMatvecMaxParts);
  const void* w[kMaxParts] = {};
  void* y[kMaxParts] = {};          // [n_tok, n_out of the part], F32 or BF16
  int64_t n_out[kMaxParts] = {};
  int n = 0;

  // Element p of one of the arrays, by selects rather than an index: a
  // kernel parameter indexed at run time is copied to local memory.
  template <typename T>
  static COHORT_HOST_DEVICE T pick(const T (&a)[kMaxParts], int p) {
    T v = a[0];
    for (int i = 1; i < kMaxParts; ++i) v = p == i ? a[i] : v;
    return v;
  }
  // Groups of R rows of part p, and of all parts.
  COHORT_HOST_DEVICE static int64_t groups_of(int64_t rows, int r) { return (rows + r - 1) / r; }
  COHORT_HOST_DEVICE int64_t groups(int r) const {
    int64_t g = 0;
    for (int i = 0; i < kMaxParts; ++i) g += i < n ? groups_of(n_out[i], r) : 0;
    return g;
  }
  int64_t rows() const {
    int64_t rows = 0;
    for (int i = 0; i < n; ++i) rows += n_out[i];
    return rows;
  }
};

// The parts of a pass over tokens t0.. : each y advanced by t0 rows of its
// n_out elements of y_size bytes; parts without rows left out. REQUIRES:
// parts.size() <= kMatvecMaxParts.
inline MatvecParts parts_from(std::span<const MatvecPart> parts, int64_t t0, size_t y_size) {
  MatvecParts out;
  for (const MatvecPart& p : parts) {
    if (p.n_out == 0) continue;
    out.w[out.n] = p.w;
    out.y[out.n] = static_cast<char*>(p.y) + static_cast<size_t>(t0 * p.n_out) * y_size;
    out.n_out[out.n] = p.n_out;
    ++out.n;
  }
  return out;
}

}  // namespace cohort::cuda::kernels
