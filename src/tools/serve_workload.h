// What `cohort bench-serve` sends, and when: a list of requests with their
// send times, made either at random (vLLM's "random" dataset: uniform
// lengths around a mean, fixed or Poisson arrivals at a rate) or read from a
// scenario file.
//
// Scenario files are JSON: a list of requests, or an object
// {"description": "...", "requests": [...]}. Each request is
//   {"name": "long",          optional; default "r<index>"
//    "at": 2.0,               seconds from the start of the run, >= 0
//    "prompt_tokens": 2000,   the length of a made-up prompt, in tokens,
//      or "prompt": "text",   the prompt itself (exactly one of the two)
//    "max_tokens": 200}       tokens to generate, >= 1
// Unknown fields are refused, so that a misspelt one does not pass silently.
//
// Everything here is deterministic for a seed. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::tools {

struct RequestSpec {
  std::string name;
  double at_s = 0;         // when to send it, seconds after the start
  int prompt_tokens = 0;   // length of the made-up prompt; 0 when `prompt` is given
  std::string prompt;      // the prompt text (made up later from prompt_tokens if empty)
  int max_tokens = 1;
};

enum class Arrival { fixed, poisson };

// "fixed" or "poisson"; cohort::Error otherwise.
Arrival parse_arrival(std::string_view name);
const char* arrival_name(Arrival a);

// Send times of n requests at `rate` per second: the first at 0, then gaps
// of exactly 1/rate (fixed) or drawn from an exponential distribution of
// mean 1/rate (poisson). An infinite rate sends everything at 0.
// REQUIRES: n >= 0, rate > 0.
std::vector<double> arrival_times(int n, double rate, Arrival arrival, std::mt19937_64& rng);

// n lengths drawn uniformly from the integers in
// [floor(mean * (1 - ratio)), floor(mean * (1 + ratio))], at least 1 each
// (vLLM's --random-range-ratio). REQUIRES: mean >= 1, 0 <= ratio < 1.
std::vector<int> sample_lengths(int n, int mean, double ratio, std::mt19937_64& rng);

struct RandomWorkload {
  int num_prompts = 100;
  double request_rate = 0;       // requests per second; infinity: all at once
  Arrival arrival = Arrival::poisson;
  uint64_t seed = 0;
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0;
};

// Throws cohort::Error naming the flag at fault.
void validate(const RandomWorkload& w);
std::vector<RequestSpec> random_workload(const RandomWorkload& w);

// Parses a scenario (see above); `source` (a file name) prefixes every
// error. The requests come back ordered by `at` (ties keep file order).
std::vector<RequestSpec> parse_scenario(std::string_view json_text, const std::string& source);
// Reads and parses a scenario file; cohort::Error if unreadable or bad.
std::vector<RequestSpec> load_scenario(const std::string& path);

// Made-up prompts: random words, each of which the server's tokenizer turns
// into exactly one token when preceded by a space, so that n words (after
// the tokens the server adds itself, such as BOS) make a prompt of a known
// length. Without calibration (no /tokenize on the server) every word of
// the built-in list is assumed to be one token; the real counts are then
// read from the server's usage.
class PromptMaker {
 public:
  PromptMaker();  // the built-in word list, uncalibrated, no added tokens

  // The built-in word list (candidates for calibration).
  static const std::vector<std::string>& candidate_words();

  // Keeps only `single_token_words` (REQUIRES: non-empty) and records how
  // many tokens the server adds to every prompt.
  void calibrate(std::vector<std::string> single_token_words, int n_added_tokens);
  bool calibrated() const { return calibrated_; }
  size_t n_words() const { return words_.size(); }
  int n_added_tokens() const { return n_added_; }

  // A prompt of about n_tokens tokens (exactly, when calibrated): a space
  // and a word per token. REQUIRES: n_tokens >= 1.
  std::string make(int n_tokens, std::mt19937_64& rng) const;

 private:
  std::vector<std::string> words_;
  int n_added_ = 0;
  bool calibrated_ = false;
};

}  // namespace cohort::tools
