// llama.cpp's built-in chat templates by name (--chat-template llama3), as
// Jinja sources that render what its C++ copies write
// (llama_chat_apply_template), so that a llama-server command line that
// names one gets the same prompt here. Only the common ones are here:
// chatml, llama3, command-r, phi3, phi4, falcon3, zephyr, deepseek3.
// ref: llama.cpp src/llama-chat.cpp.
//
// llama-server takes a name only under --no-jinja (with --jinja, "llama3"
// would be a template that prints "llama3"); a name is a name here with
// either.
// Thread safety: pure functions over constant tables.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cohort::chat {

// The Jinja source of the built-in template `name`, or nullopt.
std::optional<std::string> named_template(std::string_view name);

// The names, comma-separated, for messages and help.
std::string named_template_list();

}  // namespace cohort::chat
