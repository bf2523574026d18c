#include "tokenizer/tokenizer.h"

#include <optional>

#include "common/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm.h"
#include "tokenizer/utf8.h"

namespace cohort::tokenizer {

struct Tokenizer::Impl {
  Vocab vocab;
  SpecialTokenMatcher specials;
  std::optional<PreTokenizer> pre;  // BPE only
  std::optional<BpeModel> bpe;      // BPE only
  std::optional<SpmModel> spm;      // SPM only

  explicit Impl(const gguf::Metadata& md) : vocab(Vocab::from_metadata(md)), specials(vocab) {
    if (vocab.type() == VocabType::kBpe) {
      pre.emplace(vocab.pre_type());
      bpe.emplace(md, vocab);
    } else {
      spm.emplace(vocab);
    }
  }

  void check_id(int32_t id) const {
    if (id < 0 || id >= vocab.n_tokens()) {
      fail("token id {} is outside the vocabulary (0..{})", id, vocab.n_tokens() - 1);
    }
  }

  void encode_bpe_text(std::string_view text, std::vector<int32_t>& out) const;
  void add_bos(std::vector<int32_t>& out) const;
  void add_eos(std::vector<int32_t>& out) const;
};

void Tokenizer::Impl::encode_bpe_text(std::string_view text, std::vector<int32_t>& out) const {
  // llama.cpp tokenizes the leniently decoded and re-encoded text.
  std::string normalized;
  std::string regex_view;
  std::string_view words = text, view = text;
  if (!is_valid_utf8(text)) {
    normalized = normalize_utf8(text);
    words = view = normalized;
    // Surrogates (which lenient decoding lets through) are not UTF-8 to
    // PCRE2; U+FFFF has the same length and the same (non-)classes.
    if (normalized.find('\xED') != std::string::npos) {
      regex_view = normalized;
      for (size_t i = 0; i + 2 < regex_view.size(); ++i) {
        if (regex_view[i] == '\xED' && static_cast<uint8_t>(regex_view[i + 1]) >= 0xA0) {
          regex_view.replace(i, 3, "\xEF\xBF\xBF");
        }
      }
      view = regex_view;
    }
  }
  BpeModel::Scratch scratch;
  pre->split(view, [&](TextSpan s) { bpe->encode_word(words.substr(s.offset, s.length), scratch, out); });
}

void Tokenizer::Impl::add_bos(std::vector<int32_t>& out) const {
  if (!vocab.add_bos()) return;
  if (vocab.bos() == kNoToken) fail("the vocabulary asks for a BOS token (add_bos_token) but has none");
  out.push_back(vocab.bos());
}

void Tokenizer::Impl::add_eos(std::vector<int32_t>& out) const {
  if (!vocab.add_eos()) return;
  if (vocab.eos() == kNoToken) fail("the vocabulary asks for an EOS token (add_eos_token) but has none");
  out.push_back(vocab.eos());
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_gguf(const gguf::Metadata& md) { return Tokenizer(std::make_unique<Impl>(md)); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& m = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) m.add_bos(out);
  bool prev_special = true;  // SPM: the text after a special token (or at the start) gets a space
  for (const Fragment& f : m.specials.partition(m.vocab, text, parse_special)) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    const std::string_view piece = text.substr(f.offset, f.length);
    if (m.vocab.type() == VocabType::kBpe) {
      m.encode_bpe_text(piece, out);
    } else {
      m.spm->encode(m.vocab, spm_escape(piece, m.vocab.add_space_prefix() && prev_special), out);
    }
    prev_special = false;
  }
  if (add_special) m.add_eos(out);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
  for (int32_t id : ids) impl_->check_id(id);
  return detokenize(impl_->vocab, ids, special);
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  impl_->check_id(id);
  std::string piece;
  append_piece(impl_->vocab, id, special, false, piece);
  return piece;
}

Detokenizer Tokenizer::detokenizer(bool special) const { return Detokenizer(impl_->vocab, special); }

int32_t Tokenizer::n_vocab() const { return impl_->vocab.n_tokens(); }
int32_t Tokenizer::bos() const { return impl_->vocab.bos(); }
int32_t Tokenizer::eos() const { return impl_->vocab.eos(); }
int32_t Tokenizer::eot() const { return impl_->vocab.eot(); }
bool Tokenizer::is_eog(int32_t id) const { return impl_->vocab.is_eog(id); }
const Vocab& Tokenizer::vocab() const { return impl_->vocab; }

}  // namespace cohort::tokenizer
