#include "model/synthetic_vocab.h"

#include <string>
#include <vector>

#include "common/error.h"

namespace cohort::model {
namespace {

// GPT-2's printable stand-in for each byte, as UTF-8: printable Latin-1 bytes
// stand for themselves, the others map to U+0100 onwards in byte order.
std::vector<std::string> byte_symbols() {
  auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  std::vector<std::string> out(256);
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) out[b] = utf8(printable(b) ? static_cast<uint32_t>(b) : next++);
  return out;
}

// Merges of frequent English pairs; "Ġ" is the symbol of the space byte.
const char* const kMerges[] = {
    "Ġ t", "h e", "i n", "e r", "a n", "Ġ a", "o n", "r e", "Ġ s", "e n", "Ġ w", "a t",
    "o r", "Ġ o", "Ġ c", "e s", "i s", "i t", "Ġ b", "a l", "Ġ f", "Ġ p", "Ġ m", "Ġ d",
    "Ġ h", "Ġ i", "Ġ l", "Ġ n", "Ġ e", "Ġ g", "Ġ r", "Ġ u", "Ġt he", "in g",
    "e d", "o u", "l e", "s t", "a r", "n d", "Ġa nd", "Ġo f", "Ġt o",
};

}  // namespace

void write_synthetic_vocab(gguf::Metadata& md, int64_t n_vocab) {
  if (n_vocab < kMinSyntheticVocab) {
    fail("a synthetic vocabulary needs at least {} tokens, {} requested", kMinSyntheticVocab,
         n_vocab);
  }
  constexpr int32_t kNormal = 1, kControl = 3, kUnused = 5;
  gguf::Array tokens{gguf::ValueType::STRING, {}};
  gguf::Array types{gguf::ValueType::INT32, {}};
  gguf::Array merges{gguf::ValueType::STRING, {}};
  auto add = [&](std::string text, int32_t type) {
    tokens.items.emplace_back(std::move(text));
    types.items.emplace_back(type);
  };
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) add(s, kControl);
  for (const std::string& s : byte_symbols()) add(s, kNormal);
  for (const char* m : kMerges) {
    std::string merge(m);
    merges.items.emplace_back(merge);
    std::string joined;
    for (char c : merge) {
      if (c != ' ') joined += c;
    }
    add(joined, kNormal);
  }
  for (int64_t i = static_cast<int64_t>(tokens.items.size()); i < n_vocab; ++i) {
    add("<|unused_" + std::to_string(i) + "|>", kUnused);
  }
  md.set("tokenizer.ggml.model", gguf::Value("gpt2"));
  md.set("tokenizer.ggml.pre", gguf::Value("default"));
  md.set("tokenizer.ggml.tokens", gguf::Value(std::move(tokens)));
  md.set("tokenizer.ggml.token_type", gguf::Value(std::move(types)));
  md.set("tokenizer.ggml.merges", gguf::Value(std::move(merges)));
  md.set("tokenizer.ggml.bos_token_id", gguf::Value(uint32_t{0}));
  md.set("tokenizer.ggml.eos_token_id", gguf::Value(uint32_t{2}));
  md.set("tokenizer.ggml.padding_token_id", gguf::Value(uint32_t{0}));
  md.set("tokenizer.ggml.add_bos_token", gguf::Value(false));
  md.set("tokenizer.chat_template",
         gguf::Value("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
                     "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
                     "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"));
}

int64_t copy_vocab(const gguf::Metadata& from, gguf::Metadata& md) {
  const gguf::Array* tokens = from.get_array("tokenizer.ggml.tokens");
  if (!tokens) fail("the vocabulary source has no tokenizer.ggml.tokens");
  for (const auto& [key, value] : from.entries()) {
    if (key.rfind("tokenizer.", 0) == 0) md.set(key, value);
  }
  return static_cast<int64_t>(tokens->items.size());
}

}  // namespace cohort::model
