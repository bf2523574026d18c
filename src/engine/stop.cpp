#include "engine/stop.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "common/error.h"

namespace cohort::engine {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::none: return "";
    case FinishReason::eog: return "stop";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
  }
  return "";
}

size_t utf8_complete_prefix(std::string_view text) {
  // Walk back over at most 3 continuation bytes (10xxxxxx) to a lead byte.
  size_t i = text.size();
  int n_cont = 0;
  while (i > 0 && n_cont < 3 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) {
    --i;
    ++n_cont;
  }
  if (i == 0) return text.size();
  const auto lead = static_cast<unsigned char>(text[i - 1]);
  size_t need = 0;  // bytes in the character this lead byte starts
  if ((lead & 0xE0) == 0xC0) need = 2;
  else if ((lead & 0xF0) == 0xE0) need = 3;
  else if ((lead & 0xF8) == 0xF0) need = 4;
  const size_t have = static_cast<size_t>(n_cont) + 1;
  return need > have ? i - 1 : text.size();
}

StopChecker::StopChecker(StopParams params) : params_(std::move(params)) {
  if (params_.max_tokens == 0 || params_.max_tokens < -1)
    fail("max_tokens = {} must be >= 1 (or -1 for no limit)", params_.max_tokens);
  for (size_t i = 0; i < params_.stop.size(); ++i)
    if (params_.stop[i].empty()) fail("stop string {} is empty", i);
}

size_t StopChecker::find_stop(std::string* which) const {
  size_t best = std::string::npos;
  for (const std::string& s : params_.stop) {
    const size_t pos = held_.find(s);
    if (pos < best) {
      best = pos;
      *which = s;
    }
  }
  return best;
}

size_t StopChecker::holdback_start() const {
  const std::string_view held = held_;
  for (size_t q = 0; q < held.size(); ++q) {
    const std::string_view tail = held.substr(q);
    for (const std::string& s : params_.stop)
      if (s.size() > tail.size() && std::string_view(s).starts_with(tail)) return q;
  }
  return held.size();
}

StopResult StopChecker::finish(FinishReason reason, size_t n_emit) {
  reason_ = reason;
  StopResult r{held_.substr(0, n_emit), reason};
  held_.clear();
  return r;
}

StopResult StopChecker::push(int32_t token, std::string_view piece) {
  assert(!finished());
  ++n_generated_;
  if (params_.eog_tokens.count(token) != 0) return finish(FinishReason::eog, held_.size());
  held_.append(piece);
  std::string which;
  const size_t pos = find_stop(&which);
  if (pos != std::string::npos) {
    matched_stop_ = std::move(which);
    return finish(FinishReason::stop, pos);
  }
  if (params_.max_tokens > 0 && n_generated_ >= params_.max_tokens)
    return finish(FinishReason::length, held_.size());
  const size_t n_emit = utf8_complete_prefix(std::string_view(held_).substr(0, holdback_start()));
  StopResult r{held_.substr(0, n_emit), FinishReason::none};
  held_.erase(0, n_emit);
  return r;
}

std::string StopChecker::flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace cohort::engine
