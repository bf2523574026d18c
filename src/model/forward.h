// What a forward step needs besides the weights: the backend that runs the
// ops, the communicator, the activation buffers and the step input, passed
// explicitly (no globals). Nothing here names a device.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "comm/communicator.h"
#include "model/hparams.h"

namespace cohort::model {

using backend::StepInput;

// Activations of one micro-batch of at most n_max_tok tokens, allocated once
// by the backend (so on its device). A step uses rows [0, n_tok).
struct Workspace {
  // hp: the sizes the forward computes with (a rank's, under tensor
  // parallelism). split_vocab: the rank computes part of the vocabulary,
  // so it needs logits_part.
  Workspace(backend::Backend& be, const HParams& hp, int64_t n_max_tok, bool split_vocab = false);

  int64_t n_max_tok;
  backend::Tensor x;     // [n_max_tok, n_embd] residual stream
  backend::Tensor h;     // [n_max_tok, n_embd] normalised input of a block; at the end
                         //   the rows that want logits
  backend::Tensor q;     // [n_max_tok, n_head * head_dim]
  backend::Tensor k;     // [n_max_tok, n_head_kv * head_dim]
  backend::Tensor v;     // [n_max_tok, n_head_kv * head_dim]
  backend::Tensor attn;  // [n_max_tok, n_head * head_dim]
  backend::Tensor gate;  // [n_max_tok, n_ff]
  backend::Tensor up;    // [n_max_tok, n_ff]
  backend::Tensor out;   // [n_max_tok, n_embd] block output before the residual add
  backend::Tensor logits_part;  // [n_max_tok, n_vocab] F32 host: a rank's logit columns
                                //   before the gather (empty unless split_vocab)
};

// What the backend must be able to hold for a model: the longest activation
// row a matmul reads and the head size (the rest of BackendLimits comes
// from the decoder's -ub and -c).
backend::BackendLimits backend_limits(const HParams& hp, int64_t n_max_tok, int64_t n_max_ctx,
                                      const kv::KvCacheShape& kv);

struct ForwardContext {
  const HParams& hp;
  backend::Backend& be;
  comm::Communicator& comm;
  Workspace& ws;
  const StepInput& in;

  // The rows of a workspace buffer this step uses: [in.n_tok, n].
  backend::TensorView rows(backend::Tensor& t) const { return t.view().rows(0, in.n_tok); }
};

}  // namespace cohort::model
