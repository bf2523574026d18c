#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <functional>
#include <string>

#include "common/error.h"
#include "tokenizer/regex_rewrite.h"
#include "tokenizer/utf8.h"

namespace cohort::tokenizer {

// Per-thread match state. The JIT stack grows to 8 MiB (the default 32 KiB
// overflows on long words with patterns that repeat capture groups, such as
// the tekken and gpt-4o ones).
class MatchState {
 public:
  MatchState()
      : data_(pcre2_match_data_create(32, nullptr)),
        stack_(pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr)),
        context_(pcre2_match_context_create(nullptr)) {
    if (!data_ || !stack_ || !context_) throw std::bad_alloc();
    pcre2_jit_stack_assign(context_, nullptr, stack_);
  }
  ~MatchState() {
    pcre2_match_context_free(context_);
    pcre2_jit_stack_free(stack_);
    pcre2_match_data_free(data_);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;

  pcre2_match_data* data() { return data_; }
  pcre2_match_context* context() { return context_; }

  static MatchState& for_this_thread() {
    thread_local MatchState state;
    return state;
  }

 private:
  pcre2_match_data* data_;
  pcre2_jit_stack* stack_;
  pcre2_match_context* context_;
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  std::string pattern;
  ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(const PreTypeInfo& type) {
  for (std::string_view source : type.regexes) {
    auto c = std::make_unique<Compiled>();
    c->pattern = rewrite_for_pcre2(source);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    // No PCRE2_UCP: \d \w \b stay ASCII as in std::regex; \s is rewritten.
    c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(c->pattern.data()), c->pattern.size(),
                            PCRE2_UTF | PCRE2_DOLLAR_ENDONLY, &error, &error_offset, nullptr);
    if (!c->code) {
      fail("pre-tokenizer '{}': regex does not compile at offset {}: {} (pattern {})", type.name,
           error_offset, pcre2_message(error), c->pattern);
    }
    pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
    regexes_.push_back(std::move(c));
  }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

namespace {

// One match attempt in subject[0, length) from `start`; returns false when
// there is none. Throws on engine errors.
bool find_match(const pcre2_code* code, std::string_view subject, size_t start, uint32_t options,
                MatchState& state, size_t* begin, size_t* end) {
  const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(),
                             start, options | PCRE2_NO_UTF_CHECK, state.data(), state.context());
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    fail("pre-tokenizer: regex match failed on a piece of {} bytes: {}", subject.size(),
         pcre2_message(rc));
  }
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data());
  *begin = ovector[0];
  *end = ovector[1];
  return true;
}

// Splits subject (one piece) by `code` into matches and the gaps between
// them, with the iteration rules of std::regex_iterator: after an empty match
// the next match must be non-empty at the same place, or the search moves on
// by one character. Empty pieces are dropped (they hold no text). Calls
// emit(offset, length) per piece, offsets relative to subject.
template <typename Emit>
void split_piece(const pcre2_code* code, std::string_view subject, MatchState& state, Emit&& emit) {
  auto piece = [&](size_t from, size_t to) {
    if (to > from) emit(from, to - from);
  };
  size_t done = 0, pos = 0, begin = 0, end = 0;
  bool found = find_match(code, subject, pos, 0, state, &begin, &end);
  while (found) {
    piece(done, begin);
    piece(begin, end);
    done = end;
    if (end > begin) {
      found = end < subject.size() && find_match(code, subject, end, 0, state, &begin, &end);
      continue;
    }
    if (end >= subject.size()) break;
    if (find_match(code, subject, end, PCRE2_ANCHORED | PCRE2_NOTEMPTY_ATSTART, state, &begin, &end)) {
      continue;
    }
    pos = std::min(subject.size(), end + utf8_lead_length(static_cast<uint8_t>(subject[end])));
    found = find_match(code, subject, pos, 0, state, &begin, &end);
  }
  piece(done, subject.size());
}

}  // namespace

void PreTokenizer::split_level(size_t level, std::string_view text, uint32_t base, MatchState& state,
                               const std::function<void(TextSpan)>& emit) const {
  if (level == regexes_.size()) {
    emit({base, static_cast<uint32_t>(text.size())});
    return;
  }
  split_piece(regexes_[level]->code, text, state, [&](size_t offset, size_t length) {
    split_level(level + 1, text.substr(offset, length), base + static_cast<uint32_t>(offset), state, emit);
  });
}

void PreTokenizer::split(std::string_view text, const std::function<void(TextSpan)>& emit) const {
  if (text.empty()) return;
  split_level(0, text, 0, MatchState::for_this_thread(), emit);
}

std::vector<TextSpan> PreTokenizer::split(std::string_view text) const {
  std::vector<TextSpan> pieces;
  split(text, [&](TextSpan s) { pieces.push_back(s); });
  return pieces;
}

}  // namespace cohort::tokenizer
