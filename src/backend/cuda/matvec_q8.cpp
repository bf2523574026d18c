#include "backend/cuda/matvec_q8.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string_view>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/matvec_q8_decode.cuh"
#include "backend/cuda/matvec_q8_kernels.h"
#include "backend/cuda/mmq.h"
#include "common/error.h"
#include "common/half.h"

namespace cohort::cuda {
namespace kernels {

MatvecQ8Launcher matvec_q8_launcher(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q8_0: return matvec_q8_q8_0;
    case TensorType::Q4_0: return matvec_q8_q4_0;
    case TensorType::Q4_1: return matvec_q8_q4_1;
    case TensorType::Q4_K: return matvec_q8_q4_k;
    case TensorType::Q5_K: return matvec_q8_q5_k;
    case TensorType::Q6_K: return matvec_q8_q6_k;
    default: return nullptr;
  }
}

const ResidentLimits& resident_limits() {
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static std::array<ResidentLimits, kMaxDevices> limits{};  // sm_count 0: not read yet
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices) fail("cuda: device {} beyond the {} matvec_q8 supports", device, kMaxDevices);
  const std::lock_guard lock(mu);
  ResidentLimits& l = limits[static_cast<size_t>(device)];
  if (l.sm_count == 0) {
    int sms = 0, per_sm = 0, per_block = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    l.device = device;
    l.smem_per_sm = static_cast<size_t>(per_sm);
    l.smem_per_block = static_cast<size_t>(per_block);
    l.sm_count = sms;
  }
  return l;
}

}  // namespace kernels

namespace {

constexpr int64_t kQBlock = kernels::matvec_q8::kQBlock;

// The alignment the decoder of `type` loads its rows with (matvec_q8_decode*.cuh).
uintptr_t weight_alignment(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q4_K:
    case TensorType::Q5_K: return 16;
    case TensorType::Q4_1: return 4;
    default: return 2;
  }
}

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

void check_activation_shape(int64_t n_tok, int64_t n_in) {
  if (n_in <= 0 || n_in % kQBlock != 0) fail("cuda: q8 activations n_in {} is not a positive multiple of 32", n_in);
  if (n_tok < 0) fail("cuda: q8 activations with negative n_tok {}", n_tok);
}

}  // namespace

size_t q8_activation_bytes(int64_t n_tok, int64_t n_in) {
  check_activation_shape(n_tok, n_in);
  return static_cast<size_t>(n_tok * n_in) + static_cast<size_t>(n_tok * (n_in / kQBlock)) * sizeof(float2);
}

void quantize_activations(const __nv_bfloat16* x, int64_t n_tok, int64_t n_in, void* xq, cudaStream_t stream) {
  check_activation_shape(n_tok, n_in);
  if (n_tok == 0) return;
  if (!aligned(x, 16) || !aligned(xq, 16)) fail("cuda: quantize_activations needs 16-byte aligned x and xq");
  auto* q = static_cast<int8_t*>(xq);
  kernels::quantize_activations_q8(x, n_tok, n_in, q, reinterpret_cast<float2*>(q + n_tok * n_in), stream);
}

void quantize_activations_host(const uint16_t* x, int64_t n_tok, int64_t n_in, void* xq) {
  namespace mq = kernels::matvec_q8;
  check_activation_shape(n_tok, n_in);
  auto* q = static_cast<int8_t*>(xq);
  auto* ds = reinterpret_cast<float2*>(q + n_tok * n_in);
  for (int64_t b = 0; b < n_tok * n_in / kQBlock; ++b) {
    float v[kQBlock], amax = 0.0f;
    for (int64_t i = 0; i < kQBlock; ++i) {
      v[i] = bf16_to_f32(x[b * kQBlock + i]);
      amax = std::max(amax, std::fabs(v[i]));
    }
    const float inv = mq::block_inv(amax);
    int sum = 0;
    for (int64_t i = 0; i < kQBlock; ++i) {
      const int qi = mq::quantize_one(v[i], inv);
      q[b * kQBlock + i] = static_cast<int8_t>(qi);
      sum += qi;
    }
    const float2 d = mq::block_ds(amax, sum);
    std::memcpy(ds + b, &d, sizeof d);
  }
}

bool can_matvec_q8(gguf::TensorType type) { return kernels::matvec_q8_launcher(type) != nullptr; }

void matvec_q8(gguf::TensorType type, const void* w, const void* xq, void* y, OutType out, int64_t n_tok,
               int64_t n_in, int64_t n_out, cudaStream_t stream, Q8XSource x_source) {
  const MatvecPart part{w, y, n_out};
  matvec_q8_parts(type, {&part, 1}, xq, out, n_tok, n_in, stream, x_source);
}

void check_q8_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const void* xq, OutType out,
                    int64_t n_tok, int64_t n_in, std::string_view op) {
  const std::string_view name = gguf::type_name(type);
  const int64_t block = gguf::traits(type).block_size;
  if (n_in <= 0 || n_in % block != 0) {
    fail("cuda: {} n_in {} with weights of type {} is not a positive multiple of {}", op, n_in, name, block);
  }
  if (parts.empty() || parts.size() > kMatvecMaxParts) {
    fail("cuda: {} of {} parts (1 to {})", op, parts.size(), kMatvecMaxParts);
  }
  if (n_tok < 0) fail("cuda: {} with negative n_tok {}", op, n_tok);
  const size_t y_size = out == OutType::f32 ? 4 : 2;
  for (const MatvecPart& p : parts) {
    if (p.n_out < 0) fail("cuda: {} with negative n_out {}", op, p.n_out);
    if (!aligned(xq, 16) || !aligned(p.w, weight_alignment(type)) || !aligned(p.y, y_size)) {
      fail("cuda: {} pointers misaligned (xq needs 16 bytes, {} weights {}, y {})", op, name,
           weight_alignment(type), y_size);
    }
  }
}

void matvec_q8_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const void* xq, OutType out,
                     int64_t n_tok, int64_t n_in, cudaStream_t stream, Q8XSource x_source) {
  const kernels::MatvecQ8Launcher run = kernels::matvec_q8_launcher(type);
  if (run == nullptr) fail("cuda: matvec_q8 with weights of type {} is not supported", gguf::type_name(type));
  check_q8_parts(type, parts, xq, out, n_tok, n_in, "matvec_q8");
  if (n_tok == 0) return;
  const MmqRange mmq_tokens = mmq_range(type, n_in);
  if (x_source == Q8XSource::shared_where_it_fits && n_tok >= mmq_tokens.min && n_tok <= mmq_tokens.max) {
    return mmq_parts(type, parts, xq, out, n_tok, n_in, stream);
  }
  const size_t y_size = out == OutType::f32 ? 4 : 2;
  const auto* q = static_cast<const int8_t*>(xq);
  const auto* ds = reinterpret_cast<const float2*>(q + n_tok * n_in);
  const int64_t nb = n_in / kQBlock;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kernels::kMatvecQ8MaxTokens) {
    const kernels::MatvecParts rows = kernels::parts_from(parts, t0, y_size);
    if (rows.n == 0) return;  // every part has n_out == 0
    const auto n = static_cast<int>(std::min<int64_t>(kernels::kMatvecQ8MaxTokens, n_tok - t0));
    run(rows, q + t0 * n_in, ds + t0 * nb, out == OutType::f32, x_source == Q8XSource::global, n, n_in, stream);
  }
}

}  // namespace cohort::cuda
