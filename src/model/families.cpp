// The forward pass of each family, as a plain sequence of stage calls
// (see DESIGN.md, "The forward pass").
#include "common/error.h"
#include "model/model.h"
#include "model/stages.h"
#include "model/weights.h"

namespace cohort::model {
namespace {

class LlamaModel final : public Model {
 public:
  LlamaModel(gguf::GgufFile file, const HParams& hp) : Model(std::move(file), hp) {
    w_ = bind_llama(this->file(), hp);
  }

  void forward(ForwardContext& ctx, backend::TensorView logits) const override {
    embed(ctx, w_.head);
    for (int il = 0; il < static_cast<int>(w_.layers.size()); ++il) {
      const LlamaLayer& L = w_.layers[static_cast<size_t>(il)];
      attention_projections(ctx, L.attn);
      rotate_qk(ctx, w_.head);
      attend(ctx, il);
      attention_output(ctx, L.attn);
      feed_forward(ctx, L.ffn);
    }
    output_logits(ctx, w_.head, logits);
  }

 private:
  Weights<LlamaLayer> w_;
};

class Qwen2Model final : public Model {
 public:
  Qwen2Model(gguf::GgufFile file, const HParams& hp) : Model(std::move(file), hp) {
    w_ = bind_qwen2(this->file(), hp);
  }

  void forward(ForwardContext& ctx, backend::TensorView logits) const override {
    embed(ctx, w_.head);
    for (int il = 0; il < static_cast<int>(w_.layers.size()); ++il) {
      const Qwen2Layer& L = w_.layers[static_cast<size_t>(il)];
      attention_projections(ctx, L.attn);
      add_qkv_bias(ctx, L.q_bias, L.k_bias, L.v_bias);
      rotate_qk(ctx, w_.head);
      attend(ctx, il);
      attention_output(ctx, L.attn);
      feed_forward(ctx, L.ffn);
    }
    output_logits(ctx, w_.head, logits);
  }

 private:
  Weights<Qwen2Layer> w_;
};

class Qwen3Model final : public Model {
 public:
  Qwen3Model(gguf::GgufFile file, const HParams& hp) : Model(std::move(file), hp) {
    w_ = bind_qwen3(this->file(), hp);
  }

  void forward(ForwardContext& ctx, backend::TensorView logits) const override {
    embed(ctx, w_.head);
    for (int il = 0; il < static_cast<int>(w_.layers.size()); ++il) {
      const Qwen3Layer& L = w_.layers[static_cast<size_t>(il)];
      attention_projections(ctx, L.attn);
      qk_norm(ctx, L.q_norm, L.k_norm);
      rotate_qk(ctx, w_.head);
      attend(ctx, il);
      attention_output(ctx, L.attn);
      feed_forward(ctx, L.ffn);
    }
    output_logits(ctx, w_.head, logits);
  }

 private:
  Weights<Qwen3Layer> w_;
};

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path) {
  gguf::GgufFile file = gguf::GgufFile::open(path);
  HParams hp = hparams_from_gguf(file);
  switch (hp.family) {
    case Family::llama: return std::make_unique<LlamaModel>(std::move(file), hp);
    case Family::qwen2: return std::make_unique<Qwen2Model>(std::move(file), hp);
    case Family::qwen3: return std::make_unique<Qwen3Model>(std::move(file), hp);
  }
  fail("{}: unsupported family", path);
}

}  // namespace cohort::model
