// Shared by the chat template tests: the variables the table-driven tests
// render with, and a case type. Test-only.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace cohort::chat {

struct RenderCase {
  const char* name;
  const char* source;
  const char* expected;
};

inline void PrintTo(const RenderCase& c, std::ostream* os) { *os << c.source; }

inline std::string render_case_name(const testing::TestParamInfo<RenderCase>& info) { return info.param.name; }

// messages: system/user/assistant; add_generation_prompt: true; and
// bos_token, eos_token, s, n, f, l, d, t (non-ASCII), e (empty), z (null).
inline nlohmann::ordered_json test_messages() {
  return nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"}])");
}

inline nlohmann::ordered_json test_variables() {
  return nlohmann::ordered_json::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>", "s": "  Hello, World  ", "n": 7, "f": 2.5,
    "l": [3, 1, 2], "d": {"b": 1, "a": [1, 2]}, "t": "héllo wörld", "e": "", "z": null})");
}

inline std::string render_with_test_context(std::string_view source) {
  return ChatTemplate::parse(source).render(test_messages(), true, test_variables());
}

}  // namespace cohort::chat
