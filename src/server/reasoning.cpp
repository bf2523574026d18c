#include "server/reasoning.h"

#include <algorithm>

namespace cohort::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

// The length of the longest suffix of `s` that is a proper prefix of `tag`.
size_t partial_tag(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

std::optional<ReasoningFormat> parse_reasoning_format(std::string_view name) {
  if (name == "none") return ReasoningFormat::none;
  if (name == "deepseek" || name == "auto") return ReasoningFormat::deepseek;
  if (name == "deepseek-legacy") return ReasoningFormat::deepseek_legacy;
  return std::nullopt;
}

bool opens_thinking(std::string_view prompt_tail) {
  while (!prompt_tail.empty() && is_space(prompt_tail.back())) prompt_tail.remove_suffix(1);
  return prompt_tail.ends_with(kOpen);
}

ReasoningSplit::ReasoningSplit(ReasoningFormat format, bool thinking_open)
    : format_(format),
      state_(format == ReasoningFormat::none ? State::content
                                             : thinking_open ? State::thinking : State::start) {}

ReasoningParts ReasoningSplit::push(std::string_view text) {
  ReasoningParts out;
  if (format_ == ReasoningFormat::deepseek_legacy) out.content.assign(text);
  held_.append(text);
  run(out);
  return out;
}

// Moves what held_ decides into `out` (content only where not legacy: a
// legacy answer's content is its text as it comes).
void ReasoningSplit::run(ReasoningParts& out) {
  const bool legacy = format_ == ReasoningFormat::deepseek_legacy;
  for (;;) {
    switch (state_) {
      case State::start: {
        const std::string_view rest = trim_left(held_);
        if (rest.starts_with(kOpen)) {
          held_.erase(0, held_.size() - rest.size() + kOpen.size());
          state_ = State::thinking;
          continue;
        }
        if (kOpen.starts_with(rest)) return;  // all whitespace, or a part of the tag
        state_ = State::content;
        continue;
      }
      case State::thinking: {
        const size_t end = held_.find(kClose);
        if (end == std::string::npos) {
          const size_t keep = partial_tag(held_, kClose);
          out.reasoning.append(held_, 0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
          return;
        }
        out.reasoning.append(held_, 0, end);
        held_.erase(0, end + kClose.size());
        state_ = State::after;
        continue;
      }
      case State::after: {
        const std::string_view rest = trim_left(held_);
        held_.erase(0, held_.size() - rest.size());
        if (held_.empty()) return;  // more whitespace may follow
        state_ = State::content;
        continue;
      }
      case State::content:
        if (!legacy) out.content.append(held_);
        held_.clear();
        return;
    }
  }
}

ReasoningParts ReasoningSplit::flush() {
  ReasoningParts out;
  if (state_ == State::thinking) {
    out.reasoning = std::move(held_);
  } else if (state_ == State::start && format_ != ReasoningFormat::deepseek_legacy) {
    out.content = std::move(held_);
  }
  held_.clear();
  return out;
}

}  // namespace cohort::server
