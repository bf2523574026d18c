#include "tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <span>

#include <fmt/format.h>

#include "common/error.h"

namespace cohort::tokenizer {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";

uint32_t attr_from_token_type(int64_t type) {
  switch (type) {
    case 1: return attr::kNormal;
    case 2: return attr::kUnknown;
    case 3: return attr::kControl;
    case 4: return attr::kUserDefined;
    case 5: return attr::kUnused;
    case 6: return attr::kByte;
    default: return attr::kUndefined;
  }
}

// Texts that llama.cpp recognizes as special tokens when the GGUF does not
// name them, in the order they are tried here. (llama.cpp walks a hash map,
// so when a vocabulary holds two candidates its pick is unspecified.)
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                     "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                     "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                     "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                     "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                     "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// Any token spelled like one of these ends generation.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
    "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
    "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~["};

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

int32_t Vocab::find(std::string_view text) const { return index_.find(text); }

uint8_t Vocab::byte_of(const TokenData& t) {
  // strtol(text.substr(3, 2), 16), as llama.cpp reads "<0xAB>".
  unsigned value = 0;
  for (size_t i = 3; i < 5 && i < t.text.size(); ++i) {
    const char c = t.text[i];
    if (!std::isxdigit(static_cast<unsigned char>(c))) break;
    value = value * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c))
                                                   ? c - '0'
                                                   : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
  }
  return static_cast<uint8_t>(value);
}

Vocab Vocab::from_metadata(const gguf::Metadata& md) {
  Vocab v;
  v.read_model(md);
  v.read_tokens(md);
  v.read_special_ids(md);
  v.detect_special_by_text();
  v.build_eog();
  v.build_caches(md);
  return v;
}

void Vocab::read_model(const gguf::Metadata& md) {
  std::optional<std::string> model = md.get_string(kModelKey);
  if (!model) fail("no tokenizer in the file: {} is missing", kModelKey);
  model_ = *model;
  if (model_ == "llama") {
    type_ = VocabType::kSpm;
    pre_ = &find_pre_type("default");  // SPM has no pre-tokenizer; the name is not checked
    bos_ = 1, eos_ = 2, unk_ = 0;
    add_space_prefix_ = true, clean_spaces_ = false, add_bos_ = true, add_eos_ = false;
  } else if (model_ == "gpt2") {
    type_ = VocabType::kBpe;
    pre_ = &find_pre_type(md.get_string("tokenizer.ggml.pre").value_or(""));
    bos_ = 11, eos_ = 11;  // llama.cpp's defaults for BPE vocabularies
    if (pre_->no_bos) bos_ = kNoToken;
    add_space_prefix_ = false, clean_spaces_ = pre_->clean_spaces, add_bos_ = pre_->add_bos;
  } else {
    fail("unsupported tokenizer model {} = '{}'; supported: gpt2 (byte-level BPE), "
         "llama (SentencePiece-style)", kModelKey, model_);
  }
  if (auto b = md.get_bool("tokenizer.ggml.add_space_prefix")) add_space_prefix_ = *b;
}

void Vocab::read_tokens(const gguf::Metadata& md) {
  const gguf::Array* tokens = md.get_array(kTokensKey);
  if (!tokens) fail("{} is missing", kTokensKey);
  if (tokens->elem_type != gguf::ValueType::STRING) {
    fail("{} must be an array of strings, not of {}", kTokensKey, gguf::value_type_name(tokens->elem_type));
  }
  const size_t n = tokens->items.size();
  if (n == 0 || n > static_cast<size_t>(INT32_MAX)) fail("{} has {} entries", kTokensKey, n);
  const gguf::Array* scores = md.get_array("tokenizer.ggml.scores");
  const gguf::Array* types = md.get_array("tokenizer.ggml.token_type");
  if (scores && scores->items.size() < n) {
    fail("tokenizer.ggml.scores has {} entries for {} tokens", scores->items.size(), n);
  }
  if (types && types->items.size() < n) {
    fail("tokenizer.ggml.token_type has {} entries for {} tokens", types->items.size(), n);
  }
  tokens_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TokenData& t = tokens_[i];
    // llama.cpp reads token texts as C strings: they end at the first NUL.
    const std::string& text = *tokens->items[i].as_string();
    t.text = text.substr(0, text.find('\0'));
    if (t.text.empty()) t.text = fmt::format("[EMPTY_{}]", i);
    if (scores) t.score = static_cast<float>(scores->items[i].as_double().value_or(0.0));
    if (types) t.attr = attr_from_token_type(types->items[i].as_int().value_or(0));
  }
  index_.assign_all(tokens_);
  if (index_.size() != n) {  // llama.cpp refuses such a vocabulary too (an assertion)
    for (size_t i = 0; i < n; ++i) {
      if (find(tokens_[i].text) != static_cast<int32_t>(i)) {
        fail("{}: token {} has the same text as token {}: '{}'", kTokensKey, i, find(tokens_[i].text),
             tokens_[i].text);
      }
    }
  }
}

void Vocab::read_special_ids(const gguf::Metadata& md) {
  const std::pair<std::string_view, int32_t*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &bos_},        {"tokenizer.ggml.eos_token_id", &eos_},
      {"tokenizer.ggml.eot_token_id", &eot_},        {"tokenizer.ggml.eom_token_id", &eom_},
      {"tokenizer.ggml.unknown_token_id", &unk_},    {"tokenizer.ggml.seperator_token_id", &sep_},
      {"tokenizer.ggml.padding_token_id", &pad_},    {"tokenizer.ggml.mask_token_id", &mask_},
      {"tokenizer.ggml.fim_pre_token_id", &fim_pre_}, {"tokenizer.ggml.fim_suf_token_id", &fim_suf_},
      {"tokenizer.ggml.fim_mid_token_id", &fim_mid_}, {"tokenizer.ggml.fim_pad_token_id", &fim_pad_},
      {"tokenizer.ggml.fim_rep_token_id", &fim_rep_}, {"tokenizer.ggml.fim_sep_token_id", &fim_sep_},
      {"tokenizer.ggml.prefix_token_id", &fim_pre_}, {"tokenizer.ggml.suffix_token_id", &fim_suf_},
      {"tokenizer.ggml.middle_token_id", &fim_mid_},
  };
  for (const auto& [key, id] : keys) {
    if (*id >= n_tokens()) *id = kNoToken;  // a default outside the vocabulary
    const std::optional<int64_t> value = md.get_int(key);
    if (value && *value >= 0 && *value < n_tokens()) *id = static_cast<int32_t>(*value);
  }
  if (auto b = md.get_bool("tokenizer.ggml.add_bos_token")) add_bos_ = *b;
  if (auto b = md.get_bool("tokenizer.ggml.add_eos_token")) add_eos_ = *b;
}

void Vocab::detect_special_by_text() {
  auto detect = [&](int32_t& id, std::span<const std::string_view> texts) {
    if (id != kNoToken) return;
    for (std::string_view text : texts) {
      const int32_t found = find(text);
      if (found == kNoToken) continue;
      id = found;
      tokens_[found].attr |= attr::kControl;
      return;
    }
  };
  detect(eot_, kEotTexts);
  constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
  detect(eom_, kEomTexts);
  detect(fim_pre_, kFimPreTexts);
  detect(fim_suf_, kFimSufTexts);
  detect(fim_mid_, kFimMidTexts);
  detect(fim_pad_, kFimPadTexts);
  detect(fim_rep_, kFimRepTexts);
  detect(fim_sep_, kFimSepTexts);
  // Control tokens named "unused..." are unused.
  for (TokenData& t : tokens_) {
    if ((t.attr & attr::kControl) && t.text.find("unused") != std::string::npos) t.attr |= attr::kUnused;
  }
}

void Vocab::build_eog() {
  for (int32_t id : {fim_pad_, fim_rep_, fim_sep_}) {
    if (id != kNoToken) eog_.insert(id);
  }
  for (std::string_view text : kEogTexts) {
    const int32_t id = find(text);
    if (id == kNoToken) continue;
    eog_.insert(id);
    tokens_[id].attr |= attr::kControl;
  }
  // gpt-oss channel markers are always rendered.
  for (std::string_view text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    if (const int32_t id = find(text); id != kNoToken) tokens_[id].attr = attr::kUserDefined;
  }
  for (int32_t id : {eos_, eot_, eom_}) {
    if (id != kNoToken) eog_.insert(id);
  }
  auto eog_has = [&](std::string_view text) {
    const int32_t id = find(text);
    return id != kNoToken && eog_.count(id) != 0 ? id : kNoToken;
  };
  // o200k_harmony / solar-open: "<|end|>" ends a message, not the generation.
  const int32_t end = eog_has("<|end|>");
  const bool has_call = eog_has("<|call|>") != kNoToken || eog_has("<|calls|>") != kNoToken;
  if (end != kNoToken && has_call &&
      (eog_has("<|return|>") != kNoToken || eog_has("<|flush|>") != kNoToken)) {
    eog_.erase(end);
    tokens_[end].attr = attr::kUserDefined;
  }
  // Gemma 4 / PLaMo: "</s>" is an ordinary HTML tag there.
  const int32_t close_s = eog_has("</s>");
  if (close_s != kNoToken &&
      (eog_has("<|tool_response>") != kNoToken || eog_has("<|plamo:eos|>") != kNoToken)) {
    eog_.erase(close_s);
    tokens_[close_s].attr = attr::kNormal;
  }
}

void Vocab::build_caches(const gguf::Metadata& md) {
  for (int32_t id = 0; id < n_tokens(); ++id) {
    if (tokens_[id].attr & (attr::kControl | attr::kUserDefined | attr::kUnknown)) {
      special_tokens_.push_back(id);
    }
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [&](int32_t a, int32_t b) {
    return tokens_[a].text.size() > tokens_[b].text.size();
  });
  for (int b = 0; b < 256; ++b) {
    int32_t id = kNoToken;
    if (type_ == VocabType::kSpm) id = find(fmt::format("<0x{:02X}>", b));
    if (id == kNoToken) id = find(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id;
  }
  // Per-model strip rules llama.cpp applies by name.
  const std::string name = lowercase(md.get_string("general.name").value_or(""));
  const std::string pre = md.get_string("tokenizer.ggml.pre").value_or("");
  const std::string arch = md.get_string("general.architecture").value_or("");
  auto set_attr = [&](std::string_view text, uint32_t bit, bool on) {
    const int32_t id = find(text);
    if (id == kNoToken) return;
    tokens_[id].attr = on ? (tokens_[id].attr | bit) : (tokens_[id].attr & ~bit);
  };
  if (pre == "jina-v2-de" || pre == "jina-v2-es" || pre == "jina-v2-code" ||
      arch.find("nomic-bert-moe") != std::string::npos || arch.find("jina-bert-v3") != std::string::npos) {
    set_attr("<mask>", attr::kLstrip, true);
  } else if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : special_tokens_) tokens_[id].attr |= attr::kRstrip;
    set_attr("</s>", attr::kRstrip, true);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, attr::kRstrip, false);
  } else if (name.find("modern-bert") != std::string::npos) {
    set_attr("[MASK]", attr::kLstrip, true);
  }
}

}  // namespace cohort::tokenizer
