// Thoughts apart from the answer (--reasoning-format, as llama-server's): a
// chat answer that begins with a <think>...</think> block carries the
// block's text as "reasoning_content" beside "content".
//
//   none             the text as generated, in "content"
//   deepseek         the leading think block's text in "reasoning_content",
//                    the rest (leading whitespace dropped) in "content"
//   deepseek-legacy  "content" as generated, tags included, and the block's
//                    text in "reasoning_content" as well
//   auto             deepseek (llama-server's default)
//
// A prompt whose generation prompt opens the block (a template that ends
// with "<think>", e.g. a thinking model's with enable_thinking) starts the
// answer inside it. An answer that ends inside the block is all reasoning.
// Only a block at the start counts; a later "<think>" is content.
//
// ReasoningSplit takes the answer's text in pieces as it is generated and
// gives each piece's parts at once, holding back only what may be the start
// of the tag it looks for, so that a stream never splits a tag between
// "content" and "reasoning_content". Thread safety: none (one per choice).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cohort::server {

enum class ReasoningFormat { none, deepseek, deepseek_legacy };

// The format named `name` (none, deepseek, deepseek-legacy, auto); nullopt
// for another name.
std::optional<ReasoningFormat> parse_reasoning_format(std::string_view name);
inline constexpr const char* kReasoningFormats = "none, deepseek, deepseek-legacy or auto";

// Whether a rendered prompt ends inside an open think block: its last
// "<think>", trailing whitespace aside, is its end.
bool opens_thinking(std::string_view prompt_tail);

struct ReasoningParts {
  std::string reasoning;
  std::string content;
};

class ReasoningSplit {
 public:
  ReasoningSplit(ReasoningFormat format, bool thinking_open);

  // The parts of the next piece of text (some of it may be held back).
  ReasoningParts push(std::string_view text);
  // What is held back, at the end of the answer.
  ReasoningParts flush();

 private:
  enum class State { start, thinking, after, content };
  void run(ReasoningParts& out);

  ReasoningFormat format_;
  State state_;
  std::string held_;
};

}  // namespace cohort::server
