// Response JSON in OpenAI's shapes: objects, choices, usage, logprobs in
// both formats, streamed chunks, error bodies.
#include "server/openai_response.h"

#include <cmath>
#include <limits>
#include <set>

#include <gtest/gtest.h>

namespace cohort::server {
namespace openai_response_test {

ResponseMeta meta(Endpoint e, bool logprobs = false, bool include_usage = false) {
  ResponseMeta m;
  m.endpoint = e;
  m.id = new_response_id(e);
  m.created = 1700000000;
  m.model = "test-model";
  m.logprobs = logprobs;
  m.include_usage = include_usage;
  return m;
}

std::string text_of(int32_t id) { return id == 0xE2 ? std::string("\xE2") : std::string(1, static_cast<char>(id)); }

GeneratedToken token(char c, float logprob = -0.25f, std::vector<engine::TokenLogprob> top = {}) {
  GeneratedToken t;
  t.id = static_cast<unsigned char>(c);
  t.text = std::string(1, c);
  t.logprob = logprob;
  t.top = std::move(top);
  return t;
}

Usage usage() {
  Usage u;
  u.prompt_tokens = 10;
  u.cached_tokens = 4;
  u.completion_tokens = 3;
  return u;
}

std::set<std::string> keys(const Json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

TEST(OpenAIResponse, IdsHaveOpenAIsPrefixAndDiffer) {
  const std::string a = new_response_id(Endpoint::chat), b = new_response_id(Endpoint::chat);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(new_response_id(Endpoint::completions).rfind("cmpl-", 0), 0u);
  EXPECT_NE(a, b);
}

TEST(OpenAIResponse, TextCompletionShape) {
  ResponseBuilder b(meta(Endpoint::completions), text_of);
  const Json j = b.full_response({token('h'), token('i')}, engine::FinishReason::length, usage());
  EXPECT_EQ(keys(j), (std::set<std::string>{"id", "object", "created", "model", "choices", "usage", "timings"}));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "test-model");
  ASSERT_EQ(j["choices"].size(), 1u);
  const Json& c = j["choices"][0];
  EXPECT_EQ(keys(c), (std::set<std::string>{"index", "text", "logprobs", "finish_reason"}));
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["text"], "hi");
  EXPECT_TRUE(c["logprobs"].is_null());
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(j["usage"], Json::parse(R"({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13,
                                        "prompt_tokens_details": {"cached_tokens": 4}})"));
}

TEST(OpenAIResponse, ChatCompletionShape) {
  ResponseMeta m = meta(Endpoint::chat);
  m.system_fingerprint = "fp_test";
  ResponseBuilder b(m, text_of);
  const Json j = b.full_response({token('o'), token('k')}, engine::FinishReason::eog, usage());
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["system_fingerprint"], "fp_test");
  const Json& c = j["choices"][0];
  EXPECT_EQ(keys(c), (std::set<std::string>{"index", "message", "logprobs", "finish_reason"}));
  EXPECT_EQ(c["message"], Json::parse(R"({"role": "assistant", "content": "ok"})"));
  EXPECT_EQ(c["finish_reason"], "stop");
}

TEST(OpenAIResponse, ChatChunksInOrder) {
  ResponseBuilder b(meta(Endpoint::chat), text_of);
  const Json role = b.role_chunk();
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"], Json::parse(R"({"role": "assistant", "content": null})"));
  EXPECT_TRUE(role["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(role.contains("usage"));
  const Json delta = b.delta_chunk({token('a'), token('b')});
  EXPECT_EQ(delta["choices"][0]["delta"], Json::parse(R"({"content": "ab"})"));
  EXPECT_EQ(delta["id"], role["id"]);
  Usage u = usage();
  u.queue_ms = 2.5;
  const Json fin = b.finish_chunk(engine::FinishReason::stop, u);
  EXPECT_EQ(fin["choices"][0]["delta"], Json::object());
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(fin["timings"]["queue_ms"], 2.5);
  EXPECT_EQ(fin["timings"]["prompt_n"], 6);
}

TEST(OpenAIResponse, UsageChunkHasEmptyChoicesAndOtherChunksNullUsage) {
  ResponseBuilder b(meta(Endpoint::chat, false, true), text_of);
  EXPECT_TRUE(b.role_chunk()["usage"].is_null());
  EXPECT_TRUE(b.delta_chunk({token('a')})["usage"].is_null());
  const Json u = b.usage_chunk(usage());
  EXPECT_EQ(u["choices"], Json::array());
  EXPECT_EQ(u["usage"]["total_tokens"], 13);
}

TEST(OpenAIResponse, TimingsRideTheLastChunkAsLlamaServerSendsThem) {
  ResponseBuilder with_usage(meta(Endpoint::chat, false, true), text_of);
  EXPECT_FALSE(with_usage.role_chunk().contains("timings"));
  EXPECT_FALSE(with_usage.finish_chunk(engine::FinishReason::stop, usage()).contains("timings"));
  EXPECT_EQ(with_usage.usage_chunk(usage())["timings"]["predicted_n"], 3);
  ResponseBuilder without(meta(Endpoint::chat), text_of);
  EXPECT_EQ(without.finish_chunk(engine::FinishReason::stop, usage())["timings"]["predicted_n"], 3);
}

TEST(OpenAIResponse, ProgressChunksCarryThePromptSoFar) {
  PromptProgress p;
  p.total = 40;
  p.cache = 8;
  p.processed = 24;
  p.time_ms = 32;
  ResponseBuilder chat(meta(Endpoint::chat), text_of);
  const Json c = chat.progress_chunk(p);
  EXPECT_EQ(c["choices"][0]["delta"], Json::parse(R"({"role": "assistant", "content": null})"));
  EXPECT_EQ(c["prompt_progress"], Json::parse(R"({"total": 40, "cache": 8, "processed": 24, "time_ms": 32.0})"));
  EXPECT_EQ(c["timings"]["cache_n"], 8);
  EXPECT_EQ(c["timings"]["prompt_n"], 16);
  EXPECT_DOUBLE_EQ(c["timings"]["prompt_per_token_ms"].get<double>(), 2.0);
  EXPECT_EQ(c["timings"]["predicted_n"], 0);
  ResponseBuilder text(meta(Endpoint::completions), text_of);
  EXPECT_EQ(text.progress_chunk(p)["choices"][0]["text"], "");
}

TEST(OpenAIResponse, GenerationRatesCountTheStepsAfterTheFirstToken) {
  Usage u = usage();  // 6 prompt tokens computed, 3 generated
  u.prompt_ms = 12;
  u.generation_ms = 40;
  const Json t = timings_json(u);
  EXPECT_DOUBLE_EQ(t["prompt_per_token_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(t["predicted_per_token_ms"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 50.0);
  u.completion_tokens = 1;
  u.generation_ms = 0.001;
  EXPECT_EQ(timings_json(u)["predicted_per_token_ms"], 0.0);
  EXPECT_EQ(timings_json(u)["predicted_per_second"], 0.0);
}

TEST(OpenAIResponse, CompletionChunksCarryText) {
  ResponseBuilder b(meta(Endpoint::completions), text_of);
  const Json d = b.delta_chunk({token('x')});
  EXPECT_EQ(d["object"], "text_completion");
  EXPECT_EQ(d["choices"][0]["text"], "x");
  const Json f = b.finish_chunk(engine::FinishReason::length, usage());
  EXPECT_EQ(f["choices"][0]["text"], "");
  EXPECT_EQ(f["choices"][0]["finish_reason"], "length");
}

TEST(OpenAIResponse, ChatLogprobsFormat) {
  ResponseBuilder b(meta(Endpoint::chat, true), text_of);
  const Json j = b.full_response({token('a', -0.5f, {{'a', -0.5f}, {'b', -1.5f}})}, engine::FinishReason::eog,
                                 usage());
  const Json expected = Json::parse(R"({"content": [{"token": "a", "logprob": -0.5, "bytes": [97],
      "top_logprobs": [{"token": "a", "logprob": -0.5, "bytes": [97]},
                       {"token": "b", "logprob": -1.5, "bytes": [98]}]}], "refusal": null})");
  EXPECT_EQ(j["choices"][0]["logprobs"], expected);
}

TEST(OpenAIResponse, CompletionLogprobsFormatWithRunningTextOffsets) {
  ResponseBuilder b(meta(Endpoint::completions, true), text_of);
  const Json first = b.delta_chunk({token('a', -0.5f, {{'b', -1.0f}}), token('c', -0.25f)});
  const Json expected = Json::parse(R"({"tokens": ["a", "c"], "token_logprobs": [-0.5, -0.25],
      "top_logprobs": [{"b": -1.0}, {}], "text_offset": [0, 1]})");
  EXPECT_EQ(first["choices"][0]["logprobs"], expected);
  const Json second = b.delta_chunk({token('d')});
  EXPECT_EQ(second["choices"][0]["logprobs"]["text_offset"], Json::parse("[2]"));
}

TEST(OpenAIResponse, ImpossibleTokensAndPartialUtf8StillPrint) {
  ResponseBuilder b(meta(Endpoint::chat, true), text_of);
  GeneratedToken t;
  t.id = 0xE2;  // the first byte of a 3-byte character
  t.logprob = -std::numeric_limits<float>::infinity();
  const Json j = b.full_response({t}, engine::FinishReason::length, usage());
  const Json& entry = j["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["logprob"], -9999.0);
  EXPECT_EQ(entry["bytes"], Json::parse("[226]"));
  const std::string wire = dump(j);  // must not throw on the invalid UTF-8
  EXPECT_NE(wire.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(OpenAIResponse, ErrorBodyShape) {
  const Json e = error_json("bad 'x'", error_type(400), "x");
  EXPECT_EQ(e, Json::parse(R"({"error": {"message": "bad 'x'", "type": "invalid_request_error",
                                         "param": "x", "code": null}})"));
  EXPECT_TRUE(error_json("m", "t")["error"]["param"].is_null());
  EXPECT_EQ(error_type(500), "server_error");
  EXPECT_EQ(error_type(503), "unavailable_error");
  EXPECT_EQ(error_type(413), "invalid_request_error");
}

TEST(CombinedUsage, ThePromptOnceAndEveryChoicesTokensOverTheLongestTimes) {
  Usage a, b;
  a.prompt_tokens = b.prompt_tokens = 10;
  a.cached_tokens = 4;
  b.cached_tokens = 9;
  a.completion_tokens = 3;
  b.completion_tokens = 5;
  a.prompt_ms = 2;
  b.prompt_ms = 1;
  a.generation_ms = 7;
  b.generation_ms = 9;
  const Usage u = combined_usage({a, b});
  EXPECT_EQ(u.prompt_tokens, 10);
  EXPECT_EQ(u.cached_tokens, 4);
  EXPECT_EQ(u.completion_tokens, 8);
  EXPECT_EQ(u.prompt_ms, 2);
  EXPECT_EQ(u.generation_ms, 9);
}

TEST(ResponseBuilder, ChoicesCarryTheirIndex) {
  ResponseMeta m;
  m.endpoint = Endpoint::chat;
  ResponseBuilder b(m, [](int32_t) { return std::string("x"); }, 2);
  EXPECT_EQ(b.role_chunk()["choices"][0]["index"], 2);
  EXPECT_EQ(b.full_response({}, engine::FinishReason::stop, Usage{})["choices"][0]["index"], 2);
}

}  // namespace openai_response_test
}  // namespace cohort::server
