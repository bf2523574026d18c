#include "model/stages.h"

#include <algorithm>

namespace cohort::model {

Workspace::Workspace(backend::Backend& be, const HParams& hp, int64_t max_tok, bool split_vocab)
    : n_max_tok(max_tok),
      x(be.alloc(max_tok, hp.n_embd)),
      h(be.alloc(max_tok, hp.n_embd)),
      q(be.alloc(max_tok, hp.n_head * hp.head_dim)),
      k(be.alloc(max_tok, hp.n_head_kv * hp.head_dim)),
      v(be.alloc(max_tok, hp.n_head_kv * hp.head_dim)),
      attn(be.alloc(max_tok, hp.n_head * hp.head_dim)),
      gate(be.alloc(max_tok, hp.n_ff)),
      up(be.alloc(max_tok, hp.n_ff)),
      out(be.alloc(max_tok, hp.n_embd)),
      logits_part(split_vocab ? be.alloc_host(max_tok, hp.n_vocab) : backend::Tensor()) {}

backend::BackendLimits backend_limits(const HParams& hp, int64_t n_max_tok, int64_t n_max_ctx,
                                      const kv::KvCacheShape& kv) {
  backend::BackendLimits l;
  l.n_max_tok = n_max_tok;
  l.n_max_ctx = n_max_ctx;
  l.max_row = std::max({hp.n_embd, hp.n_ff, hp.n_head * hp.head_dim});
  l.max_out = std::max({l.max_row, hp.n_vocab, hp.n_head_kv * hp.head_dim});
  l.n_head = hp.n_head;
  l.head_dim = hp.head_dim;
  l.kv = kv;
  return l;
}

void embed(ForwardContext& ctx, const HeadWeights& head) {
  ctx.be.get_rows(head.embedding, ctx.in.tokens, ctx.rows(ctx.ws.x));
}

void attention_projections(ForwardContext& ctx, const AttentionWeights& attn) {
  Workspace& ws = ctx.ws;
  const backend::TensorView h = ctx.rows(ws.h);
  ctx.be.rms_norm(ctx.rows(ws.x), vec(attn.norm), ctx.hp.rms_eps, h);
  ctx.be.matmul(attn.q, h, ctx.rows(ws.q));
  ctx.be.matmul(attn.k, h, ctx.rows(ws.k));
  ctx.be.matmul(attn.v, h, ctx.rows(ws.v));
}

void add_qkv_bias(ForwardContext& ctx, const F32Vector& q_bias, const F32Vector& k_bias,
                  const F32Vector& v_bias) {
  ctx.be.add(ctx.rows(ctx.ws.q), vec(q_bias));
  ctx.be.add(ctx.rows(ctx.ws.k), vec(k_bias));
  ctx.be.add(ctx.rows(ctx.ws.v), vec(v_bias));
}

void qk_norm(ForwardContext& ctx, const F32Vector& q_norm, const F32Vector& k_norm) {
  const HParams& hp = ctx.hp;
  const int64_t n_tok = ctx.in.n_tok;
  // Each head is a row of head_dim: normalise n_tok * n_heads rows in place.
  const backend::TensorView q = ctx.rows(ctx.ws.q).reshape(n_tok * hp.n_head, hp.head_dim);
  const backend::TensorView k = ctx.rows(ctx.ws.k).reshape(n_tok * hp.n_head_kv, hp.head_dim);
  ctx.be.rms_norm(q, vec(q_norm), hp.rms_eps, q);
  ctx.be.rms_norm(k, vec(k_norm), hp.rms_eps, k);
}

backend::RopeParams rope_params(const HParams& hp, const HeadWeights& head) {
  backend::RopeParams p;
  p.n_rot = hp.n_rot;
  p.freq_base = hp.rope_freq_base;
  p.neox = hp.family != Family::llama;  // ref: llama.cpp's rope type per architecture
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
  return p;
}

void rotate_qk(ForwardContext& ctx, const HeadWeights& head) {
  const backend::RopeParams p = rope_params(ctx.hp, head);
  ctx.be.rope(p, ctx.rows(ctx.ws.q), ctx.hp.n_head, ctx.in);
  ctx.be.rope(p, ctx.rows(ctx.ws.k), ctx.hp.n_head_kv, ctx.in);
}

void attend(ForwardContext& ctx, int layer) {
  Workspace& ws = ctx.ws;
  ctx.be.store_kv(layer, ctx.rows(ws.k), ctx.rows(ws.v), ctx.in);
  ctx.be.attention(layer, ctx.rows(ws.q), ctx.hp.n_head, ctx.rows(ws.attn), ctx.in);
}

namespace {

// ws.x += all_reduce(ws.out), the residual add after a block.
void reduce_and_add(ForwardContext& ctx) {
  const backend::TensorView out = ctx.rows(ctx.ws.out);
  const comm::DType type = out.type == gguf::TensorType::BF16 ? comm::DType::bf16 : comm::DType::f32;
  ctx.comm.all_reduce_sum(comm::Buffer{out.data, type, out.n_rows * out.n_cols}, ctx.be.queue());
  ctx.be.add(ctx.rows(ctx.ws.x), out);
}

}  // namespace

void attention_output(ForwardContext& ctx, const AttentionWeights& attn) {
  ctx.be.matmul(attn.o, ctx.rows(ctx.ws.attn), ctx.rows(ctx.ws.out));
  reduce_and_add(ctx);
}

void feed_forward(ForwardContext& ctx, const FfnWeights& ffn) {
  Workspace& ws = ctx.ws;
  const backend::TensorView h = ctx.rows(ws.h), gate = ctx.rows(ws.gate);
  ctx.be.rms_norm(ctx.rows(ws.x), vec(ffn.norm), ctx.hp.rms_eps, h);
  ctx.be.matmul(ffn.gate, h, gate);
  ctx.be.matmul(ffn.up, h, ctx.rows(ws.up));
  ctx.be.silu_mul(gate, ctx.rows(ws.up), gate);
  ctx.be.matmul(ffn.down, gate, ctx.rows(ws.out));
  reduce_and_add(ctx);
}

void output_hidden(ForwardContext& ctx, const HeadWeights& head, backend::TensorView hidden) {
  const int64_t n_rows = ctx.in.n_embd_rows();
  if (n_rows == 0) return;
  const backend::TensorView h = ctx.ws.h.view().rows(0, n_rows);
  ctx.be.get_rows(ctx.rows(ctx.ws.x), ctx.in.embd_rows, h);
  ctx.be.rms_norm(h, vec(head.output_norm), ctx.hp.rms_eps, hidden.rows(0, n_rows));
}

void output_logits(ForwardContext& ctx, const HeadWeights& head, backend::TensorView logits,
                   std::span<const int64_t> vocab_counts) {
  const int64_t n_rows = ctx.in.n_logits();
  if (n_rows == 0) return;
  // Gather the rows that want logits into ws.h, in order.
  const backend::TensorView h = ctx.ws.h.view().rows(0, n_rows);
  ctx.be.get_rows(ctx.rows(ctx.ws.x), ctx.in.logit_rows, h);
  ctx.be.rms_norm(h, vec(head.output_norm), ctx.hp.rms_eps, h);
  if (vocab_counts.empty()) {
    ctx.be.matmul(head.output, h, logits.rows(0, n_rows));
    return;
  }
  // A rank's vocabulary rows, then every rank's columns side by side.
  const backend::TensorView part = ctx.ws.logits_part.view().rows(0, n_rows);
  ctx.be.matmul(head.output, h, part);
  ctx.comm.all_gather(comm::ConstBuffer{part.data, comm::DType::f32, part.n_rows * part.n_cols},
                      comm::Buffer{logits.data, comm::DType::f32, n_rows * logits.n_cols}, vocab_counts,
                      n_rows, ctx.be.queue());
}

}  // namespace cohort::model
