// Matvec decoders of Q4_0 (18-byte blocks) and Q4_1 (20-byte blocks): a unit
// is one block, two runs of 16 columns (low nibbles = columns 0-15, high
// nibbles = 16-31).
#include "backend/cuda/matvec_impl.cuh"

#include "quant/blocks.h"

namespace cohort::cuda::kernels {
namespace {

using matvec_impl::kRunLen;

// Nibbles of run r (0 low, 1 high) as bytes.
__device__ __forceinline__ void nibbles(const uint32_t (&q)[4], int r, uint32_t (&out)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) out[i] = (q[i] >> (4 * r)) & 0x0F0F0F0Fu;
}

struct Q4_0 {
  static constexpr int kUnitElems = quant::kQK, kRuns = 2;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ4_0);
  struct Unit {
    uint32_t q[4];
    float d;
  };
  static __device__ Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + u * kBlockBytes;  // 2-byte aligned
    Unit unit;
#pragma unroll
    for (int i = 0; i < 4; ++i) unit.q[i] = matvec_impl::ldg_u32_a2(block + 2 + 4 * i);
    unit.d = matvec_impl::ldg_half(block);
    return unit;
  }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    uint32_t q[4];
    nibbles(unit.q, r, q);
    matvec_impl::bytes_fma(q, 8.0f, unit.d, 0.0f, w);  // d * (q - 8)
    return kUnitElems * u + kRunLen * r;
  }
};

struct Q4_1 {
  static constexpr int kUnitElems = quant::kQK, kRuns = 2;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ4_1);
  struct Unit {
    uint4 q;
    uint32_t dm;  // d | m << 16
  };
  static __device__ Unit load(const uint8_t* row, int64_t u) {
    // 20-byte blocks in a 4-byte-aligned row: d, m and qs are 4-byte aligned.
    const auto* block = reinterpret_cast<const uint32_t*>(row + u * kBlockBytes);
    return {make_uint4(__ldg(block + 1), __ldg(block + 2), __ldg(block + 3), __ldg(block + 4)),
            __ldg(block)};
  }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    const uint32_t raw[4] = {unit.q.x, unit.q.y, unit.q.z, unit.q.w};
    uint32_t q[4];
    nibbles(raw, r, q);
    // d * q + m
    matvec_impl::bytes_fma(q, 0.0f, matvec_impl::half_bits(unit.dm), matvec_impl::half_bits(unit.dm >> 16), w);
    return kUnitElems * u + kRunLen * r;
  }
};

}  // namespace

void matvec_q4_0(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                 int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<Q4_0>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}
void matvec_q4_1(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                 int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<Q4_1>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
