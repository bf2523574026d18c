// Bad request bodies for /v1/completions and /v1/chat/completions, with the
// status and the field (OpenAI's "param") each must be refused with. Used
// by the parser's tests and again over HTTP. Assumes the test tokenizer of
// server_testing.h (259 tokens, one byte per token) and n_ctx = 64.
#pragma once

#include <string>
#include <vector>

#include "server/openai_request.h"

namespace cohort::server::testing {

struct BadRequest {
  Endpoint endpoint;
  std::string body;
  int status;
  std::string param;  // "" when no single field is at fault
};

inline std::vector<BadRequest> bad_requests() {
  const Endpoint C = Endpoint::completions, H = Endpoint::chat;
  const std::string p = R"("prompt": "hi", )";
  const std::string m = R"("messages": [{"role": "user", "content": "hi"}], )";
  auto c = [&](const std::string& fields) { return "{" + p + fields + "}"; };
  auto h = [&](const std::string& fields) { return "{" + m + fields + "}"; };
  std::string deep = R"({"prompt": "hi", "x": )";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  deep += "}";
  return {
      {C, "{", 400, ""},
      {C, "", 400, ""},
      {C, "[1, 2]", 400, ""},
      {C, R"("text")", 400, ""},
      {C, R"({"prompt": "hi",})", 400, ""},
      {C, deep, 400, ""},
      {C, "{}", 400, "prompt"},
      {C, R"({"prompt": 5})", 400, "prompt"},
      {C, R"({"prompt": ""})", 400, "prompt"},
      {C, R"({"prompt": []})", 400, "prompt"},
      {C, R"({"prompt": [1, "a"]})", 400, "prompt"},
      {C, R"({"prompt": [1, 99999]})", 400, "prompt"},
      {C, R"({"prompt": [-1]})", 400, "prompt"},
      {C, R"({"prompt": [1.5]})", 400, "prompt"},
      {C, R"({"prompt": ["a", "b"]})", 400, "prompt"},
      {C, R"({"prompt": {"text": "hi"}})", 400, "prompt"},
      {C, "{\"prompt\": \"" + std::string(100, 'x') + "\"}", 400, "prompt"},
      {C, c(R"("max_tokens": 0)"), 400, "max_tokens"},
      {C, c(R"("max_tokens": -5)"), 400, "max_tokens"},
      {C, c(R"("max_tokens": "10")"), 400, "max_tokens"},
      {C, c(R"("max_tokens": 1.5)"), 400, "max_tokens"},
      {C, c(R"("max_tokens": 99999999999)"), 400, "max_tokens"},
      {C, c(R"("max_completion_tokens": 0)"), 400, "max_completion_tokens"},
      {C, c(R"("n_predict": 0)"), 400, "n_predict"},
      {C, c(R"("n_predict": -2)"), 400, "n_predict"},
      {C, c(R"("temperature": 2.5)"), 400, "temperature"},
      {C, c(R"("temperature": -0.1)"), 400, "temperature"},
      {C, c(R"("temperature": "hot")"), 400, "temperature"},
      {C, c(R"("top_p": 0)"), 400, "top_p"},
      {C, c(R"("top_p": 1.5)"), 400, "top_p"},
      {C, c(R"("top_p": true)"), 400, "top_p"},
      {C, c(R"("top_k": -2)"), 400, "top_k"},
      {C, c(R"("top_k": 1.5)"), 400, "top_k"},
      {C, c(R"("min_p": 1.5)"), 400, "min_p"},
      {C, c(R"("min_p": [0.1])"), 400, "min_p"},
      {C, c(R"("presence_penalty": 3)"), 400, "presence_penalty"},
      {C, c(R"("frequency_penalty": -2.5)"), 400, "frequency_penalty"},
      {C, c(R"("repeat_penalty": 0)"), 400, "repeat_penalty"},
      {C, c(R"("repeat_penalty": "x")"), 400, "repeat_penalty"},
      {C, c(R"("repeat_last_n": -2)"), 400, "repeat_last_n"},
      {C, c(R"("seed": "x")"), 400, "seed"},
      {C, c(R"("seed": -2)"), 400, "seed"},
      {C, c(R"("seed": 1099511627776)"), 400, "seed"},
      {C, c(R"("stop": 5)"), 400, "stop"},
      {C, c(R"("stop": [1])"), 400, "stop[0]"},
      {C, c(R"("stop": ["a", "b", "c", "d", "e"])"), 400, "stop"},
      {C, c(R"("stop": "")"), 400, "stop"},
      {C, c(R"("stop": ["a", ""])"), 400, "stop[1]"},
      {C, c("\"stop\": \"" + std::string(600, 's') + "\""), 400, "stop"},
      {C, c(R"("n": 2)"), 400, "n"},
      {C, c(R"("logit_bias": 5)"), 400, "logit_bias"},
      {C, c(R"("logit_bias": {"999": 1})"), 400, R"(logit_bias["999"])"},
      {C, c(R"("logit_bias": {"-1": 1})"), 400, R"(logit_bias["-1"])"},
      {C, c(R"("logit_bias": {"97": "x"})"), 400, R"(logit_bias["97"])"},
      {C, c(R"("logit_bias": {"97": true})"), 400, R"(logit_bias["97"])"},
      {H, h(R"("logit_bias": [[97]])"), 400, "logit_bias[0]"},
      {H, h(R"("logit_bias": [[97, 1], [{}, 1]])"), 400, "logit_bias[1]"},
      {C, c(R"("n": "1")"), 400, "n"},
      {C, c(R"("logprobs": 6)"), 400, "logprobs"},
      {C, c(R"("logprobs": -1)"), 400, "logprobs"},
      {C, c(R"("logprobs": true)"), 400, "logprobs"},
      {C, c(R"("stream": "yes")"), 400, "stream"},
      {C, c(R"("stream_options": {"include_usage": true})"), 400, "stream_options"},
      {C, c(R"("stream": true, "stream_options": 5)"), 400, "stream_options"},
      {C, c(R"("stream": true, "stream_options": {"include_usage": "yes"})"), 400,
       "stream_options.include_usage"},
      {C, c(R"("cache_prompt": "no")"), 400, "cache_prompt"},
      {C, c(R"("ignore_eos": 1)"), 400, "ignore_eos"},
      {C, c(R"("model": 5)"), 400, "model"},
      {C, c(R"("user": ["u"])"), 400, "user"},
      {C, c(R"("echo": true)"), 400, "echo"},
      {H, "{}", 400, "messages"},
      {H, R"({"messages": "hi"})", 400, "messages"},
      {H, R"({"messages": []})", 400, "messages"},
      {H, R"({"messages": [5]})", 400, "messages[0]"},
      {H, R"({"messages": [{"content": "x"}]})", 400, "messages[0].role"},
      {H, R"({"messages": [{"role": "wizard", "content": "x"}]})", 400, "messages[0].role"},
      {H, R"({"messages": [{"role": 5, "content": "x"}]})", 400, "messages[0].role"},
      {H, R"({"messages": [{"role": "user"}]})", 400, "messages[0].content"},
      {H, R"({"messages": [{"role": "user", "content": 5}]})", 400, "messages[0].content"},
      {H, R"({"messages": [{"role": "user", "content": ["hi"]}]})", 400, "messages[0].content[0]"},
      {H, R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})", 400,
       "messages[0].content[0].type"},
      {H, R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})", 400,
       "messages[0].content[0].text"},
      {H, R"({"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": null}]})", 400,
       "messages[1].content"},
      {H, "{\"messages\": [{\"role\": \"user\", \"content\": \"" + std::string(100, 'x') + "\"}]}", 400,
       "messages"},
      {H, h(R"("logprobs": 1)"), 400, "logprobs"},
      {H, h(R"("logprobs": true, "top_logprobs": 21)"), 400, "top_logprobs"},
      {H, h(R"("top_logprobs": 2)"), 400, "top_logprobs"},
      {H, h(R"("chat_template_kwargs": 5)"), 400, "chat_template_kwargs"},
      {H, h(R"("n": 3)"), 400, "n"},
      {H, h(R"("max_tokens": 0)"), 400, "max_tokens"},
      {H, h(R"("temperature": 3)"), 400, "temperature"},
      {H, h(R"("stop": ["a", "b", "c", "d", "e"])"), 400, "stop"},
  };
}

}  // namespace cohort::server::testing
