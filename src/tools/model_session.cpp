#include "tools/model_session.h"

#include <chrono>

#include <fmt/format.h>

namespace cohort::tools {

ModelSession::ModelSession(const std::string& path, const engine::DecoderOptions& options)
    : model(model::Model::load(path)),
      tokenizer(tokenizer::Tokenizer::from_gguf(model->file().metadata())),
      decoder(*model, options) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  fmt::print(stderr, "load: {} ({} layers, vocabulary {}) ready in {:.1f} ms\n", path,
             model->hparams().n_layer, tokenizer.n_vocab(), ms);
  fmt::print(stderr, "load: {}\n", backend::describe(decoder.memory()));
}

}  // namespace cohort::tools
