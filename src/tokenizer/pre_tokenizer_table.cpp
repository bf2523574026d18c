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
// Non-ASCII characters are written as \x{..} escapes: the letter class
// holds compatibility characters (U+212A KELVIN SIGN, U+2126 OHM SIGN, ...)
// that Unicode normalization of the source text would silently change.
constexpr std::array kDeepseekLlmRegexes = {
    R("[\r\n]"),
    R(R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
      R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
      R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
      R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
      R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
      R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})"
      R"(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})"
      R"(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
      R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
      R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})"
      R"(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
      R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})"
      R"(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
      R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
      R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)"),
    R(R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)"),
    R(R"(\s+$)"),
    R(R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)"),
    R(R"(\p{N}+)"),
};
constexpr std::array kDeepseekCoderRegexes = {R("[\r\n]"), R(R"(\s?\p{L}+)"), R(R"(\s?\p{P}+)"),
                                              R(R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)"),
                                              R(R"(\p{N})")};
constexpr std::array kDeepseek3Regexes = {
    R(R"(\p{N}{1,3})"),
    R(R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)"),
    R(R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"),
};
constexpr std::array kYoutuRegexes = {
    R(R"([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019})"
      R"(\x{2014}\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|[\x{3105}-\x{312F}]+)"
      R"(|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)"),
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
constexpr R kPoro = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";
constexpr std::array kPoroRegexes = {kPoro};
constexpr std::array kVikingRegexes = {kPoro, R(R"(\p{N})")};
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
