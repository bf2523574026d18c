// The model the server serves, as the routes see it, and the switch from
// "loading" to "ready".
//
// The HTTP server starts before the model is loaded (so /health can answer
// 503 meanwhile); the loader then publishes a ServedModel once, and from
// then on every route uses it.
//
// Thread safety: publish() once from the loading thread; model() from any
// thread (acquire/release on the pointer, so a route that sees the model
// sees it whole). The ServedModel's tokenizer is const and the service is
// internally synchronised, so routes share them freely.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar.h"
#include "engine/pooling.h"
#include "engine/sampler.h"
#include "server/generation.h"
#include "server/openai_request.h"
#include "server/reasoning.h"
#include "tokenizer/tokenizer.h"

namespace cohort::server {

// /tokenize returns and /detokenize takes at most this many tokens by
// default; /detokenize's text is at most kMaxDetokenizeBytesPerToken bytes
// per allowed token (English runs at ~4 bytes a token).
inline constexpr int64_t kDefaultMaxTokenize = int64_t{1} << 18;
inline constexpr size_t kMaxDetokenizeBytesPerToken = 16;

struct ServedModel {
  explicit ServedModel(tokenizer::Tokenizer tok) : tokenizer(std::move(tok)) {}

  std::string id;                   // model id in the API: --alias, general.name or the file name
  std::vector<std::string> aliases;  // --alias a,b,...: all of them, sorted (id is the first)
  std::vector<std::string> tags;     // --tags a,b,...: listed by /models
  std::string path;                 // the GGUF file
  std::string chat_template;        // tokenizer.chat_template ("" -> ChatML)
  Json template_defaults = Json::object();  // PromptContext::template_defaults (--reasoning)
  tokenizer::Tokenizer tokenizer;
  std::unique_ptr<GenerationService> service;
  int64_t created = 0;              // unix seconds when loading finished
  engine::SamplingParams defaults;  // for fields a request leaves out
  // Structured output over this model's vocabulary; null: refused.
  std::unique_ptr<engine::GrammarCompiler> grammars;
  int default_max_tokens = -1;
  int64_t max_tokenize = kDefaultMaxTokenize;  // --max-tokenize: /tokenize's and /detokenize's most tokens
  bool slots_endpoint = true;       // --no-slots: GET /slots answers 501
  bool metrics_endpoint = false;    // --metrics: GET /metrics answers (else 501)
  bool verbose = false;             // --verbose: PromptContext::verbose
  ReasoningFormat reasoning_format = ReasoningFormat::deepseek;  // --reasoning-format
  int n_slots = 1;                  // -np: the most choices (n) of one request
  bool embeddings = false;          // --embeddings: the embedding routes answer (else 501)
  engine::Pooling pooling = engine::Pooling::mean;  // --pooling, or the file's <arch>.pooling_type

  // What request parsing needs.
  PromptContext prompt_context() const;
};

class ServingState {
 public:
  // Makes `model` visible to the routes. REQUIRES: called at most once.
  void publish(std::unique_ptr<ServedModel> model);
  // The served model, or nullptr while loading.
  ServedModel* model() const { return ready_.load(std::memory_order_acquire); }
  // Unpublishes and returns the model, so the service can be shut down
  // after the HTTP server stopped. REQUIRES: no route is running.
  std::unique_ptr<ServedModel> take();

 private:
  std::unique_ptr<ServedModel> owned_;
  std::atomic<ServedModel*> ready_{nullptr};
};

}  // namespace cohort::server
