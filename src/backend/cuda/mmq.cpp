#include "backend/cuda/mmq.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/mmq_kernels.h"
#include "common/error.h"

namespace cohort::cuda {
namespace kernels {

MmqType mmq_type(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q8_0: return {mmq_q8_0, 128};
    case TensorType::Q4_0: return {mmq_q4_0, 128};
    case TensorType::Q4_1: return {mmq_q4_1, 128};
    case TensorType::Q4_K: return {mmq_q4_k, 256};
    case TensorType::Q5_K: return {mmq_q5_k, 256};
    case TensorType::Q6_K: return {mmq_q6_k, 256};
    default: return {};
  }
}

namespace {

// Parsed from an environment variable: a positive integer, or 0 when unset or not one.
int64_t env_count(const char* name) {
  const char* v = std::getenv(name);
  int64_t parsed = 0;
  if (v == nullptr || std::from_chars(v, v + std::strlen(v), parsed).ec != std::errc{} || parsed < 1) return 0;
  return parsed;
}

std::atomic<MmqStaging> staging{[] {
  const char* v = std::getenv("COHORT_MMQ_STAGE");
  if (v != nullptr && std::strcmp(v, "0") == 0) return MmqStaging::never;
  if (v != nullptr && std::strcmp(v, "1") == 0) return MmqStaging::always;
  return MmqStaging::measured;
}()};

}  // namespace

bool mmq_staged(int nt, unsigned measured) {
  switch (staging.load(std::memory_order_relaxed)) {
    case MmqStaging::never: return false;
    case MmqStaging::always: return true;
    case MmqStaging::measured: break;
  }
  return ((measured >> (nt - 1)) & 1u) != 0;
}

}  // namespace kernels

MmqStaging mmq_staging() { return kernels::staging.load(std::memory_order_relaxed); }
void set_mmq_staging(MmqStaging s) { kernels::staging.store(s, std::memory_order_relaxed); }

static_assert(kMmqMaxTokens == kernels::kMmqMaxTokens);

MmqRange mmq_range(gguf::TensorType type, int64_t n_in) {
  if (!can_mmq(type, n_in)) return {};
  static const int64_t min_override = kernels::env_count("COHORT_MMQ_MIN_TOKENS");
  static const int64_t max_override = std::min(kernels::env_count("COHORT_MMQ_MAX_TOKENS"), kMmqMaxRoutedTokens);
  using gguf::TensorType;
  const bool k_quant = type == TensorType::Q4_K || type == TensorType::Q5_K || type == TensorType::Q6_K;
  const int64_t max = type == TensorType::Q4_1 ? 16 : 32;
  return {min_override > 0 ? min_override : k_quant ? 5 : 9, max_override > 0 ? max_override : max};
}

bool can_mmq(gguf::TensorType type, int64_t n_in) {
  const kernels::MmqType t = kernels::mmq_type(type);
  return t.run != nullptr && n_in > 0 && n_in % t.step_elems == 0;
}

void mmq_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const void* xq, OutType out, int64_t n_tok,
               int64_t n_in, cudaStream_t stream) {
  const kernels::MmqType t = kernels::mmq_type(type);
  if (t.run == nullptr) fail("cuda: mmq with weights of type {} is not supported", gguf::type_name(type));
  check_q8_parts(type, parts, xq, out, n_tok, n_in, "mmq");
  if (n_in % t.step_elems != 0) {
    fail("cuda: mmq n_in {} with weights of type {} is not a multiple of {}", n_in, gguf::type_name(type),
         t.step_elems);
  }
  if (n_in > INT32_MAX / kMmqMaxTokens) fail("cuda: mmq n_in {} is too large for 32-bit offsets", n_in);
  const size_t y_size = out == OutType::f32 ? 4 : 2;
  const auto* q = static_cast<const int8_t*>(xq);
  const auto* ds = reinterpret_cast<const float2*>(q + n_tok * n_in);
  const int64_t nb = n_in / 32;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMmqMaxTokens) {
    const kernels::MatvecParts rows = kernels::parts_from(parts, t0, y_size);
    if (rows.n == 0) return;  // every part has n_out == 0
    const auto n = static_cast<int>(std::min(kMmqMaxTokens, n_tok - t0));
    t.run(rows, q + t0 * n_in, ds + t0 * nb, out == OutType::f32, n, n_in, stream);
  }
}

void mmq(gguf::TensorType type, const void* w, const void* xq, void* y, OutType out, int64_t n_tok, int64_t n_in,
         int64_t n_out, cudaStream_t stream) {
  const MatvecPart part{w, y, n_out};
  mmq_parts(type, {&part, 1}, xq, out, n_tok, n_in, stream);
}

}  // namespace cohort::cuda
