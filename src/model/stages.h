// The stages of a transformer layer, shared by the family forward functions.
// Each reads and writes the Workspace of the context; shapes are per token.
#pragma once

#include <span>

#include "backend/cpu/ops.h"
#include "model/forward.h"
#include "model/weights.h"

namespace cohort::model {

// ws.x [n_tok, n_embd] = embedding rows of the tokens
void embed(ForwardContext& ctx, const HeadWeights& head, const UBatch& ub);

// ws.h = rms_norm(ws.x) · attn.norm; ws.q, ws.k, ws.v = projections of ws.h
void attention_projections(ForwardContext& ctx, const AttentionWeights& attn, const UBatch& ub);

// Per-head RMS norm of ws.q and ws.k (qwen3), before RoPE.
void qk_norm(ForwardContext& ctx, std::span<const float> q_norm, std::span<const float> k_norm,
             const UBatch& ub);

// RoPE on ws.q and ws.k at the tokens' positions.
void rotate_qk(ForwardContext& ctx, const HeadWeights& head, const UBatch& ub);

// Writes ws.k and ws.v into the KV cache, then ws.attn = causal attention of
// ws.q over each token's sequence (positions 0 .. its own).
void attend(ForwardContext& ctx, int layer, const UBatch& ub);

// ws.x += all_reduce(ws.attn · attn.o)
void attention_output(ForwardContext& ctx, const AttentionWeights& attn, const UBatch& ub);

// ws.x += all_reduce(down(silu(gate(h)) * up(h))), h = rms_norm(ws.x) · ffn.norm
void feed_forward(ForwardContext& ctx, const FfnWeights& ffn, const UBatch& ub);

// logits [n_logits, n_vocab] for the rows that want them, in order.
void output_logits(ForwardContext& ctx, const HeadWeights& head, const UBatch& ub, float* logits);

}  // namespace cohort::model
