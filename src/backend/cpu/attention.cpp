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
// lone token.
void CpuBackend::attend_head(int layer, std::span<const int32_t> table, int n_pos, const float* q,
                             int64_t kv_head, int n_lanes, float* scores, float* lanes,
                             float* out) const {
  const int bs = kv_.shape().block_size;
  const int64_t hd = head_dim_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int j = 0; j < n_pos; ++j) {
    const float* k = kv_.k(layer, kv::slot_of(table, bs, j)) + kv_head * hd;
    // The fast path sums in the lane order of llama.cpp's F32 matmul.
    const float kq = exact_ ? quant::dot(gguf::TensorType::F32, k, q, hd) : dot_f32_wide(k, q, hd);
    scores[j] = kq * scale;
  }
  softmax_in_place(scores, n_pos, numerics());
  std::fill_n(lanes, n_lanes * hd, 0.0f);
  for (int j = 0; j < n_pos; ++j) {
    const float* v = kv_.v(layer, kv::slot_of(table, bs, j)) + kv_head * hd;
    axpy_lane(lanes + (j % n_lanes) * hd, scores[j], v, hd);
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
    float* lanes = lanes_.data() + thread * kWideLanes * hd;
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
