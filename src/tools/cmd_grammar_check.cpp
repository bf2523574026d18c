// `cohort grammar-check`: whether texts belong to the language a grammar or
// JSON schema constrains the server's output to (what llama.cpp's
// llama-gbnf-validator does for its own engine).
//
//   cohort grammar-check -m FILE (--grammar-file G | --json-schema-file S) [TEXT_FILE...]
//       each text file is one text; prints "FILE: accepted", "FILE:
//       incomplete" (a proper prefix of a text of the language) or "FILE:
//       rejected at byte N"; the exit status is 1 if any text is not accepted;
//   cohort grammar-check -m FILE (--grammar-file G | --json-schema-file S) --jsonl
//       reads JSON lines from stdin, each a JSON string, and answers each
//       with one line {"accepted": B, "bytes": N} (N: the bytes of the
//       longest prefix of whole tokens the grammar allows).
//
// The grammar or schema goes through the request path of the server (a
// schema is normalized first: server/structured_output.h) and is compiled
// for the model file's vocabulary; a text is checked as the tokens the
// model's tokenizer makes of it, each token's bytes being what the grammar
// constrains (engine/grammar.h), so any tokenization of the same bytes gives
// the same answer.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_file.h"
#include "engine/grammar.h"
#include "engine/grammar_matcher.h"
#include "gguf/gguf_file.h"
#include "server/request_error.h"
#include "server/structured_output.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"

namespace cohort::tools {
// Named, so that the helpers keep their names where the tools' files are
// compiled together (unity builds).
namespace grammar_check {
namespace {

// The server's (ordered: an object schema's properties are generated in the
// order they are written).
using server::Json;

// The grammar of a grammar file or a JSON-schema file, as a request
// carrying it would get; a refused one is an error naming the file.
std::shared_ptr<const engine::Grammar> load_grammar(const engine::GrammarCompiler& compiler,
                                                    const std::string& grammar_file,
                                                    const std::string& schema_file) {
  Json body = Json::object();
  const std::string& path = grammar_file.empty() ? schema_file : grammar_file;
  const std::string text = read_text_file(path);
  if (!grammar_file.empty()) {
    body["grammar"] = text;
  } else {
    try {
      body["json_schema"] = Json::parse(text);
    } catch (const Json::parse_error& e) {
      fail("{} is not JSON: {}", path, e.what());
    }
  }
  try {
    auto grammar = server::read_structured_output(body, &compiler);
    if (!grammar) fail("{} constrains nothing", path);
    return grammar;
  } catch (const server::RequestError& e) {
    fail("{}: {}", path, e.what());
  }
}

struct Verdict {
  bool accepted = false;  // every token allowed, and the grammar complete at the end
  size_t bytes = 0;       // bytes of the tokens allowed
};

Verdict check(const tokenizer::Tokenizer& tok, const std::shared_ptr<const engine::Grammar>& grammar,
              const std::string& text) {
  engine::GrammarMatcher matcher(grammar);
  Verdict v;
  for (int32_t id : tok.encode(text, /*add_special=*/false, /*parse_special=*/false)) {
    if (!matcher.accept(id)) return v;
    v.bytes += tok.token_to_piece(id, false).size();
  }
  v.accepted = matcher.completed();
  return v;
}

void run_jsonl(const tokenizer::Tokenizer& tok, const std::shared_ptr<const engine::Grammar>& grammar) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    Json text;
    try {
      text = Json::parse(line);
    } catch (const Json::parse_error& e) {
      fail("stdin: a line is not JSON: {}", e.what());
    }
    if (!text.is_string()) fail("stdin: each line must be a JSON string");
    const Verdict v = check(tok, grammar, text.get<std::string>());
    std::cout << Json{{"accepted", v.accepted}, {"bytes", v.bytes}}.dump() << '\n'
              << std::flush;
  }
}

}  // namespace
}  // namespace grammar_check

void register_grammar_check(CLI::App& app) {
  struct Options {
    std::string model, grammar_file, schema_file;
    std::vector<std::string> texts;
    bool jsonl = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("grammar-check", "whether texts belong to a grammar's or JSON schema's language");
  cmd->add_option("-m,--model", opt->model, "GGUF file whose vocabulary the grammar is compiled for")->required();
  auto* g = cmd->add_option("--grammar-file", opt->grammar_file, "GBNF grammar (llama.cpp's dialect)");
  auto* s = cmd->add_option("--json-schema-file", opt->schema_file, "JSON schema");
  g->excludes(s);
  cmd->add_option("texts", opt->texts, "files, each one text to check");
  cmd->add_flag("--jsonl", opt->jsonl, "read texts as JSON strings, one a line, from stdin");
  cmd->callback([opt] {
    if (opt->grammar_file.empty() && opt->schema_file.empty()) fail("give --grammar-file or --json-schema-file");
    if (opt->jsonl == !opt->texts.empty()) fail("give text files or --jsonl (not both)");
    const gguf::GgufFile file = gguf::GgufFile::open(opt->model);
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file.metadata());
    const engine::GrammarCompiler compiler(tok.vocab());
    const auto grammar = grammar_check::load_grammar(compiler, opt->grammar_file, opt->schema_file);
    if (opt->jsonl) {
      grammar_check::run_jsonl(tok, grammar);
      return;
    }
    size_t refused = 0;
    for (const std::string& path : opt->texts) {
      const std::string text = read_text_file(path);
      const grammar_check::Verdict v = grammar_check::check(tok, grammar, text);
      refused += v.accepted ? 0 : 1;
      if (v.accepted) {
        fmt::print("{}: accepted\n", path);
      } else if (v.bytes == text.size()) {
        fmt::print("{}: incomplete\n", path);
      } else {
        fmt::print("{}: rejected at byte {}\n", path, v.bytes);
      }
    }
    if (refused > 0) fail("{} of {} texts not in the language", refused, opt->texts.size());
  });
}

}  // namespace cohort::tools
