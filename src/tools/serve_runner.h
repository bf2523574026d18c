// Running a workload against a server: each request in its own thread,
// sent at its time (or later, while --max-concurrency requests are in
// flight), streamed, and timed with std::chrono::steady_clock. Also the
// questions asked of the server before the run: its model name
// (/v1/models) and, for made-up prompts, which words its tokenizer keeps
// whole (/tokenize, llama-server's form).
//
// Thread safety: run_workload starts and joins its own threads; nothing is
// shared between them except the semaphore and each request's own timeline.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/http_client.h"
#include "tools/request_timeline.h"
#include "tools/serve_workload.h"

namespace cohort::tools {

struct ServeTarget {
  HttpUrl url;
  std::string endpoint = "/v1/completions";  // or a /chat/completions path
  std::string model;                         // "model" of every request
  bool ignore_eos = true;                    // generate max_tokens exactly
  double temperature = 0;                    // < 0: leave to the server
  bool logprobs = false;                     // ask each token's log-probability: each chunk's
                                             // tokens are counted, and cohort sends a chunk per
                                             // token even where a character spans tokens
  nlohmann::json response_format;            // structured output of every request; null: none
  HttpRequestOptions http;
};

// The JSON body of one streamed request (prompt text already made).
std::string request_body(const ServeTarget& target, const RequestSpec& spec);

// The first model id the server lists at /v1/models. Throws cohort::Error
// naming the URL if the server cannot be reached or answers badly.
std::string discover_model(const HttpUrl& url, const HttpRequestOptions& http);

// Calibrates `maker` with the server's /tokenize: keeps the words that are
// one token after a space, and counts the tokens added to every prompt.
// Returns false (maker unchanged) when the server has no usable /tokenize.
bool calibrate_prompts(const HttpUrl& url, const HttpRequestOptions& http, PromptMaker& maker);

// Sends every request (REQUIRES: prompt text set) at its time; returns their
// timelines in workload order. max_concurrency <= 0: no limit.
std::vector<RequestTimeline> run_workload(const ServeTarget& target, const std::vector<RequestSpec>& specs,
                                          int max_concurrency);

}  // namespace cohort::tools
