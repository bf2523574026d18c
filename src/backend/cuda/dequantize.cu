// One thread per output element. Every product and sum is rounded on its own
// (__fmul_rn / __fadd_rn / __fsub_rn, never contracted to an FMA), in the
// order of quant/dequantize.cpp, so results equal the CPU's bit for bit.
#include "backend/cuda/dequantize_kernels.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>

#include "backend/cuda/cuda_check.h"
#include "quant/blocks.h"

namespace cohort::cuda::kernels {
namespace {

using gguf::TensorType;
using quant::kQK;
using quant::kQKK;

__device__ float half_bits(uint16_t h) { return __half2float(__ushort_as_half(h)); }

struct DecodeF32 {
  __device__ float operator()(const void* src, int64_t i) const {
    return static_cast<const float*>(src)[i];
  }
};

struct DecodeF16 {
  __device__ float operator()(const void* src, int64_t i) const {
    return half_bits(static_cast<const uint16_t*>(src)[i]);
  }
};

struct DecodeBF16 {
  __device__ float operator()(const void* src, int64_t i) const {
    return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(src)[i]) << 16);
  }
};

struct DecodeQ8_0 {
  __device__ float operator()(const void* src, int64_t i) const {
    const auto& b = static_cast<const quant::BlockQ8_0*>(src)[i / kQK];
    return __fmul_rn(static_cast<float>(b.qs[i % kQK]), half_bits(b.d));
  }
};

// Element j of a 32-element block of packed nibbles: low nibbles first.
__device__ int nibble(const uint8_t* qs, int j) {
  return j < kQK / 2 ? (qs[j] & 0xF) : (qs[j - kQK / 2] >> 4);
}

struct DecodeQ4_0 {
  __device__ float operator()(const void* src, int64_t i) const {
    const auto& b = static_cast<const quant::BlockQ4_0*>(src)[i / kQK];
    return __fmul_rn(half_bits(b.d), static_cast<float>(nibble(b.qs, static_cast<int>(i % kQK)) - 8));
  }
};

struct DecodeQ4_1 {
  __device__ float operator()(const void* src, int64_t i) const {
    const auto& b = static_cast<const quant::BlockQ4_1*>(src)[i / kQK];
    const float q = static_cast<float>(nibble(b.qs, static_cast<int>(i % kQK)));
    return __fadd_rn(__fmul_rn(half_bits(b.d), q), half_bits(b.m));
  }
};

// (d * sc) * q - (dmin * m) for element r of a Q4_K/Q5_K super-block whose
// 4-bit part is `low` and fifth bit `high`.
template <typename Block>
__device__ float k_value(const Block& b, int r, int high) {
  const int j = r / 32;
  uint8_t sc = 0, m = 0;
  quant::unpack_scale_min(b.scales, j, sc, m);
  const int low = (b.qs[32 * (j / 2) + r % 32] >> (4 * (j % 2))) & 0xF;
  const float dl = __fmul_rn(half_bits(b.d), static_cast<float>(sc));
  const float ml = __fmul_rn(half_bits(b.dmin), static_cast<float>(m));
  return __fsub_rn(__fmul_rn(dl, static_cast<float>(low | (high << 4))), ml);
}

struct DecodeQ4_K {
  __device__ float operator()(const void* src, int64_t i) const {
    const auto& b = static_cast<const quant::BlockQ4_K*>(src)[i / kQKK];
    return k_value(b, static_cast<int>(i % kQKK), 0);
  }
};

struct DecodeQ5_K {
  __device__ float operator()(const void* src, int64_t i) const {
    const auto& b = static_cast<const quant::BlockQ5_K*>(src)[i / kQKK];
    const int r = static_cast<int>(i % kQKK);
    return k_value(b, r, (b.qh[r % 32] >> (r / 32)) & 1);
  }
};

struct DecodeQ6_K {
  __device__ float operator()(const void* src, int64_t i) const {
    const auto& b = static_cast<const quant::BlockQ6_K*>(src)[i / kQKK];
    const int e = static_cast<int>(i % kQKK);
    const int h = e / 128, r = e % 128;
    const int lo = (b.ql[64 * h + r % 64] >> (4 * (r / 64))) & 0xF;
    const int hi = (b.qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
    const float dl = __fmul_rn(half_bits(b.d), static_cast<float>(b.scales[e / 16]));
    return __fmul_rn(dl, static_cast<float>((lo | (hi << 4)) - 32));
  }
};

__device__ void store(float* dst, int64_t i, float v) { dst[i] = v; }
__device__ void store(__nv_bfloat16* dst, int64_t i, float v) { dst[i] = __float2bfloat16_rn(v); }

template <typename Decode, typename Out>
__global__ void dequantize_kernel(const void* src, Out* dst, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    store(dst, i, Decode{}(src, i));
  }
}

// Elements [8 i8, 8 i8 + 8) of a tensor: 8 consecutive elements lie in one
// quantization block (every block size is 1 or a multiple of 32), so the
// block's scales are found and loaded once for them. The arithmetic is that
// of the one-element decoders above, so the values are the same bits.
template <typename Decode>
struct Decode8 {
  __device__ void operator()(const void* src, int64_t i8, float* v) const {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = Decode{}(src, 8 * i8 + k);
  }
};

template <>
struct Decode8<DecodeQ8_0> {
  __device__ void operator()(const void* src, int64_t i8, float* v) const {
    const auto& b = static_cast<const quant::BlockQ8_0*>(src)[i8 / 4];
    const float d = half_bits(b.d);
    const int r0 = 8 * static_cast<int>(i8 % 4);
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __fmul_rn(static_cast<float>(b.qs[r0 + k]), d);
  }
};

// The 8 nibbles of elements [r0, r0 + 8) of a 32-element block (r0 % 8 == 0).
__device__ void nibbles8(const uint8_t* qs, int r0, int* q) {
  const int shift = r0 < kQK / 2 ? 0 : 4, base = r0 % (kQK / 2);
#pragma unroll
  for (int k = 0; k < 8; ++k) q[k] = (qs[base + k] >> shift) & 0xF;
}

template <>
struct Decode8<DecodeQ4_0> {
  __device__ void operator()(const void* src, int64_t i8, float* v) const {
    const auto& b = static_cast<const quant::BlockQ4_0*>(src)[i8 / 4];
    const float d = half_bits(b.d);
    int q[8];
    nibbles8(b.qs, 8 * static_cast<int>(i8 % 4), q);
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __fmul_rn(d, static_cast<float>(q[k] - 8));
  }
};

template <>
struct Decode8<DecodeQ4_1> {
  __device__ void operator()(const void* src, int64_t i8, float* v) const {
    const auto& b = static_cast<const quant::BlockQ4_1*>(src)[i8 / 4];
    const float d = half_bits(b.d), m = half_bits(b.m);
    int q[8];
    nibbles8(b.qs, 8 * static_cast<int>(i8 % 4), q);
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __fadd_rn(__fmul_rn(d, static_cast<float>(q[k])), m);
  }
};

// Q4_K and Q5_K: sub-block j's scale and min once, then 8 values.
template <typename Block, bool kFifthBit>
__device__ void k_values8(const Block& b, int r0, float* v) {
  const int j = r0 / 32;
  uint8_t sc = 0, m = 0;
  quant::unpack_scale_min(b.scales, j, sc, m);
  const float dl = __fmul_rn(half_bits(b.d), static_cast<float>(sc));
  const float ml = __fmul_rn(half_bits(b.dmin), static_cast<float>(m));
  const uint8_t* qs = b.qs + 32 * (j / 2) + r0 % 32;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    int q = (qs[k] >> (4 * (j % 2))) & 0xF;
    if constexpr (kFifthBit) q |= ((b.qh[r0 % 32 + k] >> j) & 1) << 4;
    v[k] = __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
  }
}

template <>
struct Decode8<DecodeQ4_K> {
  __device__ void operator()(const void* src, int64_t i8, float* v) const {
    k_values8<quant::BlockQ4_K, false>(static_cast<const quant::BlockQ4_K*>(src)[i8 / 32],
                                       8 * static_cast<int>(i8 % 32), v);
  }
};

template <>
struct Decode8<DecodeQ5_K> {
  __device__ void operator()(const void* src, int64_t i8, float* v) const {
    k_values8<quant::BlockQ5_K, true>(static_cast<const quant::BlockQ5_K*>(src)[i8 / 32],
                                      8 * static_cast<int>(i8 % 32), v);
  }
};

template <>
struct Decode8<DecodeQ6_K> {
  __device__ void operator()(const void* src, int64_t i8, float* v) const {
    const auto& b = static_cast<const quant::BlockQ6_K*>(src)[i8 / 32];
    const int e0 = 8 * static_cast<int>(i8 % 32), h = e0 / 128, r0 = e0 % 128;
    const float dl = __fmul_rn(half_bits(b.d), static_cast<float>(b.scales[e0 / 16]));
    const uint8_t* ql = b.ql + 64 * h + r0 % 64;
    const uint8_t* qh = b.qh + 32 * h + r0 % 32;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int lo = (ql[k] >> (4 * (r0 / 64))) & 0xF;
      const int hi = (qh[k] >> (2 * (r0 / 32))) & 3;
      v[k] = __fmul_rn(dl, static_cast<float>((lo | (hi << 4)) - 32));
    }
  }
};

// BF16 output, 8 consecutive elements per thread and one 16-byte store.
template <typename Decode>
__global__ void dequantize8_kernel(const void* src, uint4* dst, int64_t n8) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n8; i += stride) {
    float f[8];
    Decode8<Decode>{}(src, i, f);
    __align__(16) __nv_bfloat16 v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __float2bfloat16_rn(f[k]);
    dst[i] = *reinterpret_cast<const uint4*>(v);
  }
}

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 16;  // grid-stride beyond this

template <typename Decode, typename Out>
void launch(const void* src, Out* dst, int64_t n, cudaStream_t stream) {
  if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    if (n % 8 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
      const int64_t n8 = n / 8;
      const auto blocks = static_cast<unsigned>(std::min<int64_t>((n8 + kThreads - 1) / kThreads, kMaxBlocks));
      dequantize8_kernel<Decode><<<blocks, kThreads, 0, stream>>>(src, reinterpret_cast<uint4*>(dst), n8);
      CUDA_CHECK(cudaGetLastError());
      return;
    }
  }
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
  dequantize_kernel<Decode><<<blocks, kThreads, 0, stream>>>(src, dst, n);
  CUDA_CHECK(cudaGetLastError());
}

// One grid row per id: out row r = row ids[r] of the table, as BF16.
template <typename Decode>
__global__ void get_rows_kernel(const uint8_t* table, size_t row_bytes, const int32_t* ids, int64_t n_cols,
                                __nv_bfloat16* out, int64_t out_stride) {
  const int64_t r = blockIdx.y;
  const uint8_t* src = table + static_cast<size_t>(ids[r]) * row_bytes;
  __nv_bfloat16* dst = out + r * out_stride;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < n_cols; c += stride) {
    dst[c] = __float2bfloat16_rn(Decode{}(src, c));
  }
}

template <typename Decode>
void launch_rows(const void* table, size_t row_bytes, const int32_t* ids, int64_t n_ids, int64_t n_cols,
                 __nv_bfloat16* out, int64_t out_stride, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((n_cols + kThreads - 1) / kThreads, 64)),
                  static_cast<unsigned>(n_ids));
  get_rows_kernel<Decode><<<grid, kThreads, 0, stream>>>(static_cast<const uint8_t*>(table), row_bytes, ids,
                                                        n_cols, out, out_stride);
  CUDA_CHECK(cudaGetLastError());
}

// The launchers of one decoder.
template <typename Decode>
constexpr TypeLaunchers launchers() {
  return {launch<Decode, float>, launch<Decode, __nv_bfloat16>, launch_rows<Decode>};
}

}  // namespace

TypeLaunchers type_launchers(TensorType type) {
  switch (type) {
    case TensorType::F32: return launchers<DecodeF32>();
    case TensorType::F16: return launchers<DecodeF16>();
    case TensorType::BF16: return launchers<DecodeBF16>();
    case TensorType::Q8_0: return launchers<DecodeQ8_0>();
    case TensorType::Q4_0: return launchers<DecodeQ4_0>();
    case TensorType::Q4_1: return launchers<DecodeQ4_1>();
    case TensorType::Q4_K: return launchers<DecodeQ4_K>();
    case TensorType::Q5_K: return launchers<DecodeQ5_K>();
    case TensorType::Q6_K: return launchers<DecodeQ6_K>();
    default: return {};
  }
}

}  // namespace cohort::cuda::kernels
