#include "chat/chat_template.h"

#include <optional>

#include <fmt/format.h>

#include "chat/evaluator.h"
#include "chat/parser.h"

namespace cohort::chat {

struct ChatTemplate::Tree {
  Body body;
};

ChatTemplate ChatTemplate::parse(std::string_view source) {
  if (source.size() > kMaxTemplateBytes) {
    throw ChatTemplateError(ErrorKind::Limit, fmt::format("chat template of {} bytes exceeds the limit of {} bytes",
                                                          source.size(), kMaxTemplateBytes));
  }
  auto tree = std::make_shared<Tree>();
  tree->body = parse_template(source);
  return ChatTemplate(std::move(tree));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra) const {
  return render(messages, add_generation_prompt, extra, RenderLimits{});
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra, const RenderLimits& limits) const {
  DictData context;
  if (!extra.is_null()) {
    if (!extra.is_object()) throw ChatTemplateError(ErrorKind::Runtime, "chat template context must be a JSON object");
    for (const auto& [k, v] : extra.items()) context.set(Value::string(k), from_json(v));
  }
  context.set(Value::string("messages"), from_json(messages));
  context.set(Value::string("add_generation_prompt"), Value::boolean(add_generation_prompt));
  Evaluator evaluator(limits);
  return evaluator.render(tree_->body, context);
}

namespace {

std::string flatten_content(const nlohmann::ordered_json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  if (content.is_array()) {
    std::string out;
    for (const auto& part : content) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
    }
    return out;
  }
  return content.dump();
}

}  // namespace

std::string render_chatml(const nlohmann::ordered_json& messages, bool add_generation_prompt) {
  std::string out;
  if (messages.is_array()) {
    for (const auto& m : messages) {
      if (!m.is_object()) continue;
      const std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "user";
      out += "<|im_start|>" + role + "\n" + flatten_content(m.contains("content") ? m["content"] : nullptr) +
             "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_chat(std::string_view template_source, const nlohmann::ordered_json& messages,
                        bool add_generation_prompt, const std::string& bos_token, const std::string& eos_token,
                        const WarnFn& warn, const nlohmann::ordered_json& extra) {
  auto fallback = [&](const std::string& reason) {
    if (warn) warn(reason + "; using the ChatML prompt format");
    return render_chatml(messages, add_generation_prompt);
  };
  if (template_source.empty()) return fallback("the model has no chat template");
  std::optional<ChatTemplate> tmpl;
  try {
    tmpl = ChatTemplate::parse(template_source);
  } catch (const ChatTemplateError& e) {
    return fallback(e.what());
  }
  nlohmann::ordered_json context = extra.is_object() ? extra : nlohmann::ordered_json::object();
  if (!context.contains("bos_token")) context["bos_token"] = bos_token;
  if (!context.contains("eos_token")) context["eos_token"] = eos_token;
  try {
    return tmpl->render(messages, add_generation_prompt, context);
  } catch (const ChatTemplateError& e) {
    if (e.kind() == ErrorKind::Unsupported || e.kind() == ErrorKind::Syntax) return fallback(e.what());
    throw;
  }
}

}  // namespace cohort::chat
