// llama.cpp's built-in templates by name render what its C++ copies write.
#include "chat/named_templates.h"

#include <gtest/gtest.h>

#include "chat/chat_template.h"

namespace cohort::chat {
namespace named_templates_test {

const nlohmann::ordered_json kChat = nlohmann::ordered_json::parse(
    R"([{"role": "system", "content": "You are a test."}, {"role": "user", "content": "Hi there "},
        {"role": "assistant", "content": " Hello"}, {"role": "user", "content": "Bye"}])");

std::string render_named(std::string_view name, bool add_generation_prompt = true) {
  const std::optional<std::string> source = named_template(name);
  if (!source) return "(no template named " + std::string(name) + ")";
  return ChatTemplate::parse(*source).render(kChat, add_generation_prompt);
}

// The expected texts are llama_chat_apply_template's for the same messages.
TEST(NamedTemplates, RenderAsLlamaCppsBuiltInCopies) {
  EXPECT_EQ(render_named("command-r"),
            "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a test.<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi there<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Bye<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
  EXPECT_EQ(render_named("llama3"),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are a test.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_named("chatml", false),
            "<|im_start|>system\nYou are a test.<|im_end|>\n<|im_start|>user\nHi there <|im_end|>\n"
            "<|im_start|>assistant\n Hello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n");
  EXPECT_EQ(render_named("phi3"),
            "<|system|>\nYou are a test.<|end|>\n<|user|>\nHi there <|end|>\n<|assistant|>\n Hello<|end|>\n"
            "<|user|>\nBye<|end|>\n<|assistant|>\n");
  EXPECT_EQ(render_named("deepseek3"),
            "You are a test.\n\n<｜User｜>Hi there <｜Assistant｜> Hello<｜end▁of▁sentence｜><｜User｜>Bye<｜Assistant｜>");
}

TEST(NamedTemplates, EveryListedNameParsesAndUnknownNamesAreNone) {
  const std::string list = named_template_list();
  size_t begin = 0;
  for (;;) {
    const size_t end = list.find(", ", begin);
    const std::string name = list.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    EXPECT_FALSE(render_named(name).empty()) << name;
    if (end == std::string::npos) break;
    begin = end + 2;
  }
  EXPECT_NE(list.find("llama3"), std::string::npos);
  EXPECT_FALSE(named_template("llama-3"));
  EXPECT_FALSE(named_template(""));
}

}  // namespace named_templates_test
}  // namespace cohort::chat
