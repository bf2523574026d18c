// The forward pass of each family, as a plain sequence of stage calls
// (see DESIGN.md, "The forward pass"). The same code runs the whole model and
// each tensor-parallel rank: a rank's weights are its shards, its hp its
// local sizes, and the stages reduce and gather through the context's
// communicator.
#include "common/error.h"
#include "model/model.h"
#include "model/stages.h"
#include "model/weights.h"

namespace cohort::model {
namespace {

void run_layer(ForwardContext& ctx, const LlamaLayer& L, const HeadWeights& head, int il) {
  attention_projections(ctx, L.attn);
  rotate_qk(ctx, head);
  attend(ctx, il);
  attention_output(ctx, L.attn);
  feed_forward(ctx, L.ffn);
}

void run_layer(ForwardContext& ctx, const Qwen2Layer& L, const HeadWeights& head, int il) {
  attention_projections(ctx, L.attn);
  add_qkv_bias(ctx, L.q_bias, L.k_bias, L.v_bias);
  rotate_qk(ctx, head);
  attend(ctx, il);
  attention_output(ctx, L.attn);
  feed_forward(ctx, L.ffn);
}

void run_layer(ForwardContext& ctx, const Qwen3Layer& L, const HeadWeights& head, int il) {
  attention_projections(ctx, L.attn);
  qk_norm(ctx, L.q_norm, L.k_norm);
  rotate_qk(ctx, head);
  attend(ctx, il);
  attention_output(ctx, L.attn);
  feed_forward(ctx, L.ffn);
}

template <typename Layer>
class FamilyForward final : public RankForward {
 public:
  FamilyForward(Weights<Layer> w, const HParams& hp, std::vector<int64_t> vocab_counts)
      : RankForward(hp, std::move(vocab_counts)), w_(std::move(w)) {}

  void forward(ForwardContext& ctx, backend::TensorView logits, backend::TensorView hidden) const override {
    embed(ctx, w_.head);
    for (int il = 0; il < static_cast<int>(w_.layers.size()); ++il) {
      run_layer(ctx, w_.layers[static_cast<size_t>(il)], w_.head, il);
    }
    if (!hidden.empty()) output_hidden(ctx, w_.head, hidden);
    output_logits(ctx, w_.head, logits, vocab_counts());
  }

  std::vector<backend::ConstTensorView> matrices() const override {
    std::vector<backend::ConstTensorView> m = {w_.head.embedding, w_.head.output};
    for (const Layer& L : w_.layers) {
      m.insert(m.end(), {L.attn.q, L.attn.k, L.attn.v, L.attn.o, L.ffn.gate, L.ffn.up, L.ffn.down});
    }
    return m;
  }

  backend::RopeParams rope_params() const override { return model::rope_params(hparams(), w_.head); }

 private:
  Weights<Layer> w_;
};

// The forward of the whole model (plan null) or of one rank of plan.
std::unique_ptr<RankForward> bind_forward(const gguf::GgufFile& file, const HParams& hp,
                                          const ShardPlan* plan, int rank) {
  HParams local = hp;
  std::vector<int64_t> counts;
  if (plan != nullptr) {
    local = rank_hparams(hp, plan->ranks[static_cast<size_t>(rank)]);
    for (const RankShard& s : plan->ranks) counts.push_back(s.vocab.size());
  }
  switch (hp.family) {
    case Family::llama:
      return std::make_unique<FamilyForward<LlamaLayer>>(bind_llama(file, hp, plan, rank), local, counts);
    case Family::qwen2:
      return std::make_unique<FamilyForward<Qwen2Layer>>(bind_qwen2(file, hp, plan, rank), local, counts);
    case Family::qwen3:
      return std::make_unique<FamilyForward<Qwen3Layer>>(bind_qwen3(file, hp, plan, rank), local, counts);
  }
  fail("{}: unsupported family", file.name());
}

}  // namespace

Model::Model(gguf::GgufFile file, const HParams& hp)
    : file_(std::move(file)), hp_(hp), whole_(bind_forward(file_, hp_, nullptr, 0)) {}

std::unique_ptr<Model> Model::load(const std::string& path) {
  gguf::GgufFile file = gguf::GgufFile::open(path);
  const HParams hp = hparams_from_gguf(file);
  return std::unique_ptr<Model>(new Model(std::move(file), hp));
}

ShardPlan Model::shard_plan(int n_ranks, std::span<const float> split) const {
  return make_shard_plan(hp_, n_ranks, split, shard_alignment(file_, hp_));
}

std::unique_ptr<RankForward> Model::bind_rank(const ShardPlan& plan, int rank) const {
  return bind_forward(file_, hp_, &plan, rank);
}

}  // namespace cohort::model
