#include "model/stages.h"

#include <algorithm>
#include <cmath>

#include "quant/quant.h"

namespace cohort::model {

int64_t UBatch::n_logits() const {
  int64_t n = 0;
  for (uint8_t w : want_logits) n += w != 0;
  return n;
}

Workspace::Workspace(const HParams& hp, int64_t max_tok, int64_t max_ctx, int n_threads)
    : n_max_tok(max_tok), n_max_ctx(max_ctx) {
  auto sized = [&](int64_t per_token) { return std::vector<float>(static_cast<size_t>(max_tok * per_token)); };
  const int64_t q_dim = hp.n_head * hp.head_dim, kv_dim = hp.n_head_kv * hp.head_dim;
  x = sized(hp.n_embd);
  h = sized(hp.n_embd);
  q = sized(q_dim);
  k = sized(kv_dim);
  v = sized(kv_dim);
  attn = sized(q_dim);
  gate = sized(hp.n_ff);
  up = sized(hp.n_ff);
  out = sized(hp.n_embd);
  scores.resize(static_cast<size_t>(n_threads * max_ctx));
  lanes.resize(static_cast<size_t>(n_threads * cpu::kWideLanes * hp.head_dim));
  // F16 activations (2 bytes per input) are the widest any weight type pairs
  // with, so a scratch sized for them fits every matrix of the model.
  const int64_t max_in = std::max({hp.n_embd, hp.n_ff, q_dim});
  const cpu::WeightView widest{gguf::TensorType::F16, nullptr, max_in, 1, 0};
  activations.resize(cpu::matmul_fast_scratch_bytes(widest, max_tok));
}

namespace {

// y [n_tok, w.n_out] = x [n_tok, w.n_in] · wᵀ on the context's path.
void project(ForwardContext& ctx, const WeightView& w, const float* x, int64_t n_tok, float* y) {
  if (ctx.exact) {
    cpu::matmul(ctx.pool, w, x, n_tok, y);
  } else {
    cpu::matmul_fast(ctx.pool, w, x, n_tok, y, ctx.ws.activations);
  }
}

}  // namespace

void embed(ForwardContext& ctx, const HeadWeights& head, const UBatch& ub) {
  const int64_t n_embd = ctx.hp.n_embd;
  ctx.pool.parallel_for(ub.n_tok(), [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      cpu::get_row(head.embedding, ub.tokens[static_cast<size_t>(t)], ctx.ws.x.data() + t * n_embd);
    }
  });
}

void attention_projections(ForwardContext& ctx, const AttentionWeights& attn, const UBatch& ub) {
  Workspace& ws = ctx.ws;
  cpu::rms_norm(ctx.pool, ws.x.data(), attn.norm.data(), ub.n_tok(), ctx.hp.n_embd, ctx.hp.rms_eps,
                ws.h.data(), ctx.numerics());
  project(ctx, attn.q, ws.h.data(), ub.n_tok(), ws.q.data());
  project(ctx, attn.k, ws.h.data(), ub.n_tok(), ws.k.data());
  project(ctx, attn.v, ws.h.data(), ub.n_tok(), ws.v.data());
}

void qk_norm(ForwardContext& ctx, std::span<const float> q_norm, std::span<const float> k_norm,
             const UBatch& ub) {
  const HParams& hp = ctx.hp;
  // Each head is a row of head_dim: normalise n_tok * n_heads rows in place.
  cpu::rms_norm(ctx.pool, ctx.ws.q.data(), q_norm.data(), ub.n_tok() * hp.n_head, hp.head_dim,
                hp.rms_eps, ctx.ws.q.data(), ctx.numerics());
  cpu::rms_norm(ctx.pool, ctx.ws.k.data(), k_norm.data(), ub.n_tok() * hp.n_head_kv, hp.head_dim,
                hp.rms_eps, ctx.ws.k.data(), ctx.numerics());
}

void rotate_qk(ForwardContext& ctx, const HeadWeights& head, const UBatch& ub) {
  const HParams& hp = ctx.hp;
  cpu::RopeParams p;
  p.n_rot = hp.n_rot;
  p.freq_base = hp.rope_freq_base;
  p.neox = hp.family != Family::llama;  // ref: llama.cpp's rope type per architecture
  p.numerics = ctx.numerics();
  if (hp.rope_scaling == RopeScaling::linear || hp.rope_scaling == RopeScaling::yarn) {
    p.freq_scale = 1.0f / hp.rope_scale;
  }
  if (hp.rope_scaling == RopeScaling::yarn) {
    p.ext_factor = 1.0f;
    p.attn_factor = hp.yarn_attn_factor;
    p.beta_fast = hp.yarn_beta_fast;
    p.beta_slow = hp.yarn_beta_slow;
    p.n_ctx_orig = hp.n_ctx_orig;
  }
  if (!head.rope_freqs.empty()) p.freq_factors = head.rope_freqs.data();
  cpu::rope(p, ctx.ws.q.data(), ub.positions.data(), ub.n_tok(), hp.n_head, hp.head_dim);
  cpu::rope(p, ctx.ws.k.data(), ub.positions.data(), ub.n_tok(), hp.n_head_kv, hp.head_dim);
}

namespace {

void store_kv(ForwardContext& ctx, int layer, const UBatch& ub) {
  const int64_t row = ctx.hp.n_head_kv * ctx.hp.head_dim;
  for (int64_t t = 0; t < ub.n_tok(); ++t) {
    const auto i = static_cast<size_t>(t);
    kv::Slot s = ctx.blocks.slot_of(ub.seq_ids[i], ub.positions[i]);
    std::copy_n(ctx.ws.k.data() + t * row, row, ctx.kv.k(layer, s));
    std::copy_n(ctx.ws.v.data() + t * row, row, ctx.kv.v(layer, s));
  }
}

// One query head of one token over positions [0, n_pos) of its sequence.
// The weighted sum of V rows runs in n_lanes lanes by position: llama.cpp
// sums it as a matmul (16 lanes) over a batch, as a dot product (64) for a
// lone token.
void attend_head(ForwardContext& ctx, int layer, std::span<const kv::BlockId> table, int n_pos,
                 const float* q, int64_t kv_head, int n_lanes, float* scores, float* lanes,
                 float* out) {
  const HParams& hp = ctx.hp;
  const int bs = ctx.blocks.block_size();
  const int64_t hd = hp.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int j = 0; j < n_pos; ++j) {
    const float* k = ctx.kv.k(layer, kv::slot_of(table, bs, j)) + kv_head * hd;
    // The fast path sums in the lane order of llama.cpp's F32 matmul.
    const float kq = ctx.exact ? quant::dot(gguf::TensorType::F32, k, q, hd)
                               : cpu::dot_f32_wide(k, q, hd);
    scores[j] = kq * scale;
  }
  cpu::softmax_in_place(scores, n_pos, ctx.numerics());
  std::fill_n(lanes, n_lanes * hd, 0.0f);
  for (int j = 0; j < n_pos; ++j) {
    const float* v = ctx.kv.v(layer, kv::slot_of(table, bs, j)) + kv_head * hd;
    cpu::axpy_lane(lanes + (j % n_lanes) * hd, scores[j], v, hd);
  }
  cpu::reduce_lanes(lanes, n_lanes, hd, out);
}

}  // namespace

void attend(ForwardContext& ctx, int layer, const UBatch& ub) {
  store_kv(ctx, layer, ub);
  const HParams& hp = ctx.hp;
  const int64_t group = hp.n_head / hp.n_head_kv;
  const int n_lanes = ub.n_tok() == 1 ? cpu::kWideLanes : cpu::kSumLanes;
  ctx.pool.parallel_for(ub.n_tok() * hp.n_head, [&](int64_t i0, int64_t i1, int thread) {
    float* scores = ctx.ws.scores.data() + thread * ctx.ws.n_max_ctx;
    float* lanes = ctx.ws.lanes.data() + thread * cpu::kWideLanes * hp.head_dim;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / hp.n_head, h = i % hp.n_head;
      const auto ti = static_cast<size_t>(t);
      const float* q = ctx.ws.q.data() + (t * hp.n_head + h) * hp.head_dim;
      float* out = ctx.ws.attn.data() + (t * hp.n_head + h) * hp.head_dim;
      attend_head(ctx, layer, ctx.blocks.block_table(ub.seq_ids[ti]), ub.positions[ti] + 1, q,
                  h / group, n_lanes, scores, lanes, out);
    }
  });
}

void attention_output(ForwardContext& ctx, const AttentionWeights& attn, const UBatch& ub) {
  Workspace& ws = ctx.ws;
  const int64_t n = ub.n_tok() * ctx.hp.n_embd;
  project(ctx, attn.o, ws.attn.data(), ub.n_tok(), ws.out.data());
  ctx.comm.all_reduce_sum(ws.out.data(), n);
  cpu::add_in_place(ws.x.data(), ws.out.data(), n);
}

void feed_forward(ForwardContext& ctx, const FfnWeights& ffn, const UBatch& ub) {
  Workspace& ws = ctx.ws;
  const HParams& hp = ctx.hp;
  const int64_t n = ub.n_tok() * hp.n_embd;
  cpu::rms_norm(ctx.pool, ws.x.data(), ffn.norm.data(), ub.n_tok(), hp.n_embd, hp.rms_eps, ws.h.data(),
                ctx.numerics());
  project(ctx, ffn.gate, ws.h.data(), ub.n_tok(), ws.gate.data());
  project(ctx, ffn.up, ws.h.data(), ub.n_tok(), ws.up.data());
  cpu::silu_mul(ctx.pool, ws.gate.data(), ws.up.data(), ub.n_tok(), hp.n_ff, ws.gate.data(),
                ctx.numerics());
  project(ctx, ffn.down, ws.gate.data(), ub.n_tok(), ws.out.data());
  ctx.comm.all_reduce_sum(ws.out.data(), n);
  cpu::add_in_place(ws.x.data(), ws.out.data(), n);
}

void output_logits(ForwardContext& ctx, const HeadWeights& head, const UBatch& ub, float* logits) {
  Workspace& ws = ctx.ws;
  const int64_t n_embd = ctx.hp.n_embd;
  // Gather the rows that want logits into ws.h, in order.
  int64_t n_rows = 0;
  for (int64_t t = 0; t < ub.n_tok(); ++t) {
    if (ub.want_logits[static_cast<size_t>(t)]) {
      std::copy_n(ws.x.data() + t * n_embd, n_embd, ws.h.data() + n_rows * n_embd);
      ++n_rows;
    }
  }
  if (n_rows == 0) return;
  cpu::rms_norm(ctx.pool, ws.h.data(), head.output_norm.data(), n_rows, n_embd, ctx.hp.rms_eps,
                ws.h.data(), ctx.numerics());
  project(ctx, head.output, ws.h.data(), n_rows, logits);
}

}  // namespace cohort::model
