#include "chat/named_templates.h"

#include <array>
#include <utility>

namespace cohort::chat {
namespace {

// Each renders messages as llama-chat.cpp's branch of the same name; "trim"
// where it trims the content.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTemplates = {{
    {"chatml",
     "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
    {"llama3",
     "{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] | trim"
     " + '<|eot_id|>' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"},
    {"command-r",
     "{% set tokens = {'system': '<|SYSTEM_TOKEN|>', 'user': '<|USER_TOKEN|>', 'assistant': '<|CHATBOT_TOKEN|>'} %}"
     "{% for m in messages %}{% if m['role'] in tokens %}{{ '<|START_OF_TURN_TOKEN|>' + tokens[m['role']]"
     " + m['content'] | trim + '<|END_OF_TURN_TOKEN|>' }}{% endif %}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}"},
    {"phi3",
     "{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '<|end|>\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"phi4",
     "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '<|im_sep|>' + m['content'] + '<|im_end|>' }}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}"},
    {"falcon3",
     "{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"zephyr",
     "{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '<|endoftext|>\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"deepseek3",
     "{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] + '\\n\\n' }}"
     "{% elif m['role'] == 'user' %}{{ '<｜User｜>' + m['content'] }}"
     "{% elif m['role'] == 'assistant' %}{{ '<｜Assistant｜>' + m['content']"
     " + '<｜end▁of▁sentence｜>' }}{% endif %}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<｜Assistant｜>' }}{% endif %}"},
}};

}  // namespace

std::optional<std::string> named_template(std::string_view name) {
  for (const auto& [n, source] : kTemplates) {
    if (n == name) return std::string(source);
  }
  return std::nullopt;
}

std::string named_template_list() {
  std::string out;
  for (const auto& [n, source] : kTemplates) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace cohort::chat
