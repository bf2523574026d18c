#include "backend/cuda/mmd.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/matvec_q8_kernels.h"
#include "backend/cuda/mmd_kernels.h"
#include "common/error.h"

namespace cohort::cuda {
namespace kernels {

MmdType mmd_type(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q8_0: return {mmd_q8_0, mmd_q8_0_clusters, 128};
    case TensorType::Q4_0: return {mmd_q4_0, mmd_q4_0_clusters, 128};
    case TensorType::Q4_1: return {mmd_q4_1, mmd_q4_1_clusters, 128};
    case TensorType::Q4_K: return {mmd_q4_k, mmd_q4_k_clusters, 256};
    case TensorType::Q5_K: return {mmd_q5_k, mmd_q5_k_clusters, 256};
    case TensorType::Q6_K: return {mmd_q6_k, mmd_q6_k_clusters, 256};
    default: return {};
  }
}

}  // namespace kernels

static_assert(kMmdMaxTokens == kernels::kMmdMaxTokens);

bool can_mmd(gguf::TensorType type, int64_t n_in) {
  const kernels::MmdType t = kernels::mmd_type(type);
  return t.run != nullptr && n_in > 0 && n_in % t.step_elems == 0;
}

namespace {

// The fewest tokens from which mmd was measured faster than the int8
// kernels (mmq.h) and cuBLAS on an H200 (cuda_kernel_bench and `cohort
// bench --npl`, docs/PERFORMANCE.md), or 0 where it was not.
int64_t mmd_min_tokens(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::Q4_K: return 9;
    default: return 0;
  }
}

}  // namespace

bool takes_mmd(gguf::TensorType type, int64_t n_tok, int64_t n_in) {
  // COHORT_MMD=1: every count from 2; 0: none.
  static const int forced = [] {
    const char* v = std::getenv("COHORT_MMD");
    return v == nullptr ? -1 : std::strcmp(v, "1") == 0 ? 1 : std::strcmp(v, "0") == 0 ? 0 : -1;
  }();
  const int64_t min = forced == 1 ? 2 : forced == 0 ? 0 : mmd_min_tokens(type);
  return min > 0 && can_mmd(type, n_in) && n_tok >= min && n_tok <= kMmdMaxTokens;
}

int mmd_split(int64_t groups, int64_t n_steps, std::span<const int> resident) {
  const int64_t most = std::min<int64_t>({n_steps, kernels::kMmdMaxSplit, static_cast<int64_t>(resident.size())});
  int best = 1;
  int64_t best_steps = INT64_MAX;
  for (int s = 1; s <= most; ++s) {
    const int64_t r = resident[static_cast<size_t>(s - 1)];
    if (r <= 0) continue;
    const int64_t steps = (std::max<int64_t>(groups, 1) + r - 1) / r * ((n_steps + s - 1) / s);
    if (steps < best_steps) {
      best = s;
      best_steps = steps;
    }
  }
  return best;
}

namespace {

// resident[s - 1] for `type` at n_tok tokens on the current device, queried
// once per device, type and kernel (the tile count decides the kernel's
// shared memory).
std::span<const int> resident_table(const kernels::MmdType& t, int64_t n_tok) {
  using Table = std::array<int, kernels::kMmdMaxSplit>;
  static std::mutex mutex;
  static std::map<std::tuple<int, kernels::MmdClusters, int64_t>, Table> tables;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const auto key = std::make_tuple(device, t.clusters, (n_tok + 15) / 16);
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = tables.find(key);
  if (it == tables.end()) {
    Table table{};
    for (int s = 1; s <= kernels::kMmdMaxSplit; ++s) {
      table[static_cast<size_t>(s - 1)] = t.clusters(static_cast<int>(std::min(n_tok, kMmdMaxTokens)), s);
    }
    it = tables.emplace(key, table).first;
  }
  return it->second;
}

}  // namespace

namespace {
std::atomic<int> forced_split{0};
}  // namespace

void set_mmd_split(int split) { forced_split = std::clamp(split, 0, kernels::kMmdMaxSplit); }

int mmd_resident_clusters(gguf::TensorType type, int64_t n_tok, int split) {
  const kernels::MmdType t = kernels::mmd_type(type);
  if (t.clusters == nullptr) fail("cuda: mmd with weights of type {} is not supported", gguf::type_name(type));
  return t.clusters(static_cast<int>(std::clamp<int64_t>(n_tok, 1, kMmdMaxTokens)), split);
}

void mmd_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const __nv_bfloat16* x, OutType out,
               int64_t n_tok, int64_t n_in, cudaStream_t stream) {
  const kernels::MmdType t = kernels::mmd_type(type);
  if (t.run == nullptr) fail("cuda: mmd with weights of type {} is not supported", gguf::type_name(type));
  check_q8_parts(type, parts, x, out, n_tok, n_in, "mmd");
  if (n_in % t.step_elems != 0) {
    fail("cuda: mmd n_in {} with weights of type {} is not a multiple of {}", n_in, gguf::type_name(type),
         t.step_elems);
  }
  if (n_in > INT32_MAX / kMmdMaxTokens) fail("cuda: mmd n_in {} is too large for 32-bit offsets", n_in);
  const size_t y_size = out == OutType::f32 ? 4 : 2;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMmdMaxTokens) {
    const kernels::MatvecParts rows = kernels::parts_from(parts, t0, y_size);
    if (rows.n == 0) return;  // every part has n_out == 0
    const auto n = static_cast<int>(std::min(kMmdMaxTokens, n_tok - t0));
    const int forced = forced_split;
    const int split =
        forced > 0 ? forced : mmd_split(rows.groups(kernels::kMmdBlockRows), n_in / t.step_elems, resident_table(t, n));
    t.run(rows, x + t0 * n_in, out == OutType::f32, n, n_in, split, stream);
  }
}

void mmd(gguf::TensorType type, const void* w, const __nv_bfloat16* x, void* y, OutType out, int64_t n_tok,
         int64_t n_in, int64_t n_out, cudaStream_t stream) {
  const MatvecPart part{w, y, n_out};
  mmd_parts(type, {&part, 1}, x, out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda
