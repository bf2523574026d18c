// Matvec decoder of Q8_0 (34-byte blocks, 2-byte aligned): a unit is half a
// block, 16 int8 values read as 16-bit pairs, and the block's f16 scale.
#include "backend/cuda/matvec_impl.cuh"

#include "quant/blocks.h"

namespace cohort::cuda::kernels {
namespace {

using matvec_impl::kRunLen;

struct Q8_0 {
  static constexpr int kUnitElems = 16, kRuns = 1;
  static constexpr int kBlockElems = quant::kQK, kBlockBytes = sizeof(quant::BlockQ8_0);
  struct Unit {
    uint32_t q[4];
    float d;
  };
  static __device__ Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / 2) * kBlockBytes;
    const uint8_t* qs = block + 2 + 16 * (u % 2);
    Unit unit;
#pragma unroll
    for (int i = 0; i < 4; ++i) unit.q[i] = matvec_impl::ldg_u32_a2(qs + 4 * i);
    unit.d = matvec_impl::ldg_half(block);
    return unit;
  }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int, float (&w)[kRunLen]) {
    // int8 -> uint8 + 128 by flipping the sign bits, then bias 128 back.
    const uint32_t q[4] = {unit.q[0] ^ 0x80808080u, unit.q[1] ^ 0x80808080u, unit.q[2] ^ 0x80808080u,
                           unit.q[3] ^ 0x80808080u};
    matvec_impl::bytes_fma(q, 128.0f, unit.d, 0.0f, w);
    return kUnitElems * u;
  }
};

}  // namespace

void matvec_q8_0(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                 int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<Q8_0>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
