// Matvec decoders of Q4_K (144-byte super-blocks) and Q5_K (176 bytes), both
// 16-byte aligned in a 16-byte-aligned row. A unit is 16 bytes of qs (one
// 16-byte load) plus the block's 16-byte header (d, dmin, packed scales):
// unit j (0..7) of a block covers qs[32c + 16s, +16) with c = j / 2,
// s = j % 2, i.e. columns 64c + 16s + i (low nibbles, sub-block 2c: run 0)
// and 64c + 32 + 16s + i (high nibbles, sub-block 2c + 1: run 1), i < 16.
#include "backend/cuda/matvec_impl.cuh"

#include "quant/blocks.h"

namespace cohort::cuda::kernels {
namespace {

using matvec_impl::kRunLen;

__device__ __forceinline__ uint32_t byte_at(uint32_t word, int k) { return (word >> (8 * k)) & 0xFFu; }

// Scale and min of sub-block j (run-time 0..7) from the header words; the
// packing of quant::unpack_scale_min, with shifts instead of an indexed
// array (which would live in local memory).
__device__ __forceinline__ void scale_min(const uint4& head, int j, float& dl, float& ml) {
  uint32_t sc, m;
  if (j < 4) {
    sc = byte_at(head.y, j) & 63u;
    m = byte_at(head.z, j) & 63u;
  } else {
    const int k = j - 4;
    sc = (byte_at(head.w, k) & 0xFu) | ((byte_at(head.y, k) >> 6) << 4);
    m = (byte_at(head.w, k) >> 4) | ((byte_at(head.z, k) >> 6) << 4);
  }
  dl = matvec_impl::half_bits(head.x) * static_cast<float>(sc);
  ml = matvec_impl::half_bits(head.x >> 16) * static_cast<float>(m);
}

__device__ __forceinline__ void split(const uint4& v, uint32_t (&out)[4]) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

template <int kBytes>
struct KUnit {
  static constexpr int kUnitElems = 32, kRuns = 2;
  static constexpr int kBlockElems = quant::kQKK, kBlockBytes = kBytes;
  static constexpr int kUnitsPerBlock = kBlockElems / kUnitElems;

  static __device__ int64_t column(int64_t u, int r) {
    const int j = static_cast<int>(u % kUnitsPerBlock);
    return (u / kUnitsPerBlock) * kBlockElems + 64 * (j / 2) + 32 * r + 16 * (j % 2);
  }
};

struct Q4_K : KUnit<sizeof(quant::BlockQ4_K)> {
  struct Unit {
    uint4 head, qs;
  };
  static __device__ Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / kUnitsPerBlock) * kBlockBytes;
    const int j = static_cast<int>(u % kUnitsPerBlock);
    const auto* qs = reinterpret_cast<const uint4*>(block + 16 + 32 * (j / 2) + 16 * (j % 2));
    return {__ldg(reinterpret_cast<const uint4*>(block)), __ldg(qs)};
  }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    const int j = static_cast<int>(u % kUnitsPerBlock);
    float dl, ml;
    scale_min(unit.head, 2 * (j / 2) + r, dl, ml);
    uint32_t raw[4], q[4];
    split(unit.qs, raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) q[i] = (raw[i] >> (4 * r)) & 0x0F0F0F0Fu;
    matvec_impl::bytes_fma(q, 0.0f, dl, -ml, w);  // dl * q - ml
    return column(u, r);
  }
};

// As Q4_K with the fifth bits: bit (2c + r) of qh[16s + i] for column i of
// the unit's run r; qh sits at bytes 16..48, qs at 48..176.
struct Q5_K : KUnit<sizeof(quant::BlockQ5_K)> {
  struct Unit {
    uint4 head, qh, qs;
  };
  static __device__ Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* block = row + (u / kUnitsPerBlock) * kBlockBytes;
    const int j = static_cast<int>(u % kUnitsPerBlock);
    const auto* qh = reinterpret_cast<const uint4*>(block + 16 + 16 * (j % 2));
    const auto* qs = reinterpret_cast<const uint4*>(block + 48 + 32 * (j / 2) + 16 * (j % 2));
    return {__ldg(reinterpret_cast<const uint4*>(block)), __ldg(qh), __ldg(qs)};
  }
  static __device__ int64_t decode(const Unit& unit, int64_t u, int r, float (&w)[kRunLen]) {
    const int j = static_cast<int>(u % kUnitsPerBlock);
    const int sub = 2 * (j / 2) + r;
    float dl, ml;
    scale_min(unit.head, sub, dl, ml);
    uint32_t raw[4], high[4], q[4];
    split(unit.qs, raw);
    split(unit.qh, high);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q[i] = ((raw[i] >> (4 * r)) & 0x0F0F0F0Fu) | (((high[i] >> sub) & 0x01010101u) << 4);
    }
    matvec_impl::bytes_fma(q, 0.0f, dl, -ml, w);
    return column(u, r);
  }
};

}  // namespace

void matvec_q4_k(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                 int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<Q4_K>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}
void matvec_q5_k(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
                 int64_t n_out, cudaStream_t stream) {
  matvec_impl::launch<Q5_K>(w, x, y, f32_out, n_tok, n_in, n_out, stream);
}

}  // namespace cohort::cuda::kernels
