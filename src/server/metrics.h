// /metrics: the service's counters in the Prometheus text exposition format
// (version 0.0.4), named as llama-server names them where it has the
// metric, with the prefix "cohort:" instead of "llamacpp:".
//
//   counters   cohort:prompt_tokens_total, cohort:tokens_predicted_total,
//              cohort:requests_total
//   gauges     cohort:requests_processing, cohort:requests_deferred (queued),
//              cohort:requests_blocked_by_phase (queued with a slot free),
//              cohort:phase{phase="idle|prefill|decode|mixed"} (1 for the
//              active one; "mixed": a step of both under --phase-policy
//              mixed), cohort:cohort_size, cohort:n_slots, cohort:n_ctx
//   counters   cohort:step_seconds_total (the engine loop's steps, plan to
//              sampled tokens), cohort:grammar_mask_seconds_total and
//              cohort:grammar_mask_steps_total (structured output's masks)
//   histograms cohort:time_to_first_token_seconds,
//              cohort:inter_token_latency_seconds (_bucket{le}, _sum, _count)
//
// and beside them llama-server's own set under its names (llamacpp:*:
// prompt_tokens_total, prompt_tokens_cached_total, prompt_seconds_total,
// tokens_predicted_total, tokens_predicted_seconds_total, n_decode_total,
// n_tokens_max, prompt_tokens_seconds, predicted_tokens_seconds,
// requests_processing, requests_deferred, n_busy_slots_per_decode, and the
// speculative-decoding counters spec_decode_num_draft_tokens_total,
// spec_decode_num_accepted_tokens_total, spec_decode_num_drafts_total,
// always 0 here), so that what watches a llama-server watches cohort
// unchanged.
//
// ref: https://prometheus.io/docs/instrumenting/exposition_formats/
// Thread safety: pure function.
#pragma once

#include <string>

#include "server/generation.h"

namespace cohort::server {

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string format_metrics(const ServiceStats& stats);

}  // namespace cohort::server
