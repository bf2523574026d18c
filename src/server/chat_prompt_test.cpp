// Chat prompts: the variables a template gets beside the messages.
#include "server/chat_prompt.h"

#include <chrono>
#include <ctime>

#include <gtest/gtest.h>

#include "server/request_error.h"
#include "server/server_testing.h"

namespace cohort::server {
namespace chat_prompt_test {

const Json kHi = Json::array({{{"role", "user"}, {"content", "Hi"}}});

TEST(DateVariables, AreFormattedAsLlamaServerFormatsThem) {
  std::tm day{};
  day.tm_year = 2026 - 1900;
  day.tm_mon = 11;
  day.tm_mday = 5;
  EXPECT_EQ(date_variables(day), Json({{"date_string", "05 Dec 2026"}, {"datetime", "Dec 05 2026"}}));
}

TEST(RenderChatPrompt, GivesTheTemplateTodaysDate) {
  const tokenizer::Tokenizer tok = testing::test_tokenizer();
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm day{};
  localtime_r(&now, &day);
  const Json today = date_variables(day);
  const std::string text = render_chat_prompt(kHi, "{{ date_string }}|{{ datetime }}", tok, nullptr);
  // A render across midnight sees the next day.
  if (text != today["date_string"].get<std::string>() + "|" + today["datetime"].get<std::string>()) {
    const std::time_t later = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    localtime_r(&later, &day);
    const Json next = date_variables(day);
    EXPECT_EQ(text, next["date_string"].get<std::string>() + "|" + next["datetime"].get<std::string>());
  }
}

TEST(RenderChatPrompt, RequestVariablesOverrideTheDate) {
  const tokenizer::Tokenizer tok = testing::test_tokenizer();
  const Json kwargs = {{"date_string", "26 Jul 2024"}};
  EXPECT_EQ(render_chat_prompt(kHi, "{{ date_string }}", tok, kwargs), "26 Jul 2024");
}

// "[role]content" per message, then "[gen]" with the generation prompt.
constexpr const char* kTagged =
    "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[gen]{% endif %}";

std::string render(const Json& body) {
  const tokenizer::Tokenizer tok = testing::test_tokenizer();
  Json normalized = normalize_messages(body["messages"]);
  const ChatEnding ending = read_chat_ending(body, normalized);
  return render_chat_prompt(normalized, kTagged, tok, nullptr, ending);
}

Json conversation(const Json& last) {
  return Json::array({{{"role", "user"}, {"content", "Hi"}}, last});
}

TEST(ChatEnding, AddGenerationPromptIsTheRequestsChoice) {
  const Json hi = Json::array({{{"role", "user"}, {"content", "Hi"}}});
  EXPECT_EQ(render({{"messages", hi}}), "[user]Hi[gen]");
  EXPECT_EQ(render({{"messages", hi}, {"add_generation_prompt", false}}), "[user]Hi");
}

TEST(ChatEnding, AFinalAssistantMessageIsContinuedAsAPrefill) {
  const Json prefill = {{"role", "assistant"}, {"content", "Whill"}};
  EXPECT_EQ(render({{"messages", conversation(prefill)}}), "[user]Hi[gen]Whill");
  const Json parts = {{"role", "assistant"},
                      {"content", Json::array({{{"type", "text"}, {"text", "Wh"}}, {{"type", "text"}, {"text", "ill"}}})}};
  EXPECT_EQ(render({{"messages", conversation(parts)}}), "[user]Hi[gen]Wh\n\nill");
  EXPECT_EQ(render({{"messages", conversation(prefill)}, {"add_generation_prompt", false},
                    {"continue_final_message", true}}),
            "[user]Hi[gen]Whill");
  // continue_final_message false: the assistant message is a turn like any other
  EXPECT_EQ(render({{"messages", conversation(prefill)}, {"continue_final_message", false}}),
            "[user]Hi[assistant]Whill[gen]");
}

TEST(ChatEnding, RefusesWhatLlamaServerRefuses) {
  const Json prefill = {{"role", "assistant"}, {"content", "Hello"}};
  auto refusal = [](const Json& body) {
    try {
      render(body);
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status, 400);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal({{"messages", conversation(prefill)}, {"continue_final_message", true}})
                .find("both add_generation_prompt and continue_final_message"),
            std::string::npos);
  Json two = conversation(prefill);
  two.push_back(prefill);
  EXPECT_NE(refusal({{"messages", two}}).find("2 or more assistant messages"), std::string::npos);
  const Json calls = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({Json::object()})}};
  EXPECT_NE(refusal({{"messages", conversation(calls)}}).find("tool calls"), std::string::npos);
  EXPECT_NE(refusal({{"messages", conversation(prefill)}, {"continue_final_message", "yes"}})
                .find("continue_final_message"),
            std::string::npos);
}

}  // namespace chat_prompt_test
}  // namespace cohort::server
