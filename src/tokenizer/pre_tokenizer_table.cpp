// The pre-tokenizer types of llama.cpp (src/llama-vocab.cpp, the regexes of
// llm_tokenizer_bpe and the per-name defaults of llama_vocab::impl::load),
// restated as data. Patterns are written as llama.cpp lists them; the
// differences of its regex engine are handled by rewrite_for_pcre2().
#include <array>
#include <string>

#include "common/error.h"
#include "tokenizer/pre_tokenizer.h"

namespace cohort::tokenizer {
namespace {

using R = std::string_view;

// GPT-2's pattern (without its trailing "|\s+", as llama.cpp has it).
constexpr R kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

// Contractions spelled case-insensitively without (?i:...), as llama.cpp does.
#define COHORT_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"

constexpr R kLlama3 = COHORT_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::array kDefaultRegexes = {R(R"([\p{P}\$\+<=>\^~\|]+)"), kGpt2, R(R"(\p{N}+)"),
                                        R("[0-9][0-9][0-9]")};
constexpr std::array kLlama3Regexes = {kLlama3};
constexpr std::array kJais2Regexes = {R(COHORT_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})")};
constexpr std::array kDeepseekLlmRegexes = {
    R("[\r\n]"),
    R("\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+"),
    R("\\s?[!-/:-~！-／：-～‘-‟　-。]+"),
    R("\\s+$"),
    R("[一-龥ࠀ-一가-퟿]+"),
    R(R"(\p{N}+)"),
};
constexpr std::array kDeepseekCoderRegexes = {R("[\r\n]"), R(R"(\s?\p{L}+)"), R(R"(\s?\p{P}+)"),
                                              R("[一-龥ࠀ-一가-퟿]+"), R(R"(\p{N})")};
constexpr std::array kDeepseek3Regexes = {
    R(R"(\p{N}{1,3})"),
    R("[一-龥぀-ゟ゠-ヿ]+"),
    R(R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"),
};
constexpr std::array kYoutuRegexes = {
    R("[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+"),
    R(R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" COHORT_CONTRACTIONS
      R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" COHORT_CONTRACTIONS
      R"(?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"),
};
constexpr std::array kFalconRegexes = {R(R"([\p{P}\$\+<=>\^~\|`]+)"), kGpt2, R("[0-9][0-9][0-9]")};
constexpr std::array kStarcoderRegexes = {R(R"(\p{N})"), kGpt2};
constexpr std::array kGpt2Regexes = {kGpt2};
constexpr std::array kQwen2Regexes = {R(COHORT_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")};
constexpr std::array kQwen35Regexes = {R(COHORT_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")};
constexpr std::array kPoroRegexes = {R(R"( ?[^(\s|.,!?…。，、।۔،)]+)")};
constexpr std::array kVikingRegexes = {R(R"( ?[^(\s|.,!?…。，、।۔،)]+)"), R(R"(\p{N})")};
constexpr std::array kTekkenRegexes = {R(
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)")};
constexpr std::array kChameleonRegexes = {
    R("<sentinel:[0-9]+>"), R("(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z"), R("([\\t\\n]|    |  )"),
    R(R"(\p{N})"), R(R"([\p{P}!-/:-@\[-`{-~])"), kGpt2};
constexpr std::array kGpt4oRegexes = {R(
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)" COHORT_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)" COHORT_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)")};
constexpr std::array kGraniteEmbedMultiRegexes = {R(
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+)" COHORT_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*)" COHORT_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)")};
constexpr std::array kSuperBpeRegexes = {R(R"(\p{N}+)"), R(R"((?=(\d{3})+(?!\d)))")};
constexpr std::array kBailingMoeRegexes = {R(
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)")};
constexpr std::array kSeedCoderRegexes = {R(COHORT_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)")};
constexpr std::array kUfakzekaRegexes = {
    R(R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")};
constexpr std::array kExaoneMoeRegexes = {R(COHORT_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)")};
constexpr std::array kMinicpm5Regexes = {R(R"(\p{N}{1,3})"), R(COHORT_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")};

#undef COHORT_CONTRACTIONS

struct Flags {
  bool clean_spaces = true;
  bool ignore_merges = false;
  bool add_bos = false;
  bool no_bos = false;
};
constexpr Flags kClean{};
constexpr Flags kNoClean{.clean_spaces = false};

template <size_t N>
constexpr PreTypeInfo type(std::string_view name, const std::array<R, N>& regexes, Flags f) {
  return {name, regexes, f.clean_spaces, f.ignore_merges, f.add_bos, f.no_bos};
}

constexpr Flags kLlama3Flags{.clean_spaces = true, .ignore_merges = true, .add_bos = true};

const PreTypeInfo kTypes[] = {
    type("default", kDefaultRegexes, kClean),
    type("llama3", kLlama3Regexes, kLlama3Flags),
    type("llama-v3", kLlama3Regexes, kLlama3Flags),
    type("llama-bpe", kLlama3Regexes, kLlama3Flags),
    type("falcon3", kLlama3Regexes, kLlama3Flags),
    type("falcon-h1", kLlama3Regexes, kLlama3Flags),
    type("pixtral", kLlama3Regexes, kLlama3Flags),
    type("midm-2.0", kLlama3Regexes, kLlama3Flags),
    type("lfm2", kLlama3Regexes, kLlama3Flags),
    type("jina-v5-nano", kLlama3Regexes, kLlama3Flags),
    type("dbrx", kLlama3Regexes, kClean),
    type("smaug-bpe", kLlama3Regexes, kClean),
    type("jais-2", kJais2Regexes, kClean),
    type("deepseek-llm", kDeepseekLlmRegexes, kNoClean),
    type("deepseek-coder", kDeepseekCoderRegexes, kNoClean),
    type("deepseek-v3", kDeepseek3Regexes, kNoClean),
    type("hunyuan-dense", kDeepseek3Regexes, kNoClean),
    type("joyai-llm", kDeepseek3Regexes, kNoClean),
    type("youtu", kYoutuRegexes, {.clean_spaces = false, .ignore_merges = true}),
    type("falcon", kFalconRegexes, kClean),
    type("mpt", kGpt2Regexes, kClean),
    type("starcoder", kStarcoderRegexes, kClean),
    type("refact", kStarcoderRegexes, kClean),
    type("command-r", kStarcoderRegexes, kNoClean),
    type("smollm", kStarcoderRegexes, kNoClean),
    type("codeshell", kStarcoderRegexes, kClean),
    type("exaone", kStarcoderRegexes, kClean),
    type("minerva-7b", kStarcoderRegexes, kClean),
    type("mellum2", kStarcoderRegexes, kClean),
    type("gpt-2", kGpt2Regexes, kClean),
    type("phi-2", kGpt2Regexes, kClean),
    type("jina-es", kGpt2Regexes, kClean),
    type("jina-de", kGpt2Regexes, kClean),
    type("gigachat", kGpt2Regexes, kClean),
    type("jina-v2-es", kGpt2Regexes, kClean),
    type("jina-v2-de", kGpt2Regexes, kClean),
    type("a.x-4.0", kGpt2Regexes, kClean),
    type("mellum", kGpt2Regexes, kClean),
    type("modern-bert", kGpt2Regexes, kClean),
    type("exaone4", kGpt2Regexes, kClean),
    type("olmo", kGpt2Regexes, kClean),
    type("jais", kGpt2Regexes, kClean),
    type("trillion", kGpt2Regexes, kNoClean),
    type("granite-docling", kGpt2Regexes, kNoClean),
    type("stablelm2", kQwen2Regexes, kClean),
    type("qwen2", kQwen2Regexes, kNoClean),
    type("deepseek-r1-qwen", kQwen2Regexes, kNoClean),
    type("kormo", kQwen2Regexes, kNoClean),
    type("f2llmv2", kQwen2Regexes, kNoClean),
    type("megrez", kQwen2Regexes, kClean),
    type("hunyuan", kQwen2Regexes, kNoClean),
    type("solar-open", kQwen2Regexes, kNoClean),
    type("qwen35", kQwen35Regexes, kNoClean),
    type("poro-chat", kPoroRegexes, kNoClean),
    type("bloom", kPoroRegexes, kClean),
    type("gpt3-finnish", kPoroRegexes, kClean),
    type("chatglm-bpe", kLlama3Regexes, {.clean_spaces = true, .no_bos = true}),
    type("glm4", kLlama3Regexes, {.clean_spaces = true, .no_bos = true}),
    type("viking", kVikingRegexes, kNoClean),
    type("tekken", kTekkenRegexes, {.clean_spaces = false, .ignore_merges = true, .add_bos = true}),
    type("chameleon", kChameleonRegexes, {.clean_spaces = false, .add_bos = true}),
    type("gpt-4o", kGpt4oRegexes, kNoClean),
    type("llama4", kGpt4oRegexes, kNoClean),
    type("kanana2", kGpt4oRegexes, kNoClean),
    type("minimax-m2", kGpt4oRegexes, kNoClean),
    type("granite-embed-multi-97m", kGraniteEmbedMultiRegexes,
         {.clean_spaces = false, .ignore_merges = true}),
    type("superbpe", kSuperBpeRegexes, kNoClean),
    type("bailingmoe", kBailingMoeRegexes, kNoClean),
    type("bailingmoe2", kBailingMoeRegexes, kNoClean),
    type("llada-moe", kBailingMoeRegexes, kNoClean),
    type("seed-coder", kSeedCoderRegexes, kNoClean),
    type("grok-2", kQwen2Regexes, kNoClean),
    type("ufakzeka", kUfakzekaRegexes, kNoClean),
    type("exaone-moe", kExaoneMoeRegexes, kClean),
    type("minicpm5", kMinicpm5Regexes, {.clean_spaces = true, .ignore_merges = true}),
};

}  // namespace

const PreTypeInfo& find_pre_type(std::string_view name) {
  if (name.empty()) name = "default";
  for (const PreTypeInfo& t : kTypes) {
    if (t.name == name) return t;
  }
  fail("unknown pre-tokenizer type (tokenizer.ggml.pre) '{}'; supported: {}", name,
       supported_pre_types());
}

std::string supported_pre_types() {
  std::string out;
  for (const PreTypeInfo& t : kTypes) {
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

}  // namespace cohort::tokenizer
