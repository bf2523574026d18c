// Matvec decoders of the unquantized weight types: F32, F16, BF16. A unit is
// 16 consecutive columns (64 or 32 bytes, read with 16-byte loads).
#include "backend/cuda/matvec_impl.cuh"

namespace cohort::cuda::kernels {
namespace {

using matvec_impl::kRunLen;

struct F32 {
  static constexpr int kUnitElems = 16, kRuns = 1, kBlockElems = 1, kBlockBytes = 4;
  struct Unit {
    float4 v[4];
  };
  static __device__ Unit load(const uint8_t* row, int64_t u) {
    const auto* p = reinterpret_cast<const float4*>(row) + 4 * u;
    return {{__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3)}};
  }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int, float (&w)[kRunLen]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w[4 * i] = unit.v[i].x;
      w[4 * i + 1] = unit.v[i].y;
      w[4 * i + 2] = unit.v[i].z;
      w[4 * i + 3] = unit.v[i].w;
    }
    return kUnitElems * u;
  }
};

// 16 two-byte values in two uint4.
struct Pairs {
  uint4 v[2];
};

__device__ Pairs load_pairs(const uint8_t* row, int64_t u) {
  const auto* p = reinterpret_cast<const uint4*>(row) + 2 * u;
  return {{__ldg(p), __ldg(p + 1)}};
}

struct F16 {
  static constexpr int kUnitElems = 16, kRuns = 1, kBlockElems = 1, kBlockBytes = 2;
  using Unit = Pairs;
  static __device__ Unit load(const uint8_t* row, int64_t u) { return load_pairs(row, u); }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int, float (&w)[kRunLen]) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const uint32_t v[4] = {unit.v[i].x, unit.v[i].y, unit.v[i].z, unit.v[i].w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        w[8 * i + 2 * k] = matvec_impl::half_bits(v[k]);
        w[8 * i + 2 * k + 1] = matvec_impl::half_bits(v[k] >> 16);
      }
    }
    return kUnitElems * u;
  }
};

struct BF16 {
  static constexpr int kUnitElems = 16, kRuns = 1, kBlockElems = 1, kBlockBytes = 2;
  using Unit = Pairs;
  static __device__ Unit load(const uint8_t* row, int64_t u) { return load_pairs(row, u); }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int, float (&w)[kRunLen]) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const uint32_t v[4] = {unit.v[i].x, unit.v[i].y, unit.v[i].z, unit.v[i].w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        w[8 * i + 2 * k] = __uint_as_float(v[k] << 16);
        w[8 * i + 2 * k + 1] = __uint_as_float(v[k] & 0xFFFF0000u);
      }
    }
    return kUnitElems * u;
  }
};

}  // namespace

void matvec_f32(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<F32>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}
void matvec_f16(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<F16>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}
void matvec_bf16(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                 int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<BF16>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
