#include "engine/token_stream.h"

namespace cohort::engine {

TokenStream::TokenStream(const SamplingParams& sampling, int n_vocab, int n_ctx,
                         tokenizer::Detokenizer detok, StopParams stop)
    : sampler_((sampling.validate(), sampling), n_vocab, n_ctx),
      detok_(std::move(detok)),
      stop_(stop),
      params_(std::move(stop)) {}

void TokenStream::accept_prompt(std::span<const int32_t> prompt) {
  for (int32_t t : prompt) sampler_.accept_prompt(t);
}

StreamToken TokenStream::next(std::span<const float> logits) { return push(sampler_.sample(logits)); }

StreamToken TokenStream::next_best(std::span<const TokenLogit> best) { return push(sampler_.sample_best(best)); }

StreamToken TokenStream::push(int32_t token) {
  StreamToken tok;
  tok.id = token;
  sampler_.accept(tok.id);
  last_token_ = tok.id;
  const bool eog = params_.eog_tokens.contains(tok.id);
  tok.text = stop_.push(tok.id, eog ? std::string() : detok_.push(tok.id)).text;
  return tok;
}

}  // namespace cohort::engine
