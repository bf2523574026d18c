#include "backend/cuda/matvec.h"

#include <algorithm>
#include <string_view>

#include "backend/cuda/matvec_kernels.h"
#include "common/error.h"

namespace cohort::cuda {
namespace kernels {

MatvecLauncher matvec_launcher(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::F32: return matvec_f32;
    case TensorType::F16: return matvec_f16;
    case TensorType::BF16: return matvec_bf16;
    case TensorType::Q8_0: return matvec_q8_0;
    case TensorType::Q4_0: return matvec_q4_0;
    case TensorType::Q4_1: return matvec_q4_1;
    case TensorType::Q4_K: return matvec_q4_k;
    case TensorType::Q5_K: return matvec_q5_k;
    case TensorType::Q6_K: return matvec_q6_k;
    default: return nullptr;
  }
}

}  // namespace kernels

namespace {

// The alignment the decoder of `type` loads its rows with (matvec_*.cu).
uintptr_t weight_alignment(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_K:
    case TensorType::Q5_K: return 16;
    case TensorType::Q4_1: return 4;
    default: return 2;
  }
}

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

bool can_matvec(gguf::TensorType type) { return kernels::matvec_launcher(type) != nullptr; }

void matvec(gguf::TensorType type, const void* w, const __nv_bfloat16* x, void* y, OutType out,
            int64_t n_tok, int64_t n_in, int64_t n_out, cudaStream_t stream) {
  const MatvecPart part{w, y, n_out};
  matvec_parts(type, {&part, 1}, x, out, n_tok, n_in, stream);
}

void matvec_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const __nv_bfloat16* x, OutType out,
                  int64_t n_tok, int64_t n_in, cudaStream_t stream) {
  const kernels::MatvecLauncher run = kernels::matvec_launcher(type);
  const std::string_view name = gguf::type_name(type);
  if (run == nullptr) fail("cuda: matvec with weights of type {} is not supported", name);
  const int64_t block = gguf::traits(type).block_size;
  if (n_in <= 0 || n_in % 16 != 0 || n_in % block != 0) {
    fail("cuda: matvec n_in {} with weights of type {} is not a positive multiple of 16 and of {}",
         n_in, name, block);
  }
  if (parts.empty() || parts.size() > kMatvecMaxParts) fail("cuda: matvec of {} parts (1 to {})", parts.size(), kMatvecMaxParts);
  if (n_tok < 0) fail("cuda: matvec with negative n_tok {}", n_tok);
  const size_t y_size = out == OutType::f32 ? 4 : 2;
  for (const MatvecPart& p : parts) {
    if (p.n_out < 0) fail("cuda: matvec with negative n_out {}", p.n_out);
    if (!aligned(x, 16) || !aligned(p.w, weight_alignment(type)) || !aligned(p.y, y_size)) {
      fail("cuda: matvec pointers misaligned (x needs 16 bytes, {} weights {}, y {})", name,
           weight_alignment(type), y_size);
    }
  }
  if (n_tok == 0) return;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kernels::kMatvecMaxTokens) {
    const kernels::MatvecParts rows = kernels::parts_from(parts, t0, y_size);
    if (rows.n == 0) return;  // every part has n_out == 0
    const auto n = static_cast<int>(std::min<int64_t>(kernels::kMatvecMaxTokens, n_tok - t0));
    run(rows, x + t0 * n_in, out == OutType::f32, n, n_in, stream);
  }
}

}  // namespace cohort::cuda
