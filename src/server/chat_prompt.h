// OpenAI chat messages -> the prompt tokens a model expects.
//
// Messages are checked (role system | developer | user | assistant | tool;
// content a string, null for an assistant message with tool_calls, or an
// array of {"type": "text", "text": ...} parts), then normalised for the
// chat template: text parts joined with "\n" into one string (what
// llama-server does for templates that take plain content), "developer"
// renamed "system"; other keys (name, tool_calls, tool_call_id) are kept.
//
// Rendering follows llama-server: the template gets bos_token/eos_token;
// a rendered prompt that starts with the BOS text loses it when the
// vocabulary adds BOS itself (and one ending in the EOS text loses that when
// it adds EOS), then the text is tokenized with add_special and
// parse_special, so a template's BOS appears exactly once.
// ref: llama.cpp common/chat.cpp (apply(): "To avoid double BOS / EOS tokens").
//
// Every prompt gets llama-server's date variables, `date_string` ("05 Dec
// 2026", what Llama 3.x templates read) and `datetime` ("Dec 05 2026",
// firefunction), of the local date at rendering, unless `kwargs` sets them.
// ref: llama.cpp common/chat.cpp (common_chat_extra_context).
//
// Errors are RequestError 400 naming the message field ("messages[2].role"),
// or naming "messages" when the template itself refuses the conversation.
// Thread safety: pure functions (the fallback warning is printed once).
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "server/request_fields.h"
#include "tokenizer/tokenizer.h"

namespace cohort::server {

// The checked and normalised copy of `messages` (the request's field).
Json normalize_messages(const Json& messages);

// How the prompt ends, from the request fields add_generation_prompt
// (default true) and continue_final_message (a boolean), as llama-server
// reads them: a conversation that ends with an assistant message continues
// it (its text is a prefill the model carries on from) unless
// continue_final_message is given; continuing with add_generation_prompt
// true, two assistant messages at the end, or continuing one that holds
// tool_calls is a 400.
// ref: llama.cpp tools/server/server-common.cpp (oaicompat_chat_params_parse).
struct ChatEnding {
  bool add_generation_prompt = true;
  // Continuing: the final message's text (text parts joined with "\n\n", as
  // llama-server), appended after the others are rendered with the
  // generation prompt.
  std::optional<std::string> continued;
};

// Reads the ending from `body`; when it continues, the final message leaves
// `normalized` (the normalize_messages of body's "messages").
ChatEnding read_chat_ending(const Json& body, Json& normalized);

// {"date_string": "%d %b %Y", "datetime": "%b %d %Y"} of the date `day`.
Json date_variables(const std::tm& day);

// The rendered prompt text (before tokenizing), with the BOS/EOS text
// handling above. `kwargs`: the template variables (an object) or null;
// today's date_variables are added where it lacks them.
std::string render_chat_prompt(const Json& normalized, const std::string& chat_template,
                               const tokenizer::Tokenizer& tokenizer, const Json& kwargs,
                               const ChatEnding& ending = {});

// render_chat_prompt, tokenized.
std::vector<int32_t> chat_prompt_tokens(const Json& normalized, const std::string& chat_template,
                                        const tokenizer::Tokenizer& tokenizer, const Json& kwargs,
                                        const ChatEnding& ending = {});

}  // namespace cohort::server
