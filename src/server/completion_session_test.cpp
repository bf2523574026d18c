// Responses of several choices (request field n) over HTTP against a
// scripted service: one request per choice with its own seed, the choices
// in index order with combined usage, interleaved streams, the limit of the
// server's slots, and cancellation of every choice when the client leaves.
#include "server/completion_session.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/api_reply.h"
#include "server/http_client_testing.h"
#include "server/routes.h"
#include "server/server_testing.h"

namespace cohort::server {
namespace completion_session_test {

using namespace std::chrono_literals;
using testing::http_request;
using testing::RawResponse;

class Choices : public ::testing::Test {
 protected:
  void SetUp() override { start(1ms, "Hello, world!"); }
  void TearDown() override { http_->stop(); }
  void start(std::chrono::milliseconds step, std::string reply) {
    if (http_) http_->stop();
    http_ = std::make_unique<HttpServer>(HttpServerOptions{}, openai_error_body);
    state_ = std::make_unique<ServingState>();
    register_openai_routes(*http_, *state_);
    register_llama_routes(*http_, *state_);
    port_ = http_->start("127.0.0.1", 0);
    auto model = std::make_unique<ServedModel>(testing::test_tokenizer());
    model->id = "fake-model";
    model->n_slots = 3;
    auto service = std::make_unique<testing::FakeService>(std::move(reply), 64, step);
    service_ = service.get();
    model->service = std::move(service);
    state_->publish(std::move(model));
  }
  RawResponse post(const std::string& path, const std::string& body) {
    return testing::roundtrip(port_, http_request("POST", path, body));
  }

  std::unique_ptr<ServingState> state_;
  std::unique_ptr<HttpServer> http_;
  testing::FakeService* service_ = nullptr;
  int port_ = 0;
};

std::vector<Json> sse_events(const std::string& body) {
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

TEST_F(Choices, WholeAnswerHasEveryChoiceInIndexOrderAndUsageCountsThemAll) {
  const RawResponse r = post("/v1/completions", R"({"prompt": "hi", "max_tokens": 5, "n": 3, "seed": 7})");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = Json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], "Hello");
    EXPECT_EQ(j["choices"][i]["finish_reason"], "length");
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2) << "the prompt counts once";
  EXPECT_EQ(j["usage"]["completion_tokens"], 15);
  EXPECT_EQ(j["usage"]["total_tokens"], 17);
  EXPECT_EQ(j["timings"]["predicted_n"], 15);
  const std::vector<GenerationRequest> sent = service_->submitted();
  ASSERT_EQ(sent.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sent[i].sampling.seed, 7u + i) << "choice i samples with seed + i";
    EXPECT_EQ(sent[i].prompt, sent[0].prompt);
  }
}

TEST_F(Choices, ChatStreamInterleavesTheChoicesAndEndsWithTheirUsage) {
  const RawResponse r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}],
      "n": 2, "max_tokens": 4, "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<Json> events = sse_events(r.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  const Json& usage = events[events.size() - 2];
  EXPECT_EQ(usage["choices"], Json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 8);
  std::map<int, std::string> text;
  std::map<int, int> roles, finishes;
  bool interleaved = false;
  int last_index = -1;
  for (size_t k = 0; k + 2 < events.size(); ++k) {
    ASSERT_EQ(events[k]["choices"].size(), 1u) << events[k];
    const Json& c = events[k]["choices"][0];
    const int index = c["index"];
    ASSERT_TRUE(index == 0 || index == 1) << c;
    if (c["delta"].contains("role")) ++roles[index];
    if (c["delta"].value("content", Json()).is_string()) text[index] += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) {
      EXPECT_EQ(c["finish_reason"], "length");
      ++finishes[index];
    }
    interleaved |= last_index >= 0 && index != last_index && finishes[last_index] == 0;
    last_index = index;
  }
  EXPECT_EQ(roles, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(finishes, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(text, (std::map<int, std::string>{{0, "Hell"}, {1, "Hell"}}));
  EXPECT_TRUE(interleaved) << "a choice's chunks go out as they come, not after the other's end";
}

TEST_F(Choices, MoreChoicesThanSlotsIsABadRequestNamingTheLimit) {
  for (const char* n : {"4", "0", "-1"}) {
    const RawResponse r = post("/v1/completions", std::string(R"({"prompt": "hi", "n": )") + n + "}");
    EXPECT_EQ(r.status, 400) << n;
    const Json e = Json::parse(r.body)["error"];
    EXPECT_EQ(e["param"], "n");
    EXPECT_NE(e["message"].get<std::string>().find("between 1 and 3"), std::string::npos) << e;
  }
  const RawResponse native = post("/completion", R"({"prompt": "hi", "n": 2})");
  EXPECT_EQ(native.status, 400) << native.body;
  EXPECT_TRUE(service_->submitted().empty());
}

TEST_F(Choices, ClientThatDisconnectsCancelsEveryChoice) {
  start(20ms, std::string(10000, 'z'));
  for (const bool stream : {true, false}) {
    testing::ClientSocket s(port_);
    s.send(http_request("POST", "/v1/completions",
                        std::string(R"({"prompt": "x", "n": 3, "stream": )") + (stream ? "true}" : "false}")));
    ASSERT_TRUE(service_->wait_submitted(stream ? 3 : 6, 5s));
    if (stream) s.read_until("data: ");
    s.close();
    EXPECT_TRUE(service_->wait_cancelled(stream ? 3 : 6, 5s)) << stream;
  }
}

}  // namespace completion_session_test
}  // namespace cohort::server
