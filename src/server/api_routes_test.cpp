// The API routes over HTTP against a scripted service: loading state,
// response shapes, SSE streams, bad requests, engine errors, cancellation
// when the client disconnects, and the llama.cpp routes.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/api_reply.h"
#include "server/bad_requests_testing.h"
#include "server/http_client_testing.h"
#include "server/routes.h"
#include "server/server_testing.h"

namespace cohort::server {
namespace api_routes_test {

using namespace std::chrono_literals;
using testing::http_request;
using testing::RawResponse;

class ApiRoutes : public ::testing::Test {
 protected:
  void start(std::chrono::milliseconds step = 1ms, std::string reply = "Hello, world!") {
    HttpServerOptions o;
    o.max_body_bytes = 4096;
    http_ = std::make_unique<HttpServer>(o, openai_error_body);
    register_openai_routes(*http_, state_);
    register_llama_routes(*http_, state_);
    port_ = http_->start("127.0.0.1", 0);
    auto model = std::make_unique<ServedModel>(testing::test_tokenizer());
    model->id = "fake-model";
    model->path = "/models/fake.gguf";
    model->metrics_endpoint = true;
    auto service = std::make_unique<testing::FakeService>(std::move(reply), 64, step);
    service_ = service.get();
    model->service = std::move(service);
    pending_ = std::move(model);
  }
  void publish() { state_.publish(std::move(pending_)); }
  void SetUp() override {
    start();
    publish();
  }
  void TearDown() override { http_->stop(); }

  RawResponse post(const std::string& path, const std::string& body) {
    return testing::roundtrip(port_, http_request("POST", path, body));
  }
  RawResponse get(const std::string& path) { return testing::roundtrip(port_, http_request("GET", path)); }

  ServingState state_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<ServedModel> pending_;
  testing::FakeService* service_ = nullptr;
  int port_ = 0;
};

// The JSON payloads of an SSE body, "[DONE]" as a string.
std::vector<Json> sse_payloads(const std::string& body) {
  std::vector<Json> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    const std::string payload = body.substr(pos + 6, end - pos - 6);
    out.push_back(payload == "[DONE]" ? Json("[DONE]") : Json::parse(payload));
    pos = end;
  }
  return out;
}

TEST(ApiRoutesLoading, HealthIs503WhileLoadingThen200) {
  ServingState state;
  HttpServer http(HttpServerOptions{}, openai_error_body);
  register_llama_routes(http, state);
  register_openai_routes(http, state);
  const int port = http.start("127.0.0.1", 0);
  const RawResponse loading = testing::roundtrip(port, http_request("GET", "/health"));
  EXPECT_EQ(loading.status, 503);
  EXPECT_EQ(Json::parse(loading.body),
            Json::parse(R"({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})"));
  EXPECT_EQ(testing::roundtrip(port, http_request("POST", "/v1/completions", "{}")).status, 503);
  auto model = std::make_unique<ServedModel>(testing::test_tokenizer());
  model->service = std::make_unique<testing::FakeService>();
  state.publish(std::move(model));
  const RawResponse ready = testing::roundtrip(port, http_request("GET", "/health"));
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(Json::parse(ready.body), Json::parse(R"({"status": "ok"})"));
}

TEST_F(ApiRoutes, CompletionNonStreamed) {
  const RawResponse r = post("/v1/completions", R"({"prompt": "hi", "max_tokens": 5})");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = Json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["choices"][0]["text"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(service_->submitted().at(0).max_tokens, 5);
}

TEST_F(ApiRoutes, ChatStreamIsOpenAIsSequenceAndMatchesTheWholeAnswer) {
  const std::string body = R"({"messages": [{"role": "user", "content": "hi"}], "stop": "!", "stream": true,
                               "stream_options": {"include_usage": true}})";
  const RawResponse r = post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
  const std::vector<Json> events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events[0]["choices"][0]["delta"], Json::parse(R"({"role": "assistant", "content": null})"));
  std::string streamed;
  for (size_t i = 1; i + 3 < events.size(); ++i) {
    EXPECT_TRUE(events[i]["choices"][0]["finish_reason"].is_null());
    streamed += events[i]["choices"][0]["delta"]["content"].get<std::string>();
  }
  const Json& finish = events[events.size() - 3];
  EXPECT_EQ(finish["choices"][0]["delta"], Json::object());
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  const Json& usage = events[events.size() - 2];
  EXPECT_EQ(usage["choices"], Json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 13);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(streamed, "Hello, world");

  Json whole_body = Json::parse(body);
  whole_body.erase("stream");
  whole_body.erase("stream_options");
  const Json whole = Json::parse(post("/v1/chat/completions", whole_body.dump()).body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], streamed);
}

TEST_F(ApiRoutes, StreamedLogprobsInBothFormats) {
  const std::vector<Json> chat = sse_payloads(post("/v1/chat/completions",
      R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "stream": true,
          "logprobs": true, "top_logprobs": 2})").body);
  const Json& entry = chat.at(1)["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["token"], "H");
  EXPECT_EQ(entry["logprob"], -0.5);
  EXPECT_EQ(entry["top_logprobs"].size(), 2u);
  const std::vector<Json> text = sse_payloads(post("/v1/completions",
      R"({"prompt": "x", "max_tokens": 2, "stream": true, "logprobs": 1})").body);
  EXPECT_EQ(text.at(0)["choices"][0]["logprobs"]["tokens"], Json::parse(R"(["H"])"));
  EXPECT_EQ(text.at(0)["choices"][0]["logprobs"]["text_offset"], Json::parse("[0]"));
  EXPECT_EQ(text.at(1)["choices"][0]["logprobs"]["text_offset"], Json::parse("[1]"));
  EXPECT_EQ(text.at(1)["choices"][0]["logprobs"]["top_logprobs"][0].size(), 1u);
}

TEST_F(ApiRoutes, EveryBadRequestGetsItsStatusAndAnOpenAIErrorObject) {
  for (const testing::BadRequest& bad : testing::bad_requests()) {
    SCOPED_TRACE(bad.body.substr(0, 200));
    const RawResponse r =
        post(bad.endpoint == Endpoint::chat ? "/v1/chat/completions" : "/v1/completions", bad.body);
    EXPECT_EQ(r.status, bad.status);
    const Json e = Json::parse(r.body);
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_TRUE(e["error"]["message"].is_string());
    EXPECT_EQ(e["error"]["param"], bad.param.empty() ? Json() : Json(bad.param));
  }
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(ApiRoutes, ProtocolErrorsUseOpenAIsErrorObject) {
  const RawResponse big = post("/v1/completions", "{\"prompt\": \"" + std::string(5000, 'x') + "\"}");
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(Json::parse(big.body)["error"]["type"], "invalid_request_error");
  EXPECT_EQ(get("/v1/completions").status, 405);
  const RawResponse missing = get("/v1/nothing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(Json::parse(missing.body)["error"]["message"].is_string());
}

TEST_F(ApiRoutes, EngineFailureIs500NonStreamedAndAnErrorEventStreamed) {
  const RawResponse r = post("/v1/completions", R"({"prompt": "!x"})");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "server_error");
  const std::vector<Json> events = sse_payloads(post("/v1/completions", R"({"prompt": "!x", "stream": true})").body);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["error"]["message"], "simulated engine failure");
}

TEST_F(ApiRoutes, ModelsTokenizeDetokenizePropsSlotsMetrics) {
  const Json models = Json::parse(get("/v1/models").body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "fake-model");
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(models["data"][0]["owned_by"], "cohort");
  const Json tokens = Json::parse(post("/tokenize", R"({"content": "hi<|im_end|>"})").body);
  EXPECT_EQ(tokens["tokens"], Json::parse("[104, 105, 257]"));
  const Json pieces = Json::parse(post("/tokenize", R"({"content": "h", "with_pieces": true})").body);
  EXPECT_EQ(pieces["tokens"], Json::parse(R"([{"id": 104, "piece": "h"}])"));
  EXPECT_EQ(Json::parse(post("/detokenize", R"({"tokens": [104, 105, 257]})").body)["content"], "hi<|im_end|>");
  EXPECT_EQ(post("/detokenize", R"({"tokens": [100000]})").status, 400);
  EXPECT_EQ(post("/tokenize", R"({"content": 5})").status, 400);
  const Json props = Json::parse(get("/props").body);
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["model_path"], "/models/fake.gguf");
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 64);
  EXPECT_EQ(props["memory"]["device"], "fake");
  EXPECT_TRUE(props["memory"].contains("kv_bytes"));
  const Json slots = Json::parse(get("/slots").body);
  EXPECT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0]["is_processing"], true);
  const RawResponse metrics = get("/metrics");
  EXPECT_EQ(metrics.headers.at("content-type").rfind("text/plain", 0), 0u);
  EXPECT_NE(metrics.body.find("cohort:requests_total "), std::string::npos);
}

TEST_F(ApiRoutes, NativeSettingsShowIgnoreEosBansAsNullBiases) {
  const RawResponse r = post("/completion", R"({"prompt": "hi", "n_predict": 2, "ignore_eos": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json biases = Json::parse(r.body)["generation_settings"]["logit_bias"];
  ASSERT_FALSE(biases.empty());
  for (const Json& b : biases) EXPECT_TRUE(b["bias"].is_null()) << b;
  EXPECT_EQ(biases[0]["token"], testing::kImEnd);
  const RawResponse plain = post("/completion", R"({"prompt": "hi", "n_predict": 2, "logit_bias": [[97, 1.5]]})");
  EXPECT_EQ(Json::parse(plain.body)["generation_settings"]["logit_bias"],
            Json::parse(R"([{"bias": 1.5, "token": 97}])"));
}

TEST_F(ApiRoutes, MetricsWithoutTheFlagAnswer501AsLlamaServer) {
  TearDown();
  start();
  pending_->metrics_endpoint = false;
  publish();
  const RawResponse r = get("/metrics");
  EXPECT_EQ(r.status, 501);
  const Json error = Json::parse(r.body)["error"];
  EXPECT_EQ(error["type"], "not_supported_error");
  EXPECT_NE(error["message"].get<std::string>().find("--metrics"), std::string::npos);
}

TEST_F(ApiRoutes, StreamingClientThatDisconnectsCancelsItsRequest) {
  TearDown();
  start(20ms, std::string(10000, 'z'));
  publish();
  testing::ClientSocket s(port_);
  s.send(http_request("POST", "/v1/completions", R"({"prompt": "x", "stream": true})"));
  s.read_until("data: ");
  s.close();
  EXPECT_TRUE(service_->wait_cancelled(1, 5s));
}

TEST_F(ApiRoutes, WaitingClientThatDisconnectsCancelsItsRequest) {
  TearDown();
  start(20ms, std::string(10000, 'z'));
  publish();
  testing::ClientSocket s(port_);
  s.send(http_request("POST", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})"));
  ASSERT_TRUE(service_->wait_submitted(1, 5s));
  s.close();
  EXPECT_TRUE(service_->wait_cancelled(1, 5s));
}

}  // namespace api_routes_test
}  // namespace cohort::server
