// The sample / accept / stop loop of one sequence, written once for every
// caller (the server's slots, `cohort run`): the sampler picks a token from
// the logits and remembers it for its penalties, the detokenizer turns it
// into text, and the stop checker decides whether the sequence ends and
// which text may be shown. An end-of-generation token (one of the stop
// parameters' eog_tokens) ends the sequence and shows no text of its own.
//
// What is not here: log-probabilities, timing and delivery of the text,
// which callers do when it suits them (the engine loop while the device
// computes the next step).
//
// Thread safety: none; one stream per sequence.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "engine/sampler.h"
#include "engine/stop.h"
#include "tokenizer/detokenizer.h"

namespace cohort::engine {

struct StreamToken {
  int32_t id = 0;
  std::string text;  // what may be shown now (may be ""; never a stop string)
};

class TokenStream {
 public:
  // Throws cohort::Error for invalid sampling or stop parameters.
  TokenStream(const SamplingParams& sampling, int n_vocab, int n_ctx, tokenizer::Detokenizer detok,
              StopParams stop);

  // Makes the prompt part of the penalties' history (as llama-server does).
  void accept_prompt(std::span<const int32_t> prompt);

  // Samples the next token from `logits` [n_vocab] and feeds it through.
  // Throws cohort::Error (from the sampler, e.g. logits with no finite
  // value) before anything changed. REQUIRES: !finished().
  StreamToken next(std::span<const float> logits);
  // next() given only the row's best logits (Sampler::sample_best).
  StreamToken next_best(std::span<const TokenLogit> best);
  // Sampler::best_needed: how many of a row's best logits decide next().
  int best_needed(int cap) const { return sampler_.best_needed(cap); }
  // Sampler::write_mask and constrained(): the grammar's mask of the next token.
  void write_mask(std::span<uint32_t> words) { sampler_.write_mask(words); }
  bool constrained() const { return sampler_.constrained(); }

  bool finished() const { return stop_.finished(); }
  FinishReason reason() const { return stop_.reason(); }
  int n_generated() const { return stop_.n_generated(); }
  int32_t last_token() const { return last_token_; }
  // The stop string that ended the stream, or "".
  const std::string& matched_stop() const { return stop_.matched_stop(); }
  // Ends the stream from outside: the text held back so far, released.
  std::string flush() { return stop_.finished() ? std::string() : stop_.flush(); }

 private:
  Sampler sampler_;
  tokenizer::Detokenizer detok_;
  StopChecker stop_;
  StopParams params_;  // kept for the eog set
  int32_t last_token_ = -1;

  StreamToken push(int32_t token);  // accepts the sampled token, detokenizes, checks stops
};

}  // namespace cohort::engine
