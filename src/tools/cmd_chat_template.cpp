// `cohort chat-template`: renders a chat template for a conversation.
//
//   cohort chat-template (-m FILE | --template FILE) --messages FILE.json
//                        [--add-generation-prompt] [--bos S] [--eos S] [--strict]
//
// The template comes from --template, else from the model's
// tokenizer.chat_template; bos/eos strings from --bos/--eos, else from the
// model's vocabulary. FILE.json ("-": stdin) holds either the messages array
// or an object {"messages": [...], ...} whose other keys (tools,
// enable_thinking, date_string, even bos_token...) are template variables too. The prompt is
// printed exactly, with no newline added. Like a server, a missing or
// unsupported template falls back to ChatML with a warning on stderr;
// --strict makes that an error instead.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "common/error.h"
#include "common/text_file.h"
#include "gguf/gguf_file.h"
#include "tools/commands.h"

namespace cohort::tools {
namespace {

std::string read_text(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  return read_text_file(path);
}

// The text of token `key` (an id in the metadata), or "" when absent.
std::string special_token(const gguf::Metadata& md, const char* key) {
  const std::optional<int64_t> id = md.get_int(key);
  const gguf::Array* tokens = md.get_array("tokenizer.ggml.tokens");
  if (!id || !tokens || *id < 0 || static_cast<size_t>(*id) >= tokens->items.size()) return "";
  const std::string* s = tokens->items[static_cast<size_t>(*id)].as_string();
  return s ? *s : "";
}

struct Options {
  std::string model;
  std::string template_file;
  std::string messages_file;
  std::string bos;
  std::string eos;
  bool add_generation_prompt = false;
  bool strict = false;
};

void run(const Options& opt, const CLI::App& cmd) {
  std::string source;
  std::string bos;
  std::string eos;
  bool have_template = false;
  if (!opt.model.empty()) {
    const gguf::GgufFile file = gguf::GgufFile::open(opt.model);
    const gguf::Metadata& md = file.metadata();
    if (auto t = md.get_string("tokenizer.chat_template")) {
      source = *t;
      have_template = true;
    }
    bos = special_token(md, "tokenizer.ggml.bos_token_id");
    eos = special_token(md, "tokenizer.ggml.eos_token_id");
  }
  if (!opt.template_file.empty()) {
    source = read_text(opt.template_file);
    have_template = true;
  }
  if (cmd.count("--bos") > 0) bos = opt.bos;
  if (cmd.count("--eos") > 0) eos = opt.eos;

  nlohmann::ordered_json input;
  try {
    input = nlohmann::ordered_json::parse(read_text(opt.messages_file));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", opt.messages_file, e.what());
  }
  nlohmann::ordered_json messages = input;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (input.is_object()) {
    if (!input.contains("messages")) fail("{}: an object must have a \"messages\" key", opt.messages_file);
    messages = input["messages"];
    for (const auto& [k, v] : input.items()) {
      if (k != "messages" && k != "add_generation_prompt") extra[k] = v;
    }
  } else if (!input.is_array()) {
    fail("{}: expected a messages array or an object with \"messages\"", opt.messages_file);
  }

  std::string prompt;
  if (opt.strict) {
    if (!have_template) fail("the model has no chat template");
    if (!extra.contains("bos_token")) extra["bos_token"] = bos;
    if (!extra.contains("eos_token")) extra["eos_token"] = eos;
    prompt = chat::ChatTemplate::parse(source).render(messages, opt.add_generation_prompt, extra);
  } else {
    auto warn = [](const std::string& msg) { fmt::print(stderr, "warning: {}\n", msg); };
    prompt = chat::render_chat(source, messages, opt.add_generation_prompt, bos, eos, warn, extra);
  }
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void register_chat_template(CLI::App& app) {
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("chat-template", "render a chat template for a conversation");
  cmd->add_option("-m,--model", opt->model, "GGUF file (template and bos/eos tokens)");
  cmd->add_option("--template", opt->template_file, "template file (instead of the model's)");
  cmd->add_option("--messages", opt->messages_file, "JSON messages array or {\"messages\": [...], ...}; - for stdin")
      ->required();
  cmd->add_flag("--add-generation-prompt", opt->add_generation_prompt, "end with the assistant turn's header");
  cmd->add_option("--bos", opt->bos, "bos_token text");
  cmd->add_option("--eos", opt->eos, "eos_token text");
  cmd->add_flag("--strict", opt->strict, "fail instead of falling back to ChatML");
  cmd->callback([opt, cmd] {
    if (opt->model.empty() && opt->template_file.empty()) fail("chat-template needs -m MODEL or --template FILE");
    run(*opt, *cmd);
  });
}

}  // namespace cohort::tools
