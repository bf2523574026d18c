// The grammar engine over real vocabularies: the default model's (byte-level
// BPE, 49k tokens) when it is installed, and a SentencePiece vocabulary with
// byte fallback built in memory. Masks are checked against every token's
// text, not against what the engine says of itself.
#include "engine/grammar.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "engine/candidates.h"
#include "engine/gbnf_dialect.h"
#include "engine/grammar_matcher.h"
#include "engine/sampler.h"
#include "gguf/gguf_file.h"
#include "server/schema_normalization.h"
#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::engine {
namespace grammar_test {

// The default model (scripts/default_model.py, found when the build was
// configured), or COHORT_TEST_MODEL; nullptr if neither is there.
const tokenizer::Tokenizer* model_tokenizer() {
  static const std::optional<tokenizer::Tokenizer> tok = []() -> std::optional<tokenizer::Tokenizer> {
    const char* env = std::getenv("COHORT_TEST_MODEL");
    const std::string path = env != nullptr ? env : COHORT_DEFAULT_MODEL;
    if (path.empty() || !std::filesystem::exists(path)) return std::nullopt;
    return tokenizer::Tokenizer::from_gguf(gguf::GgufFile::open(path).metadata());
  }();
  return tok ? &*tok : nullptr;
}

class ModelGrammar : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = model_tokenizer();
    if (tok_ == nullptr) GTEST_SKIP() << "the default model is not installed (scripts/setup.sh)";
    static GrammarCompiler compiler(tok_->vocab());
    compiler_ = &compiler;
  }
  std::string piece(int32_t id) const { return tok_->token_to_piece(id, false); }
  bool eog(int32_t id) const { return tok_->is_eog(id); }

  const tokenizer::Tokenizer* tok_ = nullptr;
  GrammarCompiler* compiler_ = nullptr;
};

// Every token is allowed exactly when its text is a non-empty prefix of one
// of `words` minus what is already matched (`done`).
void expect_mask_is_prefixes(GrammarMatcher& m, const tokenizer::Tokenizer& tok, const std::string& done,
                             const std::vector<std::string>& words) {
  int n_allowed = 0;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const std::string p = tok.token_to_piece(id, false);
    bool fits = false;
    for (const std::string& w : words) {
      fits |= !p.empty() && !tok.is_eog(id) && w.starts_with(done) && w.substr(done.size()).starts_with(p);
    }
    ASSERT_EQ(m.allows(id), fits) << "token " << id << " '" << p << "' after '" << done << "'";
    n_allowed += fits;
  }
  EXPECT_GT(n_allowed, 0);
}

TEST_F(ModelGrammar, MaskAllowsExactlyTheTokensThatFitTheGrammar) {
  GrammarMatcher m(compiler_->gbnf(R"(root ::= "yes" | "no thanks")"));
  expect_mask_is_prefixes(m, *tok_, "", {"yes", "no thanks"});
  const int32_t n = tok_->encode("n", false, false).at(0);
  ASSERT_TRUE(m.accept(n));
  expect_mask_is_prefixes(m, *tok_, "n", {"yes", "no thanks"});
  EXPECT_FALSE(m.completed());
}

TEST_F(ModelGrammar, EndOfGenerationOnlyWhereTheGrammarIsComplete) {
  GrammarMatcher m(compiler_->gbnf(R"(root ::= "yes")"));
  for (int32_t id : tok_->encode("yes", false, false)) {
    for (int32_t e = 0; e < tok_->n_vocab(); ++e) {
      ASSERT_FALSE(eog(e) && m.allows(e)) << e;
    }
    ASSERT_TRUE(m.accept(id));
  }
  EXPECT_TRUE(m.completed());
  int n_allowed = 0;
  for (int32_t id = 0; id < tok_->n_vocab(); ++id) {
    ASSERT_EQ(m.allows(id), eog(id)) << id << " '" << piece(id) << "'";
    n_allowed += m.allows(id);
  }
  EXPECT_GT(n_allowed, 0);
  ASSERT_TRUE(m.accept(tok_->eos()));
  EXPECT_TRUE(m.terminated());
  // Ended: nothing is allowed, and asking is no error.
  std::vector<uint32_t> words(static_cast<size_t>((tok_->n_vocab() + 31) / 32), 0xFFFFFFFFu);
  m.write_mask(words);
  for (uint32_t w : words) ASSERT_EQ(w, 0u);
  EXPECT_FALSE(m.allows(tok_->eos()));
}

TEST_F(ModelGrammar, RejectsATokenTheGrammarDoesNotAllowAndKeepsItsState) {
  GrammarMatcher m(compiler_->gbnf(R"(root ::= [a-z]+ "!")"));
  const int32_t digit = tok_->encode("7", false, false).at(0);
  EXPECT_FALSE(m.accept(digit));
  EXPECT_FALSE(m.accept(tok_->eos()));
  EXPECT_FALSE(m.accept(-1));
  EXPECT_FALSE(m.accept(tok_->n_vocab()));
  EXPECT_TRUE(m.accept(tok_->encode("hello", false, false).at(0)));
}

TEST_F(ModelGrammar, ApplySetsDisallowedLogitsAndThePaddingToMinusInfinity) {
  GrammarMatcher m(compiler_->gbnf(R"(root ::= "{" [0-9]+ "}")"));
  std::vector<float> logits(static_cast<size_t>(tok_->n_vocab()) + 70, 1.0f);  // a wider row
  m.apply(logits);
  for (size_t i = 0; i < logits.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    ASSERT_EQ(std::isfinite(logits[i]), id < tok_->n_vocab() && m.allows(id)) << i;
    ASSERT_TRUE(!std::isfinite(logits[i]) || piece(id).starts_with("{")) << i << " '" << piece(id) << "'";
  }
  const int32_t brace = tok_->encode("{", false, false).at(0);
  EXPECT_TRUE(std::isfinite(logits[static_cast<size_t>(brace)]));
}

// Draws tokens at temperature 1 from random logits under `grammar` until
// an end-of-generation token or `max_tokens`; returns the text.
std::string sample_text(std::shared_ptr<const Grammar> grammar, const tokenizer::Tokenizer& tok, uint32_t seed,
                        int max_tokens, bool* ended) {
  SamplingParams p;
  p.temp = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  p.grammar = std::move(grammar);
  Sampler s(p, tok.n_vocab());
  EXPECT_EQ(s.best_needed(1024), 0);  // top_k 0: the whole row
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(tok.n_vocab()));
  std::string text;
  *ended = false;
  for (int i = 0; i < max_tokens && !*ended; ++i) {
    for (size_t t = 0; t < logits.size(); ++t) logits[t] = noise(rng);
    for (int32_t e : tok.vocab().eog_ids()) logits[static_cast<size_t>(e)] += 6.0f;  // end where it may
    const int32_t id = s.sample(logits);
    s.accept(id);
    *ended = tok.is_eog(id);
    if (!*ended) text += tok.token_to_piece(id, false);
  }
  return text;
}

size_t characters(const std::string& utf8) {
  size_t n = 0;
  for (const char c : utf8) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

TEST_F(ModelGrammar, SampledTextMatchesAJsonSchema) {
  const auto schema = compiler_->json_schema(R"({"type": "object",
      "properties": {"name": {"type": "string", "maxLength": 8},
                     "tags": {"type": "array", "items": {"enum": ["red", "green"]}, "maxItems": 3},
                     "ok": {"type": "boolean"}},
      "required": ["name", "ok"]})");
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    bool ended = false;
    const std::string text = sample_text(schema, *tok_, seed, 120, &ended);
    ASSERT_TRUE(ended) << text;
    const auto j = nlohmann::json::parse(text, nullptr, false);
    ASSERT_TRUE(j.is_object()) << text;
    ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << text;
    EXPECT_LE(characters(j["name"].get<std::string>()), 8u) << text;  // maxLength counts characters
    ASSERT_TRUE(j.contains("ok") && j["ok"].is_boolean()) << text;
    for (const auto& [key, value] : j.items()) EXPECT_TRUE(key == "name" || key == "tags" || key == "ok") << text;
    if (j.contains("tags")) {
      ASSERT_TRUE(j["tags"].is_array()) << text;
      EXPECT_LE(j["tags"].size(), 3u) << text;
      for (const auto& t : j["tags"]) EXPECT_TRUE(t == "red" || t == "green") << text;
    }
    // Compact: the fixed separators ", " and ": " only, never a newline.
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    EXPECT_EQ(text.find("  "), std::string::npos) << text;
  }
}

TEST_F(ModelGrammar, TheSamplerRefusesATokenTheGrammarDoesNotAllowAndMasksFirst) {
  SamplingParams p;
  p.temp = 0.0f;  // greedy: the best allowed token, whatever the best logit
  p.grammar = compiler_->gbnf(R"(root ::= "yes")");
  Sampler s(p, tok_->n_vocab());
  const int32_t no = tok_->encode("no", false, false).at(0);
  EXPECT_THROW(s.accept(no), Error);
  s.accept_prompt(no);  // prompt tokens feed the penalties only
  std::vector<float> logits(static_cast<size_t>(tok_->n_vocab()), 0.0f);
  logits[static_cast<size_t>(no)] = 100.0f;
  const int32_t first = s.sample(logits);
  EXPECT_TRUE(std::string("yes").starts_with(piece(first))) << piece(first);
  s.accept(first);
}

// A device selects a constrained row's best logits after the grammar's
// mask (Sampler::write_mask, Batch::token_masks): sampling from those picks
// what sampling the whole row picks, seed for seed.
TEST_F(ModelGrammar, BestLogitsOfTheMaskedRowSampleAsTheWholeRow) {
  SamplingParams p;
  p.temp = 1.0f;
  p.top_k = 40;
  p.seed = 11;
  p.grammar = compiler_->json_schema(R"({"type": "object", "properties": {"id": {"type": "integer"},
      "name": {"type": "string", "maxLength": 6}}, "required": ["id", "name"]})");
  Sampler whole(p, tok_->n_vocab());
  Sampler best(p, tok_->n_vocab());
  ASSERT_EQ(best.best_needed(64), 40);
  const size_t n = static_cast<size_t>(tok_->n_vocab());
  std::vector<uint32_t> words(static_cast<size_t>((n + 31) / 32));
  std::vector<float> logits(n), masked(n);
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  const std::vector<uint8_t> no_skip(n, 0);
  Candidates selected;
  bool ended = false;
  for (int i = 0; i < 80 && !ended; ++i) {
    for (float& l : logits) l = noise(rng);
    for (int32_t e : tok_->vocab().eog_ids()) logits[static_cast<size_t>(e)] += 6.0f;
    const int32_t want = whole.sample(logits);
    best.write_mask(words);
    for (size_t t = 0; t < n; ++t) {
      masked[t] = ((words[t / 32] >> (t % 32)) & 1u) != 0 ? logits[t] : -std::numeric_limits<float>::infinity();
    }
    select_top_k(selected, masked, 40, {}, no_skip);
    ASSERT_EQ(best.sample_best(std::span(selected.data).first(40)), want) << "token " << i;
    whole.accept(want);
    best.accept(want);
    ended = tok_->is_eog(want);
  }
  EXPECT_TRUE(ended);
  // Unmasked best logits are refused, not sampled from.
  Sampler fresh(p, tok_->n_vocab());
  for (float& l : logits) l = noise(rng);
  const int32_t word = tok_->encode("hello", false, false).at(0);  // not a JSON object's start
  logits[static_cast<size_t>(word)] = 50.0f;
  select_top_k(selected, logits, 40, {}, no_skip);
  EXPECT_THROW(fresh.sample_best(std::span(selected.data).first(40)), Error);
}

// A known limit, pinned down so that a newer engine that lifts it is
// noticed (and the README's clause on it goes): beside `pattern`, the
// engine (like llama.cpp's converter) does not enforce maxLength.
TEST_F(ModelGrammar, MaxLengthBesidePatternIsNotEnforced) {
  GrammarMatcher m(compiler_->json_schema(R"({"type": "string", "pattern": "^[a-z]+$", "maxLength": 3})"));
  ASSERT_TRUE(m.accept(tok_->encode("\"", false, false).at(0)));
  for (const char* letter : {"a", "b", "c", "d", "e"}) {
    const auto ids = tok_->encode(letter, false, false);
    ASSERT_EQ(ids.size(), 1u) << letter;
    EXPECT_TRUE(m.accept(ids[0])) << "a fourth or fifth letter: " << letter;
  }
}

// Whether the engine takes `text` whole under `schema`, a character a token.
bool takes_whole(GrammarCompiler& compiler, const tokenizer::Tokenizer& tok, const std::string& schema,
                 const std::string& text) {
  GrammarMatcher m(compiler.json_schema(schema));
  for (const char c : text) {
    const auto ids = tok.encode(std::string(1, c), false, false);
    if (ids.size() != 1) {
      ADD_FAILURE() << "no one token for character " << static_cast<int>(static_cast<unsigned char>(c));
      return false;
    }
    if (!m.accept(ids[0])) return false;
  }
  return m.completed();
}

// The server's date and time patterns (server/schema_normalization.h) as
// the engine reads them: the days of each month, up to 3 digits of a
// second, an offset or Z, and nothing else.
TEST_F(ModelGrammar, DateAndTimePatternsHoldInTheEngine) {
  auto schema = [](const char* format) {
    return nlohmann::json{{"type", "string"}, {"pattern", *server::rfc3339_pattern(format)}}.dump();
  };
  const std::string date_time = schema("date-time"), time = schema("time"), date = schema("date");
  for (const char* ok : {"\"2024-02-29T23:59:59.123+05:30\"", "\"2023-12-31T00:00:00Z\"",
                         "\"0001-01-01T12:00:00.5-00:00\"", "\"2000-02-29T01:02:03.45Z\""}) {
    EXPECT_TRUE(takes_whole(*compiler_, *tok_, date_time, ok)) << ok;
  }
  for (const char* bad : {"\"2023-02-29T00:00:00Z\"", "\"1900-02-29T00:00:00Z\"", "\"2023-04-31T00:00:00Z\"",
                          "\"2023-01-01T00:00:60Z\"", "\"2023-01-01T00:00:00.1234Z\"", "\"2023-01-01T00:00:007Z\"",
                          "\"2023-01-01T24:00:00Z\"", "\"0000-01-01T00:00:00Z\"", "\"2023-01-01T00:00:00\""}) {
    EXPECT_FALSE(takes_whole(*compiler_, *tok_, date_time, bad)) << bad;
  }
  EXPECT_TRUE(takes_whole(*compiler_, *tok_, time, "\"13:31:02-13:31\""));
  EXPECT_FALSE(takes_whole(*compiler_, *tok_, time, "\"13:31:027-13:31\""));
  EXPECT_TRUE(takes_whole(*compiler_, *tok_, date, "\"2024-02-29\""));
  EXPECT_FALSE(takes_whole(*compiler_, *tok_, date, "\"2023-02-29\""));
}

// A string of bounded length (as the server writes it) takes at most that
// many characters and never a raw control character, which JSON forbids.
TEST_F(ModelGrammar, BoundedStringsTakeNoControlCharacter) {
  const std::string schema =
      server::normalize_schema(nlohmann::json::parse(R"({"type": "string", "minLength": 2, "maxLength": 4})")).dump();
  EXPECT_TRUE(takes_whole(*compiler_, *tok_, schema, "\"abcd\""));
  EXPECT_TRUE(takes_whole(*compiler_, *tok_, schema, "\"ab\""));
  EXPECT_FALSE(takes_whole(*compiler_, *tok_, schema, "\"abcde\""));
  EXPECT_FALSE(takes_whole(*compiler_, *tok_, schema, "\"a\""));
  for (const char* bad : {"\"ab\x01\"", "\"ab\x1b\"", "\"ab\x08" "c\"", "\"a\tb\""}) {
    EXPECT_FALSE(takes_whole(*compiler_, *tok_, schema, bad)) << nlohmann::json(bad).dump();
  }
}

TEST_F(ModelGrammar, AnyJsonIsAnObject) {
  const auto grammar = compiler_->any_json();
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    bool ended = false;
    const std::string text = sample_text(grammar, *tok_, seed, 60, &ended);
    if (!ended) continue;  // a long value: cut, not checked
    const auto j = nlohmann::json::parse(text, nullptr, false);
    EXPECT_TRUE(j.is_object()) << text;
  }
}

TEST_F(ModelGrammar, LlamaCppEmptyAlternativesAreTheEmptyString) {
  // As llama.cpp's grammars/json.gbnf writes its optional whitespace.
  GrammarMatcher m(compiler_->gbnf("root ::= \"[\" ws \"1\" ws \"]\"\nws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"));
  for (int32_t id : tok_->encode("[1]", false, false)) ASSERT_TRUE(m.accept(id));
  EXPECT_TRUE(m.completed());
  GrammarMatcher spaced(compiler_->gbnf("root ::= \"a\" ( | \"b\" )"));
  ASSERT_TRUE(spaced.accept(tok_->encode("a", false, false).at(0)));
  EXPECT_TRUE(spaced.completed());
}

// Whether the grammar takes `text` whole (in the model's tokens) and is complete there.
bool takes(const std::shared_ptr<const Grammar>& grammar, const tokenizer::Tokenizer& tok, const std::string& text) {
  GrammarMatcher m(grammar);
  for (int32_t id : tok.encode(text, false, false)) {
    if (!m.accept(id)) return false;
  }
  return m.completed();
}

TEST_F(ModelGrammar, LlamaCppDotIsAnyOneCharacter) {
  const auto grammar = compiler_->gbnf("root ::= \"<\" . \">\"  # one character, any\n");
  for (const std::string inner : {"a", ".", "\n", "\"", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x99\x82"}) {
    EXPECT_TRUE(takes(grammar, *tok_, "<" + inner + ">")) << inner;
  }
  EXPECT_FALSE(takes(grammar, *tok_, "<>"));
  EXPECT_FALSE(takes(grammar, *tok_, "<ab>"));
  // Beside a repetition, a string and a group with an empty alternative.
  const auto repeated = compiler_->gbnf("root ::= \"x\".{2,3} ( | \"!\")");
  EXPECT_TRUE(takes(repeated, *tok_, "x\t\xc3\xa9"));
  EXPECT_TRUE(takes(repeated, *tok_, "xabc!"));
  EXPECT_FALSE(takes(repeated, *tok_, "xa"));
}

TEST_F(ModelGrammar, BadGrammarsAndSchemasAreErrorsNamingTheProblem) {
  auto message = [](auto&& compile) -> std::string {
    try {
      compile();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string undefined = message([&] { compiler_->gbnf("root ::= item+"); });
  EXPECT_NE(undefined.find("item"), std::string::npos) << undefined;
  EXPECT_NE(undefined.find("invalid grammar"), std::string::npos) << undefined;
  const std::string syntax = message([&] { compiler_->gbnf("root ::= \"a"); });
  EXPECT_NE(syntax.find("line 1"), std::string::npos) << syntax;
  const std::string no_root = message([&] { compiler_->gbnf("start ::= \"a\""); });
  EXPECT_NE(no_root.find("root"), std::string::npos) << no_root;
  const std::string type = message([&] { compiler_->json_schema(R"({"type": 123})"); });
  EXPECT_NE(type.find("invalid JSON schema"), std::string::npos) << type;
  const std::string not_json = message([&] { compiler_->json_schema("{\"type\": "); });
  EXPECT_NE(not_json.find("invalid JSON schema"), std::string::npos) << not_json;
}

// SentencePiece with byte fallback: "▁" is a space and <0x7B> is "{".
TEST(SpmGrammar, ByteTokensAndWordPiecesAreMaskedByTheirText) {
  const auto tok = tokenizer::Tokenizer::from_gguf(tokenizer::testing::spm_metadata(
      {.pieces = {{"\xe2\x96\x81yes", -1.0f}, {"yes", -2.0f}, {"no", -3.0f}, {"{", -4.0f}}}));
  GrammarCompiler compiler(tok.vocab());
  GrammarMatcher m(compiler.gbnf(R"(root ::= "{" " yes")"));
  const int32_t brace_byte = tokenizer::testing::spm_byte_id('{');
  const int32_t brace = tok.vocab().find("{");
  EXPECT_TRUE(m.allows(brace_byte));
  EXPECT_TRUE(m.allows(brace));
  EXPECT_FALSE(m.allows(tokenizer::testing::spm_byte_id(' ')));
  EXPECT_FALSE(m.allows(tok.eos()));
  ASSERT_TRUE(m.accept(brace_byte));
  EXPECT_TRUE(m.allows(tok.vocab().find("\xe2\x96\x81yes")));
  EXPECT_TRUE(m.allows(tokenizer::testing::spm_byte_id(' ')));
  EXPECT_FALSE(m.allows(tok.vocab().find("yes")));
  ASSERT_TRUE(m.accept(tok.vocab().find("\xe2\x96\x81yes")));
  EXPECT_TRUE(m.completed());
  EXPECT_TRUE(m.allows(tok.eos()));
  EXPECT_FALSE(m.allows(0));  // <unk> renders as nothing: never allowed
}

TEST(GbnfDialect, WritesTheEmptyStringWhereAnAlternativeIsEmpty) {
  EXPECT_EQ(rewrite_llama_gbnf("ws ::= | \" \""), "ws ::= \"\" | \" \"");
  EXPECT_EQ(rewrite_llama_gbnf("x ::= \"a\" |"), "x ::= \"a\" | \"\"");
  EXPECT_EQ(rewrite_llama_gbnf("x ::= ( | \"a\" | )"), "x ::= ( \"\" | \"a\" | \"\" )");
  EXPECT_EQ(rewrite_llama_gbnf("x ::= # none\n  | \"a\""), "x ::= \"\" # none\n  | \"a\"");
  // Inside strings, classes and comments nothing is an alternative.
  const std::string plain = "root ::= \"( | )\" [|(] # ( |\nb ::= \"\\\"|\" | \"c\"";
  EXPECT_EQ(rewrite_llama_gbnf(plain), plain);
}

TEST(GbnfDialect, WritesADotAsTheClassOfEveryCodePoint) {
  EXPECT_EQ(rewrite_llama_gbnf("root ::= ."), R"(root ::= [\u0000-\U0010FFFF])");
  EXPECT_EQ(rewrite_llama_gbnf("root ::= \"a\".{1,3} | (.)*"),
            R"(root ::= "a"[\u0000-\U0010FFFF]{1,3} | ([\u0000-\U0010FFFF])*)");
  EXPECT_EQ(rewrite_llama_gbnf("x ::= | ."), R"(x ::= "" | [\u0000-\U0010FFFF])");
  // Inside strings, classes and comments a dot is itself.
  const std::string plain = "root ::= \"a.b\" [.] [^.\\]] \"\\\".\" # any.\n";
  EXPECT_EQ(rewrite_llama_gbnf(plain), plain);
}

}  // namespace grammar_test
}  // namespace cohort::engine
