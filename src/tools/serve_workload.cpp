#include "tools/serve_workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace cohort::tools {
namespace {

using Json = nlohmann::json;

constexpr int kMaxScenarioTokens = 1 << 24;  // a sanity bound on prompt_tokens / max_tokens

const char* type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

// A positive integer field of request `i`; `where` prefixes errors.
int read_count(const Json& v, const std::string& where, const char* field) {
  if (!v.is_number_integer()) fail("{}: '{}' must be an integer, got {} ({})", where, field, type_name(v), v.dump());
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxScenarioTokens);
  const int64_t x = huge ? int64_t{kMaxScenarioTokens} + 1 : v.get<int64_t>();
  if (x < 1 || x > kMaxScenarioTokens) {
    fail("{}: '{}' must be between 1 and {}, got {}", where, field, kMaxScenarioTokens, v.dump());
  }
  return static_cast<int>(x);
}

RequestSpec read_request(const Json& r, size_t i, const std::string& source) {
  const std::string where = fmt::format("{}: request {}", source, i);
  if (!r.is_object()) fail("{}: must be an object, got {}", where, type_name(r));
  static const std::set<std::string> kFields = {"name", "at", "prompt_tokens", "prompt", "max_tokens"};
  for (const auto& [key, value] : r.items()) {
    if (!kFields.count(key)) {
      fail("{}: unknown field '{}' (known: name, at, prompt_tokens, prompt, max_tokens)", where, key);
    }
  }
  RequestSpec s;
  s.name = fmt::format("r{}", i);
  if (const auto it = r.find("name"); it != r.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) fail("{}: 'name' must be a non-empty string", where);
    s.name = it->get<std::string>();
  }
  const auto at = r.find("at");
  if (at == r.end()) fail("{}: 'at' (seconds from the start) is required", where);
  if (!at->is_number()) fail("{}: 'at' must be a number of seconds, got {}", where, type_name(*at));
  s.at_s = at->get<double>();
  if (!std::isfinite(s.at_s) || s.at_s < 0) fail("{}: 'at' must be >= 0, got {}", where, at->dump());
  const auto pt = r.find("prompt_tokens");
  const auto p = r.find("prompt");
  if ((pt == r.end()) == (p == r.end())) fail("{}: give exactly one of 'prompt_tokens' and 'prompt'", where);
  if (pt != r.end()) s.prompt_tokens = read_count(*pt, where, "prompt_tokens");
  if (p != r.end()) {
    if (!p->is_string() || p->get<std::string>().empty()) fail("{}: 'prompt' must be a non-empty string", where);
    s.prompt = p->get<std::string>();
  }
  const auto mt = r.find("max_tokens");
  if (mt == r.end()) fail("{}: 'max_tokens' is required", where);
  s.max_tokens = read_count(*mt, where, "max_tokens");
  return s;
}

}  // namespace

Arrival parse_arrival(std::string_view name) {
  if (name == "fixed") return Arrival::fixed;
  if (name == "poisson") return Arrival::poisson;
  fail("--arrival must be fixed or poisson, got '{}'", name);
}

const char* arrival_name(Arrival a) { return a == Arrival::fixed ? "fixed" : "poisson"; }

std::vector<double> arrival_times(int n, double rate, Arrival arrival, std::mt19937_64& rng) {
  std::vector<double> at(static_cast<size_t>(std::max(n, 0)), 0.0);
  if (std::isinf(rate)) return at;
  std::exponential_distribution<double> gap(rate);
  for (size_t i = 1; i < at.size(); ++i) {
    at[i] = at[i - 1] + (arrival == Arrival::fixed ? 1.0 / rate : gap(rng));
  }
  return at;
}

std::vector<int> sample_lengths(int n, int mean, double ratio, std::mt19937_64& rng) {
  // ref: vLLM benchmarks/datasets.py RandomDataset (integers in [lo, hi])
  const int lo = std::max(1, static_cast<int>(std::floor(mean * (1.0 - ratio))));
  const int hi = std::max(lo, static_cast<int>(std::floor(mean * (1.0 + ratio))));
  std::uniform_int_distribution<int> len(lo, hi);
  std::vector<int> out(static_cast<size_t>(std::max(n, 0)));
  for (int& x : out) x = len(rng);
  return out;
}

void validate(const RandomWorkload& w) {
  if (w.num_prompts < 1) fail("--num-prompts must be >= 1, got {}", w.num_prompts);
  if (!(w.request_rate > 0)) fail("--request-rate must be > 0 (or inf), got {}", w.request_rate);
  if (w.input_len < 1) fail("--random-input-len must be >= 1, got {}", w.input_len);
  if (w.output_len < 1) fail("--random-output-len must be >= 1, got {}", w.output_len);
  if (!(w.range_ratio >= 0 && w.range_ratio < 1)) {
    fail("--random-range-ratio must be in [0, 1), got {}", w.range_ratio);
  }
}

std::vector<RequestSpec> random_workload(const RandomWorkload& w) {
  validate(w);
  std::mt19937_64 rng(w.seed);
  const std::vector<double> at = arrival_times(w.num_prompts, w.request_rate, w.arrival, rng);
  const std::vector<int> in = sample_lengths(w.num_prompts, w.input_len, w.range_ratio, rng);
  const std::vector<int> out = sample_lengths(w.num_prompts, w.output_len, w.range_ratio, rng);
  std::vector<RequestSpec> specs(static_cast<size_t>(w.num_prompts));
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i].name = fmt::format("r{}", i);
    specs[i].at_s = at[i];
    specs[i].prompt_tokens = in[i];
    specs[i].max_tokens = out[i];
  }
  return specs;
}

std::vector<RequestSpec> parse_scenario(std::string_view json_text, const std::string& source) {
  Json doc;
  try {
    doc = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    fail("{}: not valid JSON: {}", source, e.what());
  }
  const Json* list = &doc;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) {
      if (key != "requests" && key != "description") {
        fail("{}: unknown top-level field '{}' (known: description, requests)", source, key);
      }
    }
    const auto it = doc.find("requests");
    if (it == doc.end()) fail("{}: no 'requests' list", source);
    list = &*it;
  }
  if (!list->is_array()) fail("{}: expected a list of requests, got {}", source, type_name(*list));
  if (list->empty()) fail("{}: the list of requests is empty", source);
  std::vector<RequestSpec> specs;
  for (size_t i = 0; i < list->size(); ++i) specs.push_back(read_request((*list)[i], i, source));
  std::stable_sort(specs.begin(), specs.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.at_s < b.at_s; });
  return specs;
}

std::vector<RequestSpec> load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open scenario file '{}'", path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_scenario(text.str(), path);
}

PromptMaker::PromptMaker() : words_(candidate_words()) {}

const std::vector<std::string>& PromptMaker::candidate_words() {
  // Common English words: most are one token with a leading space in the
  // vocabularies of current models.
  static const std::vector<std::string> kWords = {
      "the",    "of",     "and",    "to",     "in",     "is",     "that",   "for",    "it",     "as",
      "was",    "with",   "be",     "by",     "on",     "not",    "he",     "this",   "are",    "or",
      "his",    "from",   "at",     "which",  "but",    "have",   "an",     "had",    "they",   "you",
      "were",   "their",  "one",    "all",    "we",     "can",    "her",    "has",    "there",  "been",
      "if",     "more",   "when",   "will",   "would",  "who",    "so",     "no",     "time",   "people",
      "water",  "light",  "river",  "house",  "world",  "school", "city",   "market", "music",  "story",
      "garden", "window", "table",  "paper",  "money",  "family", "friend", "morning","evening","summer",
      "winter", "country","number", "letter", "mother", "father", "child",  "animal", "forest", "island",
      "mountain","road",  "bridge", "train",  "station","office", "doctor", "teacher","student","village",
      "small",  "large",  "great",  "little", "old",    "new",    "long",   "short",  "high",   "early",
      "young",  "black",  "white",  "green",  "blue",   "red",    "open",   "close",  "happy",  "simple",
      "run",    "walk",   "read",   "write",  "build",  "carry",  "start",  "stop",   "turn",   "move",
      "play",   "work",   "help",   "show",   "hear",   "keep",   "bring",  "begin",  "learn",  "change",
      "after",  "before", "under",  "over",   "between","during", "without","against","around", "through",
      "because","while",  "where",  "again",  "always", "never",  "often",  "later",  "today",  "together"};
  return kWords;
}

void PromptMaker::calibrate(std::vector<std::string> single_token_words, int n_added_tokens) {
  words_ = std::move(single_token_words);
  n_added_ = std::max(0, n_added_tokens);
  calibrated_ = true;
}

std::string PromptMaker::make(int n_tokens, std::mt19937_64& rng) const {
  const int n_words = std::max(1, n_tokens - n_added_);
  std::uniform_int_distribution<size_t> pick(0, words_.size() - 1);
  std::string text;
  for (int i = 0; i < n_words; ++i) {
    text += ' ';
    text += words_[pick(rng)];
  }
  return text;
}

}  // namespace cohort::tools
