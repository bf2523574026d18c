// Streamed completion chunks into a request's timeline: which chunks count
// as tokens and how many, usage and timings, errors, and when a request is
// complete.
#include "tools/request_timeline.h"

#include <gtest/gtest.h>

namespace cohort::tools {
namespace request_timeline_test {

TEST(RequestTimeline, CompletionChunksWithTextAreTimed) {
  RequestTimeline t;
  apply_stream_event(R"({"choices":[{"index":0,"text":"Hel","finish_reason":null}]})", 1.0, t);
  apply_stream_event(R"({"choices":[{"index":0,"text":"","finish_reason":null}]})", 1.5, t);
  apply_stream_event(R"({"choices":[{"index":0,"text":"lo","finish_reason":null}]})", 2.0, t);
  apply_stream_event(R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})", 2.1, t);
  EXPECT_EQ(t.chunk_s, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(t.chunk_tokens, (std::vector<int>{1, 1}));
  EXPECT_EQ(t.finish_reason, "length");
  EXPECT_EQ(t.first_token_s(), 1.0);
  EXPECT_EQ(t.generated_tokens(), 2);  // no usage: counted from the chunks
}

TEST(RequestTimeline, ChatDeltasAndRoleChunk) {
  RequestTimeline t;
  apply_stream_event(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})", 0.5, t);
  apply_stream_event(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})", 0.7, t);
  EXPECT_EQ(t.chunk_s, (std::vector<double>{0.7}));
}

TEST(RequestTimeline, LogprobsGiveTheTokensOfAChunk) {
  RequestTimeline t;
  apply_stream_event(R"({"choices":[{"text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[0,0]}}]})", 1, t);
  apply_stream_event(R"({"choices":[{"text":"","logprobs":{"tokens":["\u00e2"]}}]})", 2, t);  // no text yet, a token
  apply_stream_event(R"({"choices":[{"delta":{"content":"c"},"logprobs":{"content":[{},{},{}]}}]})", 3, t);
  EXPECT_EQ(t.chunk_tokens, (std::vector<int>{2, 1, 3}));
  EXPECT_EQ(t.generated_tokens(), 6);
}

TEST(RequestTimeline, UsageAndTimingsAreRead) {
  RequestTimeline t;
  apply_stream_event(
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19,)"
      R"("prompt_tokens_details":{"cached_tokens":4}},"timings":{"queue_ms":3.5,"prompt_ms":20}})",
      5.0, t);
  EXPECT_EQ(t.prompt_tokens, 12);
  EXPECT_EQ(t.completion_tokens, 7);
  EXPECT_EQ(t.cached_tokens, 4);
  EXPECT_EQ(t.generated_tokens(), 7);
  EXPECT_DOUBLE_EQ(t.server_queue_ms, 3.5);
  EXPECT_DOUBLE_EQ(t.server_prompt_ms, 20);
  EXPECT_TRUE(t.chunk_s.empty());
}

TEST(RequestTimeline, NullUsageOnContentChunksIsIgnored) {
  RequestTimeline t;
  apply_stream_event(R"({"choices":[{"text":"x"}],"usage":null})", 1, t);
  EXPECT_EQ(t.completion_tokens, -1);
  EXPECT_EQ(t.chunk_s.size(), 1u);
}

TEST(RequestTimeline, CompleteOnlyWithStatus200DoneAndText) {
  RequestTimeline t;
  t.http_status = 200;
  apply_stream_event(R"({"choices":[{"text":"x"}]})", 1, t);
  apply_stream_event("[DONE]", 1.1, t);
  finish_timeline(t);
  EXPECT_TRUE(t.ok) << t.error;

  RequestTimeline cut;
  cut.http_status = 200;
  apply_stream_event(R"({"choices":[{"text":"x"}]})", 1, cut);
  finish_timeline(cut);
  EXPECT_FALSE(cut.ok);
  EXPECT_EQ(cut.error, "the stream ended without [DONE]");

  RequestTimeline refused;
  refused.http_status = 400;
  finish_timeline(refused);
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error, "HTTP status 400");
}

TEST(RequestTimeline, ErrorEventsAndMalformedJsonFailTheRequest) {
  RequestTimeline t;
  t.http_status = 200;
  apply_stream_event(R"({"error":{"message":"out of KV blocks","type":"server_error"}})", 1, t);
  apply_stream_event("[DONE]", 2, t);
  finish_timeline(t);
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.error, "server error in the stream: out of KV blocks");

  RequestTimeline m;
  apply_stream_event("{not json", 1, m);
  EXPECT_NE(m.error.find("malformed event"), std::string::npos);
}

}  // namespace request_timeline_test
}  // namespace cohort::tools
