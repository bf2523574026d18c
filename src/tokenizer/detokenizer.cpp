#include "tokenizer/detokenizer.h"

#include <fmt/format.h>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/utf8.h"

namespace cohort::tokenizer {
namespace {

// A BPE token's text back to bytes. Code points outside the byte table are
// spelled out as llama.cpp does: "[UNK_BYTE_0x<utf-8 hex><token text>]".
void append_bpe_text(std::string_view text, std::string& out) {
  size_t pos = 0;
  while (pos < text.size()) {
    const LenientCodepoint c = decode_lenient(text, pos);
    pos += c.length;
    const int byte = c.valid ? codepoint_to_byte(c.cpt) : -1;
    if (byte >= 0) {
      out.push_back(static_cast<char>(byte));
      continue;
    }
    std::string utf8;
    append_utf8(utf8, c.cpt <= 0x10FFFF ? c.cpt : kReplacementChar);
    out += "[UNK_BYTE_0x";
    for (char b : utf8) out += fmt::format("{:02x}", static_cast<uint8_t>(b));
    out += text;
    out += ']';
  }
}

void append_unescaped_spm(std::string_view text, std::string& out) {
  static constexpr std::string_view kSpace = "\xE2\x96\x81";
  size_t pos = 0;
  for (size_t hit; (hit = text.find(kSpace, pos)) != std::string_view::npos; pos = hit + kSpace.size()) {
    out.append(text.substr(pos, hit - pos));
    out += ' ';
  }
  out.append(text.substr(pos));
}

}  // namespace

void append_piece(const Vocab& vocab, int32_t id, bool special, bool strip_space, std::string& out) {
  const TokenData& t = vocab.token(id);
  constexpr uint32_t kHidden = attr::kUnknown | attr::kControl;
  if (!special && (t.attr & kHidden)) return;
  const size_t start = out.size();
  if (t.attr & (kHidden | attr::kUserDefined)) {
    out += t.text;
  } else if (t.attr & attr::kNormal) {
    if (vocab.type() == VocabType::kBpe) {
      append_bpe_text(t.text, out);
    } else {
      append_unescaped_spm(t.text, out);
    }
  } else if (t.attr & attr::kByte) {
    out.push_back(static_cast<char>(Vocab::byte_of(t)));
  }
  if (strip_space && out.size() > start && out[start] == ' ') out.erase(start, 1);
}

std::string detokenize(const Vocab& vocab, std::span<const int32_t> ids, bool special) {
  std::string text;
  bool strip_space = vocab.add_space_prefix();
  for (int32_t id : ids) {
    append_piece(vocab, id, special, strip_space, text);
    strip_space = false;
  }
  if (vocab.clean_spaces()) clean_up_spaces(text);
  return text;
}

void clean_up_spaces(std::string& text) {
  if (text.empty()) return;
  // 1: " ?", " !", " .", " ," lose the space.
  std::string in = text;
  size_t n = 1;
  for (size_t i = 1; i < in.size(); ++i) {
    const char x = in[i];
    if (in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --n;
    text[n++] = x;
  }
  text.resize(n);
  // 2: " ' " becomes "'"; the character after it no longer counts as
  // following a space.
  in = text;
  n = 1;
  for (size_t i = 1; i < in.size(); ++i) {
    const char x = in[i];
    if (x == '\'' && i + 1 < in.size() && in[i - 1] == ' ' && in[i + 1] == ' ') {
      --n;
      in[++i] = '\0';
    }
    text[n++] = x;
  }
  text.resize(n);
  // 3: " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
  in = text;
  n = 1;
  for (size_t i = 1; i < in.size(); ++i) {
    const char x = in[i];
    if (in[i - 1] == ' ' && x == '\'' && i + 1 < in.size()) {
      const char x1 = in[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --n;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < in.size()) {
        const char x2 = in[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --n;
      }
    }
    text[n++] = x;
  }
  text.resize(n);
}

std::string Detokenizer::push(int32_t id) {
  append_piece(*vocab_, id, special_, first_ && vocab_->add_space_prefix(), pending_);
  first_ = false;
  const size_t n = utf8_emittable_prefix(pending_);
  std::string out = to_valid_utf8(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string Detokenizer::finish() {
  std::string out = to_valid_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace cohort::tokenizer
