// Structured output: grammars that constrain what a sequence may generate.
//
// A GrammarCompiler is made once per vocabulary (the served model's); it
// compiles a request's grammar (GBNF as llama.cpp writes it), JSON schema,
// or "any JSON object" into a Grammar: the language plus, for every grammar state,
// which tokens of the vocabulary can continue it (computed at compile time
// and cached, so a step's mask costs microseconds). A Grammar is immutable
// and shared by the sequences that use it; each sequence walks it with a
// GrammarMatcher (engine/grammar_matcher.h).
//
// The engine is xgrammar's C++ core (the field's choice, as in vLLM and
// SGLang), built from its pinned source (cmake/xgrammar.cmake); nothing
// outside engine/grammar*.cpp sees it.
//
// The vocabulary is given to it as the bytes our detokenizer emits for each
// token (append_piece), so the grammar constrains exactly the text the
// client receives whatever the tokenizer kind (byte-level BPE, SentencePiece
// with byte fallback). Tokens that render as nothing (control, unknown) are
// never allowed; end-of-generation tokens are allowed only where the grammar
// is complete, and end the sequence there.
//
// Thread safety: a GrammarCompiler compiles from any thread (serialised
// inside); a Grammar is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/vocab.h"

namespace cohort::engine {

class Grammar {
 public:
  struct Compiled;  // xgrammar's compiled grammar
  explicit Grammar(std::shared_ptr<const Compiled> compiled, std::string description);

  // The vocabulary size the grammar was compiled for (its tokens' ids).
  int n_vocab() const;
  // What it was compiled from, for logs and generation settings ("json_schema: {...}").
  const std::string& description() const { return description_; }
  const Compiled& compiled() const { return *compiled_; }

 private:
  std::shared_ptr<const Compiled> compiled_;
  std::string description_;
};

class GrammarCompiler {
 public:
  // REQUIRES: `vocab` outlives nothing here (its token texts are copied).
  explicit GrammarCompiler(const tokenizer::Vocab& vocab);
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  // Each throws cohort::Error with the engine's message (naming the line and
  // column of a GBNF, the schema keyword at fault) when the input is not a
  // valid grammar or schema.
  // GBNF with root rule `root`, read as llama.cpp reads it: an empty
  // alternative (`ws ::= | " "`) is the empty string, `.` any one character
  // (engine/gbnf_dialect.h).
  std::shared_ptr<const Grammar> gbnf(std::string_view text) const;
  // A JSON schema (its JSON text): output on one line in one fixed layout
  // (", " and ": " separators, no other whitespace between tokens), so that
  // sampling cannot wander in spaces; properties the schema does not list
  // are not generated.
  std::shared_ptr<const Grammar> json_schema(std::string_view schema) const;
  // Any JSON object, in the layout of json_schema() (OpenAI's
  // response_format json_object).
  std::shared_ptr<const Grammar> any_json() const;

  int n_vocab() const { return n_vocab_; }

 private:
  struct Engine;  // xgrammar's tokenizer info and compiler, and a lock
  std::unique_ptr<Engine> engine_;
  int n_vocab_;
};

}  // namespace cohort::engine
