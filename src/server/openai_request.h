// Parsing and validating the body of a /v1/completions or
// /v1/chat/completions request into a GenerationRequest (what the engine
// runs) and ResponseOptions (how the answer is shaped).
//
// Fields, as OpenAI's API with llama-server's extensions:
//   prompt (completions: a string, an array of token ids, or a one-element
//   array of either) | messages (chat), max_tokens, max_completion_tokens,
//   n_predict, stop (string or up to 4 strings), temperature [0, 2],
//   top_p (0, 1], top_k (-1 or 0: off), min_p [0, 1], seed (-1: random),
//   presence_penalty / frequency_penalty [-2, 2], repeat_penalty (> 0),
//   repeat_last_n, logprobs (completions: 0..5; chat: boolean, with
//   top_logprobs 0..20), stream, stream_options.include_usage, n (choices:
//   1 up to the server's slots, as llama-server; /completion: 1),
//   cache_prompt, return_progress (streams only), ignore_eos (as llama-server: a -inf logit_bias on every
//   end-of-generation token; not under a grammar, which ends the answer
//   where it is complete), chat_template_kwargs (chat), model and user
//   (accepted, not used), grammar / json_schema / response_format
//   (structured output: see structured_output.h). Other fields are ignored; a known field with the
//   wrong type or out of range is a 400 naming it (see request_fields.h).
//   A prompt that does not fit the context is a 400 with code
//   "context_length_exceeded".
//
// Prompts are tokenized as llama-server does: a string prompt with
// add_special and parse_special; a chat with the model's template (see
// chat_prompt.h); token ids as given, each checked against the vocabulary.
//
// Every failure is a RequestError; nothing else escapes (cohort::Error from
// the tokenizer or template becomes a RequestError too).
// Thread safety: pure functions of their arguments.
#pragma once

#include <string>
#include <string_view>

#include "engine/grammar.h"
#include "engine/sampler.h"
#include "server/generation.h"
#include "server/reasoning.h"
#include "server/request_error.h"
#include "server/request_fields.h"
#include "tokenizer/tokenizer.h"

namespace cohort::server {

enum class Endpoint { completions, chat };

struct ResponseOptions {
  Endpoint endpoint = Endpoint::completions;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  int n_choices = 1;           // n: choices, each its own request (choice_request)
  bool logprobs = false;       // report log-probabilities (top-n: GenerationRequest::n_logprobs)
  bool return_tokens = false;  // native /completion: "tokens" carries the generated ids
  bool post_sampling_probs = false;          // native: probabilities ("prob", "top_probs"), not logprobs
  std::vector<std::string> response_fields;  // native: only these fields ("a/b": nested) in the answer
  bool verbose = false;  // "verbose": a whole answer carries llama-server's "__verbose" object
  ReasoningFormat reasoning = ReasoningFormat::none;  // chat: "reasoning_format", else the server's
  bool thinking_open = false;                         // chat: the prompt opens a think block
};

struct ParsedRequest {
  GenerationRequest generation;
  ResponseOptions response;
};

// What parsing needs from the served model and the server's settings.
struct PromptContext {
  const tokenizer::Tokenizer* tokenizer = nullptr;  // REQUIRES: non-null
  std::string chat_template;        // tokenizer.chat_template; "" falls back to ChatML
  int n_ctx = 0;                    // a prompt needs fewer tokens than this
  engine::SamplingParams defaults;  // for the sampling fields a request leaves out
  // Compiles a request's grammar or JSON schema; null: structured output is refused.
  const engine::GrammarCompiler* grammars = nullptr;
  int default_max_tokens = -1;      // when no max_tokens field is given (-n)
  int max_choices = 1;              // the most choices (n) of a request: the server's slots
  // Template variables every chat prompt gets unless the request's
  // chat_template_kwargs set them (--reasoning off: enable_thinking false).
  Json template_defaults = Json::object();
  // --verbose: answers carry llama-server's "__verbose" object unless the
  // request's "verbose" field is false (as llama-server's -v).
  bool verbose = false;
  // --reasoning-format: how chat answers give a leading think block.
  ReasoningFormat reasoning_format = ReasoningFormat::deepseek;
};

// The template variables of a chat prompt: `defaults`, then the request's
// chat_template_kwargs (`kwargs`, may be null) over them.
Json template_variables(const Json& defaults, const Json* kwargs);

inline constexpr int kMaxStopStrings = 4;         // as OpenAI
inline constexpr size_t kMaxStopBytes = 512;      // per stop string
inline constexpr int kMaxCompletionLogprobs = 5;  // as OpenAI's legacy completions
inline constexpr int kMaxTopLogprobs = 20;        // as OpenAI's chat completions
inline constexpr size_t kMaxJsonNesting = 64;     // arrays/objects inside each other
// Values in one body: a parsed value takes 16 to ~100 bytes however short its
// text ("{}," is 3), so this bounds the tree at ~25 MB whatever the body.
// A request uses far fewer (a prompt of token ids: one per token).
inline constexpr size_t kMaxJsonValues = size_t{1} << 18;
// At most kLargeTrees trees of more than kLargeTreeValues values exist at
// once (the others wait): with kMaxJsonValues, ~50 MB in all. Smaller trees
// take ~1 MB at most.
inline constexpr size_t kLargeTreeValues = size_t{1} << 14;
inline constexpr int kLargeTrees = 2;

// A request body parsed as a JSON object: RequestError 400 if it is not
// valid JSON, not an object, nested deeper than kMaxJsonNesting or holding
// more than kMaxJsonValues values (both counted before any value is built).
// A body of a large tree waits for a turn and holds it while the tree
// lives; the memory it freed is then given back to the system.
class ParsedBody {
 public:
  explicit ParsedBody(std::string_view body);
  ParsedBody(const ParsedBody&) = delete;
  ParsedBody& operator=(const ParsedBody&) = delete;

  const Json& json() const { return json_; }

 private:
  class Turn {
   public:
    explicit Turn(bool large);
    ~Turn();
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    bool large_;
  };

  Turn turn_;  // declared first: taken before the tree is built, given back after it is freed
  Json json_;
};

ParsedRequest parse_completion_request(std::string_view body, const PromptContext& ctx);
ParsedRequest parse_chat_request(std::string_view body, const PromptContext& ctx);
// llama-server's native POST /completion: the fields the OpenAI routes share,
// and `prompt` a string, token ids, a mix of strings and ids (one prompt),
// or {"prompt_string": text} (llama-server's multimodal form; media in
// "multimodal_data" are refused); `n_probs` 0..kMaxTopLogprobs (> 0: the chosen token and its top
// n_probs alternatives); `return_tokens`; `post_sampling_probs`;
// `response_fields` (an array of field paths).
// An array holding no number is a list of prompts (at most
// kMaxNativePrompts; not with stream): one request each, in order.
std::vector<ParsedRequest> parse_native_completion_request(std::string_view body, const PromptContext& ctx);
inline constexpr int kMaxNativePrompts = 64;

// The request of choice `index` of a response of several: `request` with
// the seed plus `index` (as llama-server's child tasks; modulo 2^32 - 1, so
// that it never becomes the random seed), or a random seed of its own
// when the seed is random.
GenerationRequest choice_request(const GenerationRequest& request, int index);

// Token ids from a JSON array (`field` names it in errors), each checked to
// be inside the vocabulary of `n_vocab` tokens.
std::vector<int32_t> read_token_ids(const Json& array, const std::string& field, int32_t n_vocab);

}  // namespace cohort::server
