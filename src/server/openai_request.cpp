#include "server/openai_request.h"

#include <malloc.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <semaphore>

#include <fmt/format.h>

#include "common/error.h"
#include "server/chat_prompt.h"
#include "server/native_prompt.h"
#include "server/structured_output.h"

namespace cohort::server {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr double kNoUpperBound = std::numeric_limits<double>::max();

// max_completion_tokens, then max_tokens, then n_predict (-1: no limit).
int read_max_tokens(const Json& body, int fallback) {
  const auto mct = read_int(body, "max_completion_tokens", 1, kIntMax);
  const auto mt = read_int(body, "max_tokens", 1, kIntMax);
  const auto np = read_int(body, "n_predict", -1, kIntMax);
  if (np && *np == 0) reject_field("n_predict", "must be -1 (no limit) or >= 1, got 0");
  if (mct) return static_cast<int>(*mct);
  if (mt) return static_cast<int>(*mt);
  if (np) return static_cast<int>(*np);
  return fallback;
}

std::vector<std::string> read_stop(const Json& body) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  std::vector<std::string> stop;
  if (it->is_string()) {
    stop.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    if (it->size() > static_cast<size_t>(kMaxStopStrings)) {
      reject_field("stop", fmt::format("has {} strings; at most {} are allowed", it->size(), kMaxStopStrings));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        reject_field(fmt::format("stop[{}]", i), fmt::format("must be a string, got {}", json_type_name((*it)[i])));
      }
      stop.push_back((*it)[i].get<std::string>());
    }
  } else {
    reject_field("stop", fmt::format("must be a string or an array of strings, got {}", json_type_name(*it)));
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    const std::string name = it->is_array() ? fmt::format("stop[{}]", i) : std::string("stop");
    if (stop[i].empty()) reject_field(name, "must not be empty");
    if (stop[i].size() > kMaxStopBytes) reject_field(name, fmt::format("is longer than {} bytes", kMaxStopBytes));
  }
  return stop;
}

engine::SamplingParams read_sampling(const Json& body, engine::SamplingParams p) {
  if (auto v = read_number(body, "temperature", 0.0, 2.0)) p.temp = static_cast<float>(*v);
  if (auto v = read_number(body, "top_p", 0.0, 1.0, true)) p.top_p = static_cast<float>(*v);
  if (auto v = read_int(body, "top_k", -1, kIntMax)) p.top_k = static_cast<int32_t>(*v < 0 ? 0 : *v);
  if (auto v = read_number(body, "min_p", 0.0, 1.0)) p.min_p = static_cast<float>(*v);
  if (auto v = read_number(body, "presence_penalty", -2.0, 2.0)) p.presence_penalty = static_cast<float>(*v);
  if (auto v = read_number(body, "frequency_penalty", -2.0, 2.0)) p.frequency_penalty = static_cast<float>(*v);
  if (auto v = read_number(body, "repeat_penalty", 0.0, kNoUpperBound, true)) {
    p.repeat_penalty = static_cast<float>(*v);
  }
  if (auto v = read_int(body, "repeat_last_n", -1, kIntMax)) p.repeat_last_n = static_cast<int32_t>(*v);
  if (auto v = read_int(body, "seed", -1, std::numeric_limits<uint32_t>::max())) {
    p.seed = *v < 0 ? engine::kRandomSeed : static_cast<uint32_t>(*v);
  }
  try {
    p.validate();
  } catch (const Error& e) {
    throw RequestError(400, e.what());
  }
  return p;
}

// One [token, bias] of logit_bias: the token an id or (as llama-server
// allows) text, every token of which gets the bias; the bias a number, or
// false to ban the token.
void add_logit_bias(const std::string& where, const Json& token, const Json& bias,
                    const tokenizer::Tokenizer& tok, std::vector<engine::TokenBias>& out) {
  float value = 0.0f;
  if (bias.is_boolean() && !bias.get<bool>()) {
    value = -std::numeric_limits<float>::infinity();
  } else if (bias.is_number()) {
    value = static_cast<float>(bias.get<double>());
  } else {
    reject_field(where, fmt::format("must be a number, or false to ban the token, got {}", json_type_name(bias)));
  }
  std::vector<int32_t> ids;
  if (token.is_number_integer()) {
    ids.push_back(static_cast<int32_t>(std::clamp<int64_t>(token.get<int64_t>(), -1, kIntMax)));
  } else if (token.is_string()) {
    const std::string& text = token.get_ref<const std::string&>();
    int64_t id = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec == std::errc() && end == text.data() + text.size()) {
      ids.push_back(static_cast<int32_t>(std::clamp<int64_t>(id, -1, kIntMax)));
    } else {
      ids = tok.encode(text, false, false);
    }
  } else {
    reject_field(where, fmt::format("names a token by id or text, got {}", json_type_name(token)));
  }
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.n_vocab()) {
      reject_field(where, fmt::format("token id {} is outside the vocabulary of {}", id, tok.n_vocab()));
    }
    out.push_back({id, value});
  }
}

// logit_bias in OpenAI's form ({"token id": bias}) or llama-server's
// ([[token, bias], ...]).
std::vector<engine::TokenBias> read_logit_bias(const Json& body, const tokenizer::Tokenizer& tok) {
  const auto it = body.find("logit_bias");
  std::vector<engine::TokenBias> out;
  if (it == body.end() || it->is_null()) return out;
  if (it->is_object()) {
    for (const auto& [key, bias] : it->items()) {
      add_logit_bias(fmt::format("logit_bias[\"{}\"]", key), Json(key), bias, tok, out);
    }
  } else if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& pair = (*it)[i];
      const std::string where = fmt::format("logit_bias[{}]", i);
      if (!pair.is_array() || pair.size() != 2) reject_field(where, "must be a [token, bias] pair");
      add_logit_bias(where, pair[0], pair[1], tok, out);
    }
  } else {
    reject_field("logit_bias", fmt::format("must be an object of token ids to biases or an array of "
                                           "[token, bias] pairs, got {}", json_type_name(*it)));
  }
  return out;
}

// ignore_eos as llama-server applies it: a -inf bias on every
// end-of-generation token, after the request's own, in id order.
void add_eog_bans(const tokenizer::Tokenizer& tok, std::vector<engine::TokenBias>& out) {
  std::vector<int32_t> eog(tok.vocab().eog_ids().begin(), tok.vocab().eog_ids().end());
  std::sort(eog.begin(), eog.end());
  for (int32_t id : eog) out.push_back({id, -std::numeric_limits<float>::infinity()});
}

void read_stream_options(const Json& body, ResponseOptions& r) {
  r.stream = read_bool(body, "stream").value_or(false);
  const Json* so = read_object(body, "stream_options");
  if (!so) return;
  if (!r.stream) reject_field("stream_options", "is only allowed when 'stream' is true");
  const auto it = so->find("include_usage");
  if (it == so->end() || it->is_null()) return;
  if (!it->is_boolean()) {
    reject_field("stream_options.include_usage",
                 fmt::format("must be a boolean, got {}", json_type_name(*it)));
  }
  r.include_usage = it->get<bool>();
}

// The fields both endpoints share.
ParsedRequest read_common(const Json& body, const PromptContext& ctx, Endpoint endpoint) {
  ParsedRequest p;
  p.response.endpoint = endpoint;
  read_string(body, "model");  // any model name is accepted
  read_string(body, "user");
  if (auto n = read_int(body, "n", std::numeric_limits<int64_t>::min(), kIntMax)) {
    if (*n < 1 || *n > ctx.max_choices) {
      reject_field("n", fmt::format("must be between 1 and {} (the server's slots, -np), got {}", ctx.max_choices,
                                    *n));
    }
    p.response.n_choices = static_cast<int>(*n);
  }
  read_stream_options(body, p.response);
  p.response.verbose = read_bool(body, "verbose").value_or(ctx.verbose);
  GenerationRequest& g = p.generation;
  g.max_tokens = read_max_tokens(body, ctx.default_max_tokens);
  g.stop = read_stop(body);
  g.sampling = read_sampling(body, ctx.defaults);
  g.sampling.logit_bias = read_logit_bias(body, *ctx.tokenizer);
  g.cache_prompt = read_bool(body, "cache_prompt").value_or(true);
  g.ignore_eos = read_bool(body, "ignore_eos").value_or(false);
  g.return_progress = p.response.stream && read_bool(body, "return_progress").value_or(false);
  if (auto k = read_int(body, "n_keep", -1, kIntMax)) g.n_keep = static_cast<int>(*k);
  g.n_discard = static_cast<int>(read_int(body, "n_discard", 0, kIntMax).value_or(0));
  g.sampling.grammar = read_structured_output(body, ctx.grammars);
  // Under a grammar the end of generation comes exactly where the grammar
  // is complete (it allows nothing else there): ignore_eos does not apply.
  if (g.sampling.grammar) g.ignore_eos = false;
  if (g.ignore_eos) add_eog_bans(*ctx.tokenizer, g.sampling.logit_bias);
  return p;
}

// The completions `prompt`: a string, token ids, or one of either in an array.
std::vector<int32_t> read_completion_prompt(const Json& body, const PromptContext& ctx) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) reject_field("prompt", "is required");
  const Json* prompt = &*it;
  if (prompt->is_array() && !prompt->empty() && !(*prompt)[0].is_number_integer()) {
    if (prompt->size() > 1) reject_field("prompt", "holds several prompts; one per request is supported");
    prompt = &(*prompt)[0];
  }
  if (prompt->is_array()) return read_token_ids(*prompt, "prompt", ctx.tokenizer->n_vocab());
  if (!prompt->is_string()) {
    reject_field("prompt", fmt::format("must be a string or an array of token ids, got {}",
                                       json_type_name(*prompt)));
  }
  try {
    return ctx.tokenizer->encode(prompt->get<std::string>(), true, true);
  } catch (const Error& e) {
    throw RequestError(400, fmt::format("cannot tokenize the prompt: {}", e.what()), "prompt");
  }
}

void check_prompt_fits(const std::vector<int32_t>& prompt, const PromptContext& ctx, const char* field) {
  if (prompt.empty()) reject_field(field, "gives an empty prompt (no tokens)");
  if (static_cast<int64_t>(prompt.size()) >= ctx.n_ctx) {
    RequestError e(400,
                   fmt::format("This model's maximum context length is {} tokens, but '{}' resulted "
                               "in {} tokens; reduce its length",
                               ctx.n_ctx, field, prompt.size()),
                   field, "context_length_exceeded");
    e.n_prompt_tokens = static_cast<int>(prompt.size());
    e.n_ctx = ctx.n_ctx;
    throw e;
  }
}

// The deepest nesting of arrays and objects in JSON text and an upper bound
// of its values (one more than its commas and colons, plus its arrays and
// objects), strings skipped. Run before parsing: a parsed value costs far
// more than its text, and copying or printing one recurses per level.
struct JsonShape {
  size_t deepest = 0;
  size_t values = 1;
};

JsonShape json_shape(std::string_view text) {
  JsonShape shape;
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      shape.deepest = std::max(shape.deepest, ++depth);
      ++shape.values;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' || c == ':') {
      ++shape.values;
    }
  }
  return shape;
}

// Throws for a body too deep or with too many values; returns the values.
size_t check_shape(std::string_view body) {
  const JsonShape shape = json_shape(body);
  if (shape.deepest > kMaxJsonNesting) {
    throw RequestError(400, fmt::format("the request body nests deeper than {} levels", kMaxJsonNesting));
  }
  if (shape.values > kMaxJsonValues) {
    throw RequestError(400, fmt::format("the request body holds more than {} JSON values", kMaxJsonValues));
  }
  return shape.values;
}

std::counting_semaphore<kLargeTrees>& large_tree_turns() {
  static std::counting_semaphore<kLargeTrees> turns(kLargeTrees);
  return turns;
}

}  // namespace

ParsedBody::Turn::Turn(bool large) : large_(large) {
  if (large_) large_tree_turns().acquire();
}

// A large tree is many small blocks, which the allocator keeps in its free
// lists when they are freed: without the trim, a burst of large trees
// would leave the process that much larger for good.
ParsedBody::Turn::~Turn() {
  if (!large_) return;
  malloc_trim(0);
  large_tree_turns().release();
}

ParsedBody::ParsedBody(std::string_view body)
    : turn_(check_shape(body) > kLargeTreeValues), json_(Json::parse(body, nullptr, false)) {
  if (json_.is_discarded()) throw RequestError(400, "the request body is not valid JSON");
  if (!json_.is_object()) {
    throw RequestError(400, fmt::format("the request body must be a JSON object, got {}", json_type_name(json_)));
  }
}

std::vector<int32_t> read_token_ids(const Json& array, const std::string& field, int32_t n_vocab) {
  if (!array.is_array()) reject_field(field, fmt::format("must be an array, got {}", json_type_name(array)));
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    const Json& v = array[i];
    if (!v.is_number_integer()) {
      reject_field(field, fmt::format("must hold token ids (integers); item {} is {}", i, json_type_name(v)));
    }
    const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() < static_cast<uint64_t>(n_vocab)
                                                 : v.get<int64_t>() >= 0 && v.get<int64_t>() < n_vocab;
    if (!in_range) {
      reject_field(field, fmt::format("item {}: token id {} is outside the vocabulary (0..{})", i, v.dump(),
                                      n_vocab - 1));
    }
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

GenerationRequest choice_request(const GenerationRequest& request, int index) {
  GenerationRequest r = request;
  const uint32_t seed = request.sampling.seed;
  if (seed != engine::kRandomSeed) {
    r.sampling.seed = static_cast<uint32_t>((uint64_t{seed} + static_cast<uint64_t>(index)) % engine::kRandomSeed);
  }
  return r;
}

ParsedRequest parse_completion_request(std::string_view body_text, const PromptContext& ctx) {
  const ParsedBody parsed(body_text);
  const Json& body = parsed.json();
  ParsedRequest p = read_common(body, ctx, Endpoint::completions);
  if (read_bool(body, "echo").value_or(false)) reject_field("echo", "is not supported");
  if (auto n = read_int(body, "logprobs", 0, kMaxCompletionLogprobs)) {
    p.response.logprobs = true;
    p.generation.n_logprobs = static_cast<int>(*n);
  }
  p.generation.prompt = read_completion_prompt(body, ctx);
  check_prompt_fits(p.generation.prompt, ctx, "prompt");
  return p;
}

std::vector<ParsedRequest> parse_native_completion_request(std::string_view body_text, const PromptContext& ctx) {
  const ParsedBody parsed(body_text);
  const Json& body = parsed.json();
  ParsedRequest p = read_common(body, ctx, Endpoint::completions);
  if (p.response.n_choices != 1) {
    reject_field("n", "must be 1 on /completion; /v1/completions answers with several choices");
  }
  if (auto n = read_int(body, "n_probs", 0, kMaxTopLogprobs); n && *n > 0) {
    p.response.logprobs = true;
    p.generation.n_logprobs = static_cast<int>(*n);
  }
  p.response.return_tokens = read_bool(body, "return_tokens").value_or(false);
  p.response.post_sampling_probs = read_bool(body, "post_sampling_probs").value_or(false);
  if (const auto it = body.find("response_fields"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) reject_field("response_fields", "must be an array of strings");
    for (const Json& f : *it) {
      if (!f.is_string()) reject_field("response_fields", "must be an array of strings");
      p.response.response_fields.push_back(f.get<std::string>());
    }
  }
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) reject_field("prompt", "is required");
  // As llama-server: an array holding no number is a list of prompts.
  const bool several = it->is_array() && !it->empty() &&
                       std::none_of(it->begin(), it->end(), [](const Json& v) { return v.is_number(); });
  if (several && it->size() > static_cast<size_t>(kMaxNativePrompts)) {
    reject_field("prompt", fmt::format("holds {} prompts; at most {} a request", it->size(), kMaxNativePrompts));
  }
  if (several && it->size() > 1 && p.response.stream) {
    reject_field("stream", "several prompts are answered whole only; stream one prompt a request");
  }
  std::vector<ParsedRequest> out;
  for (const Json& prompt : several ? *it : Json::array({*it})) {
    ParsedRequest& one = out.emplace_back(p);
    one.generation.prompt = read_native_prompt(prompt, *ctx.tokenizer, "prompt");
    check_prompt_fits(one.generation.prompt, ctx, "prompt");
  }
  return out;
}

ParsedRequest parse_chat_request(std::string_view body_text, const PromptContext& ctx) {
  const ParsedBody parsed(body_text);
  const Json& body = parsed.json();
  ParsedRequest p = read_common(body, ctx, Endpoint::chat);
  const bool logprobs = read_bool(body, "logprobs").value_or(false);
  const auto top = read_int(body, "top_logprobs", 0, kMaxTopLogprobs);
  if (top && !logprobs) reject_field("top_logprobs", "requires 'logprobs' to be true");
  if (logprobs) {
    p.response.logprobs = true;
    p.generation.n_logprobs = static_cast<int>(top.value_or(0));
  }
  const Json* kwargs = read_object(body, "chat_template_kwargs");
  const auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null()) reject_field("messages", "is required");
  Json normalized = normalize_messages(*messages);
  const ChatEnding ending = read_chat_ending(body, normalized);
  p.generation.prompt = chat_prompt_tokens(normalized, ctx.chat_template, *ctx.tokenizer,
                                           template_variables(ctx.template_defaults, kwargs), ending);
  check_prompt_fits(p.generation.prompt, ctx, "messages");
  p.response.reasoning = ctx.reasoning_format;
  if (const auto name = read_string(body, "reasoning_format")) {
    const auto format = parse_reasoning_format(*name);
    if (!format) reject_field("reasoning_format", fmt::format("is '{}'; want {}", *name, kReasoningFormats));
    p.response.reasoning = *format;
  }
  const size_t tail = std::min<size_t>(p.generation.prompt.size(), 8);
  p.response.thinking_open = opens_thinking(
      ctx.tokenizer->decode(std::span(p.generation.prompt).last(tail), true));
  return p;
}

Json template_variables(const Json& defaults, const Json* kwargs) {
  Json vars = defaults.is_object() ? defaults : Json::object();
  if (kwargs != nullptr) {
    for (const auto& [k, v] : kwargs->items()) vars[k] = v;
  }
  return vars;
}

}  // namespace cohort::server
