// What one streamed request of `cohort bench-serve` went through, as the
// client saw it: when it was due and sent, when each chunk of generated text
// arrived, and the counts and timings the server reported. All times are
// seconds after the start of the run (one steady_clock origin per run).
//
// apply_stream_event() fills a timeline from the server-sent events of an
// OpenAI-style streamed completion (/v1/completions or
// /v1/chat/completions):
//   - a chunk whose first choice has text ("text", or "delta"."content"),
//     or log-probabilities, is a content chunk: its arrival time is
//     recorded, and its token count (the length of its logprobs list when
//     present, else 1);
//   - "usage" (stream_options.include_usage) gives the exact prompt,
//     completion and cached token counts;
//   - "timings" (llama-server's object, when a server sends it in the
//     stream) gives the server's queue_ms and prompt_ms;
//   - an "error" object fails the request; "[DONE]" ends it.
// Thread safety: a timeline belongs to the thread that runs its request.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cohort::tools {

struct RequestTimeline {
  int index = 0;                  // position in the workload
  std::string name;
  int expected_prompt_tokens = 0; // what the workload asked for (0: prompt text given)
  int max_tokens = 0;

  double scheduled_s = 0;         // when it was due (the workload's `at`)
  double send_s = 0;              // when the connection was opened (after --max-concurrency waits)
  double end_s = 0;               // when the response ended (or failed)
  std::vector<double> chunk_s;    // arrival of each content chunk; the first is the first token
  std::vector<int> chunk_tokens;  // tokens in each content chunk

  int prompt_tokens = -1;         // from usage; -1: not reported
  int completion_tokens = -1;     // from usage; -1: not reported
  int cached_tokens = -1;         // usage.prompt_tokens_details.cached_tokens; -1: not reported
  double server_queue_ms = -1;    // timings.queue_ms; -1: not reported
  double server_prompt_ms = -1;   // timings.prompt_ms; -1: not reported
  std::string finish_reason;

  int http_status = 0;
  bool done = false;              // "[DONE]" was received
  bool ok = false;                // complete and without error
  std::string error;              // why it failed

  double first_token_s() const { return chunk_s.empty() ? -1 : chunk_s.front(); }
  // Generated tokens: usage when reported, else the tokens counted in chunks.
  int generated_tokens() const;
};

// Applies the data of one event received at `t_s`. Never throws: a
// malformed event sets `error`.
void apply_stream_event(std::string_view data, double t_s, RequestTimeline& t);

// Sets `ok` (and `error` if the stream was incomplete) once the response
// has ended: a 200, "[DONE]" seen, at least one content chunk, no error.
void finish_timeline(RequestTimeline& t);

}  // namespace cohort::tools
