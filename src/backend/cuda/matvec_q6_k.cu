// Matvec decoder of Q6_K (210-byte super-blocks, 2-byte aligned). Unit
// j (0..3) of a block is half h = j / 2, quarter k = j % 2: the 64 columns
// 128h + 32q + 16k + i (q < 4 runs, i < 16). Their bits (blocks.h):
//   low 4:  ql[64h + 16k + i] (runs 0, 2: low, high nibble) and
//           ql[64h + 32 + 16k + i] (runs 1, 3: low, high nibble)
//   high 2: bits 2q of qh[32h + 16k + i]
//   scale:  scales[8h + k + 2q], times d.
#include "backend/cuda/matvec_impl.cuh"

#include "quant/blocks.h"

namespace cohort::cuda::kernels {
namespace {

using matvec_impl::kRunLen;
using matvec_impl::ldg_u32_a2;

struct Q6_K {
  static constexpr int kUnitElems = 64, kRuns = 4;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = sizeof(quant::BlockQ6_K);
  static constexpr int kUnitsPerBlock = kBlockElems / kUnitElems;
  static constexpr int kQh = 128, kScales = 192, kD = 208;  // byte offsets in the block
  struct Unit {
    uint32_t ql0[4], ql1[4], qh[4];
    uint32_t sc[2];  // scales[8h .. 8h + 8)
    float d;
  };
  static __device__ Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / kUnitsPerBlock) * kBlockBytes;
    const int j = static_cast<int>(u % kUnitsPerBlock), h = j / 2, k = j % 2;
    Unit unit;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      unit.ql0[i] = ldg_u32_a2(block + 64 * h + 16 * k + 4 * i);
      unit.ql1[i] = ldg_u32_a2(block + 64 * h + 32 + 16 * k + 4 * i);
      unit.qh[i] = ldg_u32_a2(block + kQh + 32 * h + 16 * k + 4 * i);
    }
    unit.sc[0] = ldg_u32_a2(block + kScales + 8 * h);
    unit.sc[1] = ldg_u32_a2(block + kScales + 8 * h + 4);
    unit.d = matvec_impl::ldg_half(block + kD);
    return unit;
  }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int q, float (&w)[kRunLen]) {
    const int j = static_cast<int>(u % kUnitsPerBlock), h = j / 2, k = j % 2;
    const int s = k + 2 * q;  // 0..7 within scales[8h ..)
    const auto scale = static_cast<int8_t>((unit.sc[s / 4] >> (8 * (s % 4))) & 0xFFu);
    const float dl = unit.d * static_cast<float>(scale);
    const uint32_t(&ql)[4] = q % 2 == 0 ? unit.ql0 : unit.ql1;
    uint32_t v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[i] = ((ql[i] >> (4 * (q / 2))) & 0x0F0F0F0Fu) | (((unit.qh[i] >> (2 * q)) & 0x03030303u) << 4);
    }
    matvec_impl::bytes_fma(v, 32.0f, dl, 0.0f, w);  // dl * (q6 - 32)
    return (u / kUnitsPerBlock) * kBlockElems + 128 * h + 32 * q + 16 * k;
  }
};

}  // namespace

void matvec_q6_k(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                 int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<Q6_K>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
