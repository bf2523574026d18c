// A loaded model: the mapped file, its hyper-parameters and the forward pass
// of its family, over the whole of its weights or over one tensor-parallel
// rank's shards of them.
//
// Loading maps the file and binds weight views into it (no copy of the
// matrices), so it takes milliseconds. The Model is immutable after load and
// may be shared by threads; a forward mutates only the context it is given.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/shard_plan.h"

namespace cohort::model {

// The forward pass over one set of bound weights. The whole model's is made
// at load; Model::bind_rank makes a rank's.
class RankForward {
 public:
  virtual ~RankForward() = default;

  // The sizes this forward computes with: the model's, or for a rank its
  // heads, KV heads, FFN columns and vocabulary rows (rank_hparams). The
  // context's hp, workspace and backend limits are made from these.
  const HParams& hparams() const { return hp_; }
  // The vocabulary rows of every rank, in rank order, when the output head is
  // split (the logits are gathered); empty for the whole model.
  std::span<const int64_t> vocab_counts() const { return vocab_counts_; }

  // Runs the micro-batch ctx.in: writes its K/V into the backend's cache
  // and, for the rows in.logit_rows, the full logits [in.n_logits(),
  // n_vocab] into `logits` (gathered over the ranks when split; a rank
  // whose logits nobody reads passes an empty view and only contributes).
  // REQUIRES: in.n_tok <= ctx.ws.n_max_tok; every token's KV slot is
  // reserved; the positions of a sequence are consecutive from its
  // committed length; every rank of the group runs the same step.
  // `hidden`: for the rows in.embd_rows, their final hidden states after the
  // output norm [in.n_embd_rows(), n_embd] (embeddings), an F32 host view;
  // empty on a rank whose hidden rows nobody reads (the residual stream is
  // whole on every rank, so rank 0 needs no peer for them).
  virtual void forward(ForwardContext& ctx, backend::TensorView logits, backend::TensorView hidden) const = 0;
  // Every weight matrix this forward reads (views into the model file; a
  // rank's are its shards), for a device backend to copy.
  virtual std::vector<backend::ConstTensorView> matrices() const = 0;
  // The rotary embedding of its keys, for the moves of a context shift
  // (StepInput::kv_rope); its freq_factors point into this object.
  virtual backend::RopeParams rope_params() const = 0;

 protected:
  RankForward(const HParams& hp, std::vector<int64_t> vocab_counts)
      : hp_(hp), vocab_counts_(std::move(vocab_counts)) {}

 private:
  HParams hp_;
  std::vector<int64_t> vocab_counts_;
};

class Model {
 public:
  // Throws cohort::Error naming the file and the problem (unsupported
  // architecture, missing tensor, unsupported type or RoPE scaling, ...).
  static std::unique_ptr<Model> load(const std::string& path);

  const HParams& hparams() const { return hp_; }
  const gguf::GgufFile& file() const { return file_; }

  // The forward over the whole model (one rank).
  const RankForward& whole() const { return *whole_; }
  void forward(ForwardContext& ctx, backend::TensorView logits, backend::TensorView hidden = {}) const {
    whole_->forward(ctx, logits, hidden);
  }

  // How the model splits over n_ranks with `-ts` proportions `split` (empty:
  // even), aligned to the blocks of its O and down weights. Throws
  // cohort::Error naming the numbers of an impossible split.
  ShardPlan shard_plan(int n_ranks, std::span<const float> split) const;
  // The forward of rank `rank` of `plan` over its shards of the weights.
  // REQUIRES: plan made by shard_plan(); 0 <= rank < plan.n_ranks().
  std::unique_ptr<RankForward> bind_rank(const ShardPlan& plan, int rank) const;

 private:
  Model(gguf::GgufFile file, const HParams& hp);

  gguf::GgufFile file_;
  HParams hp_;
  std::unique_ptr<RankForward> whole_;
};

}  // namespace cohort::model
