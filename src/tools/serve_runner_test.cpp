// The body of a streamed bench-serve request: what each option puts in it.
#include "tools/serve_runner.h"

#include <gtest/gtest.h>

namespace cohort::tools {
namespace serve_runner_test {

nlohmann::json body_of(const ServeTarget& target) {
  RequestSpec spec;
  spec.prompt = "Hello";
  spec.max_tokens = 5;
  return nlohmann::json::parse(request_body(target, spec));
}

TEST(ServeRunner, CompletionBodyStreamsWithUsage) {
  ServeTarget target;
  target.model = "m";
  const nlohmann::json j = body_of(target);
  EXPECT_EQ(j["prompt"], "Hello");
  EXPECT_EQ(j["max_tokens"], 5);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_FALSE(j.contains("logprobs"));
}

TEST(ServeRunner, LogprobsAskOneTokenEachForCompletionsAndChat) {
  ServeTarget target;
  target.logprobs = true;
  EXPECT_EQ(body_of(target)["logprobs"], 1);  // /v1/completions: how many alternatives (0 or more)
  target.endpoint = "/v1/chat/completions";
  const nlohmann::json chat = body_of(target);
  EXPECT_EQ(chat["logprobs"], true);          // chat: a flag
  EXPECT_EQ(chat["messages"][0]["content"], "Hello");
}

}  // namespace serve_runner_test
}  // namespace cohort::tools
