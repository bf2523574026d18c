// Chat prompts: the variables a template gets beside the messages.
#include "server/chat_prompt.h"

#include <chrono>
#include <ctime>

#include <gtest/gtest.h>

#include "server/server_testing.h"

namespace cohort::server {
namespace {

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

}  // namespace
}  // namespace cohort::server
