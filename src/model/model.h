// A loaded model: the mapped file, its hyper-parameters and the forward pass
// of its family.
//
// Loading maps the file and binds weight views into it (no copy of the
// matrices), so it takes milliseconds. The Model is immutable after load and
// may be shared by threads; forward() mutates only the context it is given.
#pragma once

#include <memory>
#include <string>

#include "gguf/gguf_file.h"
#include "model/forward.h"
#include "model/hparams.h"

namespace cohort::model {

class Model {
 public:
  virtual ~Model() = default;

  // Throws cohort::Error naming the file and the problem (unsupported
  // architecture, missing tensor, unsupported type or RoPE scaling, ...).
  static std::unique_ptr<Model> load(const std::string& path);

  const HParams& hparams() const { return hp_; }
  const gguf::GgufFile& file() const { return file_; }

  // Runs the micro-batch ctx.in: writes its K/V into the backend's cache
  // and, for the rows in.logit_rows, logits [in.n_logits(), n_vocab] into
  // `logits`.
  // REQUIRES: in.n_tok <= ctx.ws.n_max_tok; every token's KV slot is
  // reserved; the positions of a sequence are consecutive from its
  // committed length.
  virtual void forward(ForwardContext& ctx, backend::TensorView logits) const = 0;

 protected:
  Model(gguf::GgufFile file, HParams hp) : file_(std::move(file)), hp_(hp) {}

 private:
  gguf::GgufFile file_;
  HParams hp_;
};

}  // namespace cohort::model
