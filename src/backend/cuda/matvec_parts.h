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

struct MatvecParts {
  static constexpr int kMaxParts = static_cast<int>(kMatvecMaxParts);
  const void* w[kMaxParts] = {};
  void* y[kMaxParts] = {};       // [n_tok, n_out of the part], F32 or BF16
  int64_t end[kMaxParts] = {};   // the rows of parts 0..p together
  int n = 0;

  // Element p of one of the arrays, by selects rather than an index: a
  // kernel parameter indexed at run time is copied to local memory (and
  // cost the BF16 matvec registers, hence occupancy: 46 -> 64 at 1 token).
  template <typename T>
  static COHORT_HOST_DEVICE T pick(const T (&a)[kMaxParts], int p) {
    T v = a[0];
    for (int i = 1; i < kMaxParts; ++i) v = p == i ? a[i] : v;
    return v;
  }
  COHORT_HOST_DEVICE int64_t rows() const { return n == 0 ? 0 : pick(end, n - 1); }
};

// The parts of a pass over tokens t0.. : each y advanced by t0 rows of its
// n_out elements of y_size bytes; parts without rows left out. REQUIRES:
// parts.size() <= kMatvecMaxParts.
inline MatvecParts parts_from(std::span<const MatvecPart> parts, int64_t t0, size_t y_size) {
  MatvecParts out;
  int64_t rows = 0;
  for (const MatvecPart& p : parts) {
    if (p.n_out == 0) continue;
    rows += p.n_out;
    out.w[out.n] = p.w;
    out.y[out.n] = static_cast<char*>(p.y) + static_cast<size_t>(t0 * p.n_out) * y_size;
    out.end[out.n] = rows;
    ++out.n;
  }
  return out;
}

}  // namespace cohort::cuda::kernels
