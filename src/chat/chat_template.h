// Chat templates: the Jinja programs that GGUF models carry in
// `tokenizer.chat_template` to turn OpenAI-style messages into a prompt.
//
// ChatTemplate renders them as transformers' apply_chat_template does
// (jinja2 ImmutableSandboxedEnvironment, trim_blocks=True,
// lstrip_blocks=True, loop controls, raise_exception, strftime_now, and
// tojson as json.dumps with ensure_ascii=False), byte for byte for the
// subset of Jinja that real chat templates use. See parser.h for the
// supported syntax and filters.h for filters and tests.
//
// A template is untrusted input: parsing and rendering are bounded in
// nesting, loop iterations, work and output size (RenderLimits), and every
// failure is a ChatTemplateError (a cohort::Error) naming line and column.
//
// Thread safety: a parsed ChatTemplate is immutable; render() may be called
// from several threads at once.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/eval_context.h"
#include "chat/template_error.h"

namespace cohort::chat {

struct Node;

class ChatTemplate {
 public:
  // Throws ChatTemplateError (Syntax, Unsupported or Limit).
  static ChatTemplate parse(std::string_view source);

  // Renders with the variables `messages`, `add_generation_prompt` and every
  // key of `extra` (an object, or null for none): bos_token, eos_token, tools,
  // enable_thinking, date_string...
  // Throws ChatTemplateError; kind Raised when the template called
  // raise_exception(), with the template's message.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra = {}) const;
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra, const RenderLimits& limits) const;

 private:
  struct Tree;
  explicit ChatTemplate(std::shared_ptr<const Tree> tree) : tree_(std::move(tree)) {}
  std::shared_ptr<const Tree> tree_;
};

// Largest template source accepted.
inline constexpr size_t kMaxTemplateBytes = size_t{4} << 20;

// The ChatML prompt: <|im_start|>role\ncontent<|im_end|>\n per message, then
// <|im_start|>assistant\n if add_generation_prompt. Content that is not a
// string is flattened: text parts of a list joined, null empty, else JSON.
std::string render_chatml(const nlohmann::ordered_json& messages, bool add_generation_prompt);

using WarnFn = std::function<void(const std::string&)>;

// What a server does with a model's template: renders `template_source`
// with bos_token/eos_token (and `extra`), or falls back to ChatML, calling
// `warn` once with the reason, when the source is empty or uses syntax this
// engine does not support. Errors that depend on the conversation
// (raise_exception, runtime errors, limits while rendering) are thrown.
std::string render_chat(std::string_view template_source, const nlohmann::ordered_json& messages,
                        bool add_generation_prompt, const std::string& bos_token, const std::string& eos_token,
                        const WarnFn& warn, const nlohmann::ordered_json& extra = {});

}  // namespace cohort::chat
