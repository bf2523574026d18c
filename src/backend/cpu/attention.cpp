// CpuBackend::attention: causal attention over the paged KV cache, one
// (token, query head) pair per task.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "quant/quant.h"

namespace cohort::cpu {

// One query head of one token over positions [0, n_pos) of its sequence.
// The weighted sum of V rows runs in n_lanes lanes by position: llama.cpp
// sums it as a matmul (16 lanes) over a batch, as a dot product (64) for a
// lone token. An F32 cache is read in llama.cpp's orders (the fast path's
// bits); the other types are decoded to F32 a head row at a time.
void CpuBackend::attend_head(int layer, std::span<const int32_t> table, int n_pos, const float* q,
                             int64_t kv_head, int n_lanes, float* scores, float* lanes,
                             float* out) const {
  const kv::KvCacheShape& shape = kv_.shape();
  const int bs = shape.block_size;
  const int64_t hd = head_dim_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const bool f32_k = shape.type_k == gguf::TensorType::F32;
  for (int j = 0; j < n_pos; ++j) {
    const uint8_t* k = kv_.k(layer, kv::slot_of(table, bs, j)) + kv_head * shape.k_head_bytes();
    // The fast path sums an F32 cache in the lane order of llama.cpp's F32 matmul.
    const float kq = f32_k && !exact_ ? dot_f32_wide(reinterpret_cast<const float*>(k), q, hd)
                                      : quant::dot(shape.type_k, k, q, hd);
    scores[j] = kq * scale;
  }
  softmax_in_place(scores, n_pos, numerics());
  std::fill_n(lanes, n_lanes * hd, 0.0f);
  float* decoded = lanes + n_lanes * hd;  // one V head row in F32, after the lanes
  for (int j = 0; j < n_pos; ++j) {
    const uint8_t* v = kv_.v(layer, kv::slot_of(table, bs, j)) + kv_head * shape.v_head_bytes();
    const float* vf = reinterpret_cast<const float*>(v);
    if (shape.type_v != gguf::TensorType::F32) {
      quant::dequantize(shape.type_v, v, decoded, hd);
      vf = decoded;
    }
    axpy_lane(lanes + (j % n_lanes) * hd, scores[j], vf, hd);
  }
  reduce_lanes(lanes, n_lanes, hd, out);
}

void CpuBackend::attention(int layer, backend::ConstTensorView q, int64_t n_head,
                           backend::TensorView out, const backend::StepInput& in) {
  const int64_t hd = head_dim_;
  const int64_t group = n_head / kv_.shape().n_head_kv;
  const int n_lanes = in.n_tok == 1 ? kWideLanes : kSumLanes;
  pool_.parallel_for(in.n_tok * n_head, [&](int64_t i0, int64_t i1, int thread) {
    float* scores = scores_.data() + thread * n_max_ctx_;
    float* lanes = lanes_.data() + thread * (kWideLanes + 1) * hd;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / n_head, h = i % n_head;
      const auto ti = static_cast<size_t>(t);
      attend_head(layer, in.block_table(in.seq_index[ti]), in.positions[ti] + 1,
                  q.f32() + (t * n_head + h) * hd, h / group, n_lanes, scores, lanes,
                  out.f32() + (t * n_head + h) * hd);
    }
  });
}

}  // namespace cohort::cpu
