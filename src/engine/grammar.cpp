#include "engine/grammar.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <xgrammar/xgrammar.h>

#include "common/error.h"
#include "engine/gbnf_dialect.h"
#include "engine/grammar_internal.h"
#include "tokenizer/detokenizer.h"

namespace cohort::engine {
namespace {

// Compiled grammars kept for requests that send the same grammar again
// (the engine's cache, keyed by the grammar's text): bounded, since every
// request may bring a new one. A JSON schema of a dozen properties takes
// ~0.4 MB over a 49k vocabulary, llama.cpp's json.gbnf ~3 MB.
constexpr int64_t kCacheBytes = int64_t{64} << 20;
// Threads one compilation may use (the token masks of the grammar's states
// are computed in parallel).
constexpr int kMaxCompileThreads = 4;

// The bytes each token renders as, "" for those that render as nothing
// (the engine never allows an empty token).
std::vector<std::string> token_bytes(const tokenizer::Vocab& vocab) {
  std::vector<std::string> out(static_cast<size_t>(vocab.n_tokens()));
  for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
    tokenizer::append_piece(vocab, id, false, false, out[static_cast<size_t>(id)]);
  }
  return out;
}

// The engine reports errors as "[time] file:line: message" or as the bare
// message; the client wants the message.
std::string engine_message(const std::exception& e) {
  std::string what = e.what();
  if (!what.empty() && what.front() == '[') {
    const size_t close = what.find("] ");
    const size_t colon = close == std::string::npos ? close : what.find(": ", close);
    if (colon != std::string::npos) what.erase(0, colon + 2);
  }
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  return what;
}

}  // namespace

struct GrammarCompiler::Engine {
  explicit Engine(const tokenizer::Vocab& vocab)
      : info(token_bytes(vocab), xgrammar::VocabType::RAW, std::nullopt,
             std::vector<int32_t>(vocab.eog_ids().begin(), vocab.eog_ids().end())),
        compiler(info, std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxCompileThreads),
                 true, kCacheBytes) {}

  xgrammar::TokenizerInfo info;
  std::mutex mutex;  // the compiler's cache is not documented as thread-safe: one compilation at a time
  xgrammar::GrammarCompiler compiler;  // GUARDED_BY(mutex)
};

Grammar::Grammar(std::shared_ptr<const Compiled> compiled, std::string description)
    : compiled_(std::move(compiled)), description_(std::move(description)) {}

int Grammar::n_vocab() const { return compiled_->grammar.GetTokenizerInfo().GetVocabSize(); }

GrammarCompiler::GrammarCompiler(const tokenizer::Vocab& vocab)
    : engine_(std::make_unique<Engine>(vocab)), n_vocab_(vocab.n_tokens()) {}

GrammarCompiler::~GrammarCompiler() = default;

namespace {

// Runs one compilation under the lock; an engine error becomes a
// cohort::Error "invalid <what>: <message>".
template <typename Compile>
std::shared_ptr<const Grammar> compile(std::mutex& mutex, const char* what, std::string description,
                                       Compile&& run) {
  std::optional<xgrammar::CompiledGrammar> compiled;
  try {
    std::lock_guard<std::mutex> lock(mutex);
    compiled.emplace(run());
  } catch (const std::exception& e) {
    fail("invalid {}: {}", what, engine_message(e));
  }
  auto c = std::make_shared<Grammar::Compiled>(Grammar::Compiled{std::move(*compiled)});
  return std::make_shared<const Grammar>(std::move(c), std::move(description));
}

}  // namespace

std::shared_ptr<const Grammar> GrammarCompiler::gbnf(std::string_view text) const {
  const std::string source(text);
  auto& compiler = engine_->compiler;
  try {
    return compile(engine_->mutex, "grammar", "grammar: " + source,
                   [&] { return compiler.CompileGrammar(source, "root"); });
  } catch (const Error& first) {
    // llama.cpp's GBNF where the engine's dialect differs (an empty
    // alternative, `.`): retry in the engine's, reporting the first error
    // (its lines and columns are the client's) if that fails too.
    const std::string rewritten = rewrite_llama_gbnf(source);
    if (rewritten == source) throw;
    try {
      return compile(engine_->mutex, "grammar", "grammar: " + source,
                     [&] { return compiler.CompileGrammar(rewritten, "root"); });
    } catch (const Error&) {
      throw first;
    }
  }
}

std::shared_ptr<const Grammar> GrammarCompiler::json_schema(std::string_view schema) const {
  const std::string source(schema);
  auto& compiler = engine_->compiler;
  return compile(engine_->mutex, "JSON schema", "json_schema: " + source, [&] {
    return compiler.CompileJSONSchema(source, /*any_whitespace=*/false, std::nullopt, std::nullopt,
                                      /*strict_mode=*/true);
  });
}

std::shared_ptr<const Grammar> GrammarCompiler::any_json() const {
  auto& compiler = engine_->compiler;
  // Not the engine's built-in JSON grammar: that one also allows arrays and
  // any whitespace. Non-strict, so that the object may hold any properties.
  return compile(engine_->mutex, "JSON grammar", "json_object", [&] {
    return compiler.CompileJSONSchema(R"({"type": "object"})", /*any_whitespace=*/false, std::nullopt,
                                      std::nullopt, /*strict_mode=*/false);
  });
}

}  // namespace cohort::engine
