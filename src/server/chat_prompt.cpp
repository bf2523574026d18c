#include "server/chat_prompt.h"

#include <array>
#include <chrono>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "chat/chat_template.h"
#include "common/error.h"
#include "server/token_text.h"

namespace cohort::server {
namespace {

constexpr std::array<std::string_view, 5> kRoles = {"system", "developer", "user", "assistant", "tool"};

std::string check_role(const Json& message, const std::string& at) {
  const auto it = message.find("role");
  if (it == message.end()) reject_field(at + ".role", "is required");
  if (!it->is_string()) reject_field(at + ".role", fmt::format("must be a string, got {}", json_type_name(*it)));
  const std::string role = it->get<std::string>();
  for (std::string_view r : kRoles) {
    if (role == r) return role == "developer" ? "system" : role;
  }
  reject_field(at + ".role", fmt::format("'{}' is not one of system, developer, user, assistant, tool",
                                         role.substr(0, 64)));
}

// Text parts joined with "\n".
std::string join_parts(const Json& parts, const std::string& at) {
  std::string text;
  for (size_t j = 0; j < parts.size(); ++j) {
    const Json& part = parts[j];
    const std::string here = fmt::format("{}[{}]", at, j);
    if (!part.is_object()) reject_field(here, fmt::format("must be an object, got {}", json_type_name(part)));
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string()) reject_field(here + ".type", "must be a string");
    if (*type != "text") {
      reject_field(here + ".type", fmt::format("'{}' is not supported; only \"text\" parts are",
                                               type->get<std::string>().substr(0, 64)));
    }
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string()) reject_field(here + ".text", "must be a string");
    if (j > 0) text += "\n";
    text += t->get<std::string>();
  }
  return text;
}

Json normalize_content(const Json& message, const std::string& role, const std::string& at) {
  const auto it = message.find("content");
  const bool has_tool_calls = message.contains("tool_calls") && !message["tool_calls"].is_null();
  if (it == message.end() || it->is_null()) {
    if (role == "assistant" && has_tool_calls) return nullptr;
    reject_field(at + ".content", "is required");
  }
  if (it->is_string()) return *it;
  if (it->is_array()) return join_parts(*it, at + ".content");
  reject_field(at + ".content",
               fmt::format("must be a string or an array of text parts, got {}", json_type_name(*it)));
}

void warn_once(const std::string& message) {
  static std::once_flag once;
  std::call_once(once, [&] { fmt::print(stderr, "warning: chat template: {}\n", message); });
}

// `kwargs` with today's date variables where it has none of its own.
Json with_today(const Json& kwargs) {
  Json vars = kwargs.is_object() ? kwargs : Json::object();
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm day{};
  localtime_r(&now, &day);
  const Json dates = date_variables(day);
  for (const char* key : {"date_string", "datetime"}) {
    if (!vars.contains(key)) vars[key] = dates[key];
  }
  return vars;
}

}  // namespace

Json date_variables(const std::tm& day) {
  auto format = [&day](const char* pattern) {
    char text[64];
    const size_t n = std::strftime(text, sizeof text, pattern, &day);
    return std::string(text, n);
  };
  return {{"date_string", format("%d %b %Y")}, {"datetime", format("%b %d %Y")}};
}

Json normalize_messages(const Json& messages) {
  if (!messages.is_array()) {
    reject_field("messages", fmt::format("must be an array, got {}", json_type_name(messages)));
  }
  if (messages.empty()) reject_field("messages", "must not be empty");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string at = fmt::format("messages[{}]", i);
    const Json& m = messages[i];
    if (!m.is_object()) reject_field(at, fmt::format("must be an object, got {}", json_type_name(m)));
    const std::string role = check_role(m, at);
    Json n = m;
    n["role"] = role;
    n["content"] = normalize_content(m, role, at);
    out.push_back(std::move(n));
  }
  return out;
}

ChatEnding read_chat_ending(const Json& body, Json& normalized) {
  ChatEnding ending;
  ending.add_generation_prompt = read_bool(body, "add_generation_prompt").value_or(true);
  bool continuing = read_bool(body, "continue_final_message").value_or(false);
  const size_t n = normalized.size();
  auto role = [&](size_t i) { return normalized[i]["role"].get<std::string>(); };
  if (!body.contains("continue_final_message") && n > 0 && role(n - 1) == "assistant") {
    if (n >= 2 && role(n - 2) == "assistant") {
      reject_field("messages", "Cannot have 2 or more assistant messages at the end of the list.");
    }
    continuing = true;
    ending.add_generation_prompt = false;
  }
  if (!continuing) return ending;
  if (ending.add_generation_prompt) {
    reject_field("continue_final_message", "Cannot set both add_generation_prompt and continue_final_message to true.");
  }
  const Json& last = body["messages"][n - 1];
  if (last.contains("tool_calls") && !last["tool_calls"].is_null()) {
    reject_field("continue_final_message", "Cannot continue an assistant message that contains tool calls.");
  }
  const Json& content = last["content"];
  std::string text;
  if (content.is_string()) {
    text = content.get<std::string>();
  } else if (content.is_array()) {
    for (const Json& part : content) text += (text.empty() ? "" : "\n\n") + part["text"].get<std::string>();
  }
  ending.continued = std::move(text);
  normalized.erase(n - 1);
  return ending;
}

std::string render_chat_prompt(const Json& normalized, const std::string& chat_template,
                               const tokenizer::Tokenizer& tokenizer, const Json& kwargs, const ChatEnding& ending) {
  const std::string bos = token_text(tokenizer, tokenizer.bos());
  const std::string eos = token_text(tokenizer, tokenizer.eos());
  const bool generation_prompt = ending.add_generation_prompt || ending.continued.has_value();
  std::string text;
  try {
    text = chat::render_chat(chat_template, normalized, generation_prompt, bos, eos, warn_once, with_today(kwargs));
  } catch (const Error& e) {
    throw RequestError(400, fmt::format("the chat template refused the messages: {}", e.what()),
                       "messages");
  }
  if (ending.continued) text += *ending.continued;
  if (tokenizer.vocab().add_bos() && !bos.empty() && text.starts_with(bos)) text.erase(0, bos.size());
  if (tokenizer.vocab().add_eos() && !eos.empty() && text.ends_with(eos)) {
    text.erase(text.size() - eos.size());
  }
  return text;
}

std::vector<int32_t> chat_prompt_tokens(const Json& normalized, const std::string& chat_template,
                                        const tokenizer::Tokenizer& tokenizer, const Json& kwargs,
                                        const ChatEnding& ending) {
  const std::string text = render_chat_prompt(normalized, chat_template, tokenizer, kwargs, ending);
  try {
    return tokenizer.encode(text, true, true);
  } catch (const Error& e) {
    throw RequestError(400, fmt::format("cannot tokenize the prompt: {}", e.what()), "messages");
  }
}

}  // namespace cohort::server
