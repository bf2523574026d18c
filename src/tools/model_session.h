// What the text-level commands (run, perplexity) load: the model, its
// tokenizer, and a decoder with the user's batch and thread settings.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "engine/decoder.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace cohort::tools {

struct ModelSession {
  // Throws cohort::Error naming the file at fault. Prints the load time on stderr.
  ModelSession(const std::string& path, const engine::DecoderOptions& options);

  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::unique_ptr<model::Model> model;
  tokenizer::Tokenizer tokenizer;
  engine::Decoder decoder;
};

}  // namespace cohort::tools
