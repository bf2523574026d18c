#include "backend/cuda/mmd.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/matvec_q8_kernels.h"
#include "backend/cuda/mmd_kernels.h"
#include "common/error.h"

namespace cohort::cuda {
namespace kernels {

MmdType mmd_type(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q8_0: return {mmd_q8_0, 128};
    case TensorType::Q4_0: return {mmd_q4_0, 128};
    case TensorType::Q4_1: return {mmd_q4_1, 128};
    case TensorType::Q4_K: return {mmd_q4_k, 256};
    case TensorType::Q5_K: return {mmd_q5_k, 256};
    case TensorType::Q6_K: return {mmd_q6_k, 256};
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
    case gguf::TensorType::Q4_K: return 17;
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

int mmd_split(int64_t groups, int64_t n_steps, int sms) {
  // Rounded down: one wave of blocks (a second, partial one would double the time).
  const int64_t want = 2 * int64_t{sms} / std::max<int64_t>(groups, 1);
  return static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(want, n_steps), 1, kernels::kMmdMaxSplit));
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
    const int split = mmd_split(rows.groups(kernels::kMmdBlockRows), n_in / t.step_elems,
                                kernels::resident_limits().sm_count);
    t.run(rows, x + t0 * n_in, out == OutType::f32, n, n_in, split, stream);
  }
}

void mmd(gguf::TensorType type, const void* w, const __nv_bfloat16* x, void* y, OutType out, int64_t n_tok,
         int64_t n_in, int64_t n_out, cudaStream_t stream) {
  const MatvecPart part{w, y, n_out};
  mmd_parts(type, {&part, 1}, x, out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda
