// Robustness: random byte strings and random mutations of real chat
// templates go through parse and render. Any outcome is fine except a
// crash, a hang, or an exception other than ChatTemplateError. Seeds are
// fixed; the sanitizer build (COHORT_SANITIZE=ON) runs these too, and
// COHORT_CHAT_FUZZ_ITERATIONS=N runs N inputs per test instead of 3000.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chat/chat_test_util.h"

namespace cohort::chat {
namespace chat_fuzz_test {

// Pieces that make random text likely to reach deep into the parser.
const char* const kPieces[] = {
    "{{", "}}", "{%", "%}", "{#", "#}", "-", "+", "(", ")", "[", "]", "{", "}", "'", "\"", "|", ".", ",", ":",
    " is ", " not ", " in ", " and ", " or ", " if ", " else ", "for ", "endfor", "if ", "endif", "set ",
    "macro ", "endmacro", "raw", "endraw", "loop.index", "messages", "m.content", "ns.x", "namespace(x=1)",
    "range(3)", "|trim", "|tojson", "|length", "|join(',')", "|map(attribute='role')", "|selectattr('role')",
    "|indent(2)", ".split('a')", "[::-1]", "[1:]", " ~ ", " * ", " // ", " % ", " ** ", "\n", "  ", "\\",
    "é", "\xff", "\xc3", "1e308", "9223372036854775807", "-1", "0", "none", "true", "raise_exception('x')"};

int iterations() {
  const char* env = std::getenv("COHORT_CHAT_FUZZ_ITERATIONS");
  return env ? std::max(1, std::atoi(env)) : 3000;
}

RenderLimits small_limits() {
  RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_loop_iterations = 20000;
  limits.max_work_bytes = 8 << 20;
  return limits;
}

// Parses and renders; fails the test on anything but success or ChatTemplateError.
void exercise(const std::string& source) {
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "sys {{ x }}"},
    {"role": "user", "content": "héllo"},
    {"role": "assistant", "content": "<think>r</think>ok", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
    {"role": "user", "content": ""}])");
  static const nlohmann::ordered_json extra = nlohmann::ordered_json::parse(
      R"({"bos_token": "<s>", "eos_token": "</s>", "tools": [{"type": "function", "function": {"name": "f"}}]})");
  try {
    ChatTemplate::parse(source).render(messages, true, extra, small_limits());
  } catch (const ChatTemplateError&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception " << e.what() << " for: " << source;
  }
}

std::vector<std::string> real_templates() {
  const auto dir = std::filesystem::path(__FILE__).parent_path() / "../../tests/python/data/chat_templates";
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string mutate(std::string s, std::mt19937& rng) {
  const int n_edits = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < n_edits; ++k) {
    const size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0:  // insert a piece
        s.insert(pos, kPieces[rng() % std::size(kPieces)]);
        break;
      case 1:  // delete a span
        if (!s.empty()) s.erase(pos, 1 + rng() % 8);
        break;
      case 2:  // flip a byte
        if (pos < s.size()) s[pos] = static_cast<char>(rng());
        break;
      case 3: {  // duplicate a span
        if (pos < s.size()) s.insert(pos, s.substr(pos, 1 + rng() % 40));
        break;
      }
      default:  // swap in a span from elsewhere
        if (!s.empty()) {
          const size_t from = rng() % s.size();
          s.insert(pos, s.substr(from, 1 + rng() % 20));
        }
    }
  }
  return s;
}

TEST(ChatFuzz, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  for (int i = 0; i < iterations(); ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      if (rng() % 3 == 0) {
        s += static_cast<char>(rng());
      } else {
        s += kPieces[rng() % std::size(kPieces)];
      }
    }
    exercise(s);
  }
}

TEST(ChatFuzz, MutatedRealTemplatesNeverCrash) {
  const std::vector<std::string> templates = real_templates();
  if (templates.empty()) GTEST_SKIP() << "template data not found next to the sources";
  std::mt19937 rng(5678);
  for (int i = 0; i < iterations(); ++i) exercise(mutate(templates[i % templates.size()], rng));
}

TEST(ChatFuzz, RealTemplatesRenderUnmutated) {
  for (const std::string& t : real_templates()) exercise(t);
}

}  // namespace chat_fuzz_test
}  // namespace cohort::chat
