// When generation ends, and which generated text may be streamed yet.
//
// A StopChecker watches one sequence's generated tokens and their text:
//   - an end-of-generation token (EOS, EOT, ...) ends it with reason `eog`;
//     the token's own text is not emitted;
//   - a stop string ends it with reason `stop`: text before the first
//     occurrence is emitted, the stop string and anything after it are not;
//   - the max_tokens-th token ends it with reason `length` (unless that token
//     is an EOG token or completes a stop string).
// Stop strings may span token boundaries. The first stop string to complete
// wins (if one contains another, the inner one may end generation first).
// While the text's tail could still grow into a stop string, that tail is
// held back; it is released as soon as it cannot (or when generation ends
// for another reason). An incomplete UTF-8 sequence at the end is held back
// too, so that every emitted chunk is whole characters; when generation ends,
// held text before any stop string is released, however it ends.
//
// OpenAI's finish_reason: "stop" for eog and stop strings, "length" for
// max tokens (finish_reason_name).
//
// Thread safety: none; one checker per sequence.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace cohort::engine {

enum class FinishReason { none, eog, length, stop };

// "stop", "length", or "" for none.
const char* finish_reason_name(FinishReason reason);

struct StopParams {
  std::unordered_set<int32_t> eog_tokens;  // end-of-generation token ids
  int max_tokens = -1;                     // generated tokens at most; -1: no limit
  std::vector<std::string> stop;           // stop strings (bytes, UTF-8)
};

struct StopResult {
  std::string text;                        // what may be emitted now (may be empty)
  FinishReason reason = FinishReason::none;
};

class StopChecker {
 public:
  // Throws cohort::Error for max_tokens == 0 or < -1, or an empty stop string.
  explicit StopChecker(StopParams params);

  // Feeds the next generated token and its detokenized text.
  // REQUIRES: !finished().
  StopResult push(int32_t token, std::string_view piece);

  bool finished() const { return reason_ != FinishReason::none; }
  FinishReason reason() const { return reason_; }
  int n_generated() const { return n_generated_; }
  // The stop string that ended generation, or "".
  const std::string& matched_stop() const { return matched_stop_; }
  // Text held back right now (for tests and diagnostics).
  const std::string& held() const { return held_; }

  // Ends generation from outside (cancellation): returns the held text,
  // which is no longer withheld, and empties it.
  std::string flush();

 private:
  StopResult finish(FinishReason reason, size_t n_emit);
  // Earliest full stop-string match in held_: position, or npos.
  size_t find_stop(std::string* which) const;
  // Start of the longest tail of held_ that could still grow into a stop
  // string, or held_.size().
  size_t holdback_start() const;

  StopParams params_;
  std::string held_;
  std::string matched_stop_;
  int n_generated_ = 0;
  FinishReason reason_ = FinishReason::none;
};

// Length of the longest prefix of `text` that ends on a UTF-8 character
// boundary: a trailing lead byte with too few continuation bytes is cut off.
size_t utf8_complete_prefix(std::string_view text);

}  // namespace cohort::engine
