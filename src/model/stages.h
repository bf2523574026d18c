// The stages of a transformer layer, shared by the family forward functions.
// Each is a few backend ops on the Workspace of the context; shapes are per
// token, rows [0, ctx.in.n_tok) of each buffer.
#pragma once

#include <span>

#include "model/forward.h"
#include "model/weights.h"

namespace cohort::model {

// ws.x [n_tok, n_embd] = embedding rows of the tokens
void embed(ForwardContext& ctx, const HeadWeights& head);

// ws.h = rms_norm(ws.x) · attn.norm; ws.q, ws.k, ws.v = projections of ws.h
void attention_projections(ForwardContext& ctx, const AttentionWeights& attn);

// ws.q, ws.k, ws.v += their biases (qwen2).
void add_qkv_bias(ForwardContext& ctx, const F32Vector& q_bias, const F32Vector& k_bias,
                  const F32Vector& v_bias);

// Per-head RMS norm of ws.q and ws.k (qwen3), before RoPE.
void qk_norm(ForwardContext& ctx, const F32Vector& q_norm, const F32Vector& k_norm);

// The rotary embedding of the model's queries and keys.
backend::RopeParams rope_params(const HParams& hp, const HeadWeights& head);

// RoPE on ws.q and ws.k at the tokens' positions.
void rotate_qk(ForwardContext& ctx, const HeadWeights& head);

// Writes ws.k and ws.v into the KV cache, then ws.attn = causal attention of
// ws.q over each token's sequence (positions 0 .. its own).
void attend(ForwardContext& ctx, int layer);

// ws.x += all_reduce(ws.attn · attn.o)
void attention_output(ForwardContext& ctx, const AttentionWeights& attn);

// ws.x += all_reduce(down(silu(gate(h)) * up(h))), h = rms_norm(ws.x) · ffn.norm
void feed_forward(ForwardContext& ctx, const FfnWeights& ffn);

// hidden [n_embd_rows, n_embd] F32 host = rms_norm(ws.x) · output_norm of the
// rows in.embd_rows, in order: the final hidden states that embeddings are
// pooled from. Uses ws.h as scratch. The CPU backend writes a host view
// directly; a device backend's norm cannot, which is why the decoder
// computes embeddings on the CPU only.
void output_hidden(ForwardContext& ctx, const HeadWeights& head, backend::TensorView hidden);

// logits [n_logits, n_vocab] for the rows in.logit_rows, in order. With
// vocab_counts (a split output head: this rank's rows and its peers'), the
// rank computes its columns into ws.logits_part and all ranks gather them.
void output_logits(ForwardContext& ctx, const HeadWeights& head, backend::TensorView logits,
                   std::span<const int64_t> vocab_counts);

}  // namespace cohort::model
