// Request parsing: every field reaches the GenerationRequest, and every bad
// request is refused with a 4xx naming the field at fault.
#include "server/openai_request.h"

#include <limits>
#include <random>
#include <utility>

#include <gtest/gtest.h>

#include "server/bad_requests_testing.h"
#include "server/chat_prompt.h"
#include "server/server_testing.h"

namespace cohort::server {
namespace openai_request_test {

class OpenAIRequest : public ::testing::Test {
 protected:
  OpenAIRequest() : tok_(testing::test_tokenizer()) {
    ctx_.tokenizer = &tok_;
    ctx_.n_ctx = 64;
  }
  // The one request of a native /completion body of one prompt.
  ParsedRequest native(const std::string& body) const {
    std::vector<ParsedRequest> all = parse_native_completion_request(body, ctx_);
    EXPECT_EQ(all.size(), 1u) << body;
    return all.front();
  }
  ParsedRequest parse(Endpoint e, const std::string& body) const {
    return e == Endpoint::chat ? parse_chat_request(body, ctx_) : parse_completion_request(body, ctx_);
  }
  tokenizer::Tokenizer tok_;
  PromptContext ctx_;
};

TEST_F(OpenAIRequest, EveryBadRequestIsRefusedNamingItsField) {
  const std::vector<testing::BadRequest> table = testing::bad_requests();
  ASSERT_GE(table.size(), 50u);
  for (const testing::BadRequest& bad : table) {
    SCOPED_TRACE(bad.body.substr(0, 200));
    try {
      parse(bad.endpoint, bad.body);
      ADD_FAILURE() << "accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status, bad.status);
      EXPECT_EQ(e.param, bad.param) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.param), std::string::npos) << e.what();
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
}

TEST_F(OpenAIRequest, ContextOverflowHasOpenAIsCode) {
  try {
    parse(Endpoint::completions, "{\"prompt\": \"" + std::string(64, 'x') + "\"}");
    FAIL() << "accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code, "context_length_exceeded");
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos);
  }
  EXPECT_NO_THROW(parse(Endpoint::completions, "{\"prompt\": \"" + std::string(63, 'x') + "\"}"));
}

TEST_F(OpenAIRequest, CompletionFieldsReachTheGenerationRequest) {
  const ParsedRequest p = parse(Endpoint::completions, R"({
      "prompt": "ab", "max_tokens": 7, "stop": ["x", "yz"], "temperature": 0.5, "top_p": 0.9,
      "top_k": 3, "min_p": 0.2, "seed": 42, "presence_penalty": 1.5, "frequency_penalty": -1,
      "repeat_penalty": 1.1, "repeat_last_n": 16, "logprobs": 2, "stream": true,
      "stream_options": {"include_usage": true}, "cache_prompt": false, "ignore_eos": true,
      "model": "anything", "user": "u", "n": 1, "unknown_field": {"ignored": [1, 2]}})");
  const GenerationRequest& g = p.generation;
  EXPECT_EQ(g.prompt, (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ(g.max_tokens, 7);
  EXPECT_EQ(g.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_FLOAT_EQ(g.sampling.temp, 0.5f);
  EXPECT_FLOAT_EQ(g.sampling.top_p, 0.9f);
  EXPECT_EQ(g.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(g.sampling.min_p, 0.2f);
  EXPECT_EQ(g.sampling.seed, 42u);
  EXPECT_FLOAT_EQ(g.sampling.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(g.sampling.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(g.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(g.sampling.repeat_last_n, 16);
  EXPECT_EQ(g.n_logprobs, 2);
  EXPECT_FALSE(g.cache_prompt);
  EXPECT_TRUE(g.ignore_eos);
  EXPECT_TRUE(p.response.stream);
  EXPECT_TRUE(p.response.include_usage);
  EXPECT_TRUE(p.response.logprobs);
  EXPECT_EQ(p.response.endpoint, Endpoint::completions);
}

TEST_F(OpenAIRequest, IgnoreEosBansEveryEndOfGenerationTokenAfterTheRequestsBiases) {
  const auto& eog = tok_.vocab().eog_ids();
  ASSERT_TRUE(eog.count(testing::kImEnd));
  const std::vector<engine::TokenBias> banned =
      parse(Endpoint::completions, R"({"prompt": "hi", "ignore_eos": true, "logit_bias": {"97": 1}})")
          .generation.sampling.logit_bias;
  ASSERT_EQ(banned.size(), 1 + eog.size());
  EXPECT_EQ(banned[0].token, 97);
  for (size_t i = 1; i < banned.size(); ++i) {
    EXPECT_TRUE(eog.count(banned[i].token)) << banned[i].token;
    EXPECT_EQ(banned[i].bias, -std::numeric_limits<float>::infinity());
  }
  EXPECT_TRUE(parse(Endpoint::chat, R"({"messages": [{"role": "user", "content": "hi"}], "ignore_eos": false})")
                  .generation.sampling.logit_bias.empty());
}

TEST_F(OpenAIRequest, VerboseIsTheServersDefaultUnlessTheRequestSays) {
  const std::string chat = R"({"messages": [{"role": "user", "content": "hi"}])";
  EXPECT_FALSE(parse(Endpoint::chat, chat + "}").response.verbose);
  EXPECT_TRUE(parse(Endpoint::chat, chat + R"(, "verbose": true})").response.verbose);
  ctx_.verbose = true;  // --verbose
  EXPECT_TRUE(parse(Endpoint::chat, chat + "}").response.verbose);
  EXPECT_TRUE(parse(Endpoint::completions, R"({"prompt": "hi"})").response.verbose);
  EXPECT_FALSE(parse(Endpoint::chat, chat + R"(, "verbose": false})").response.verbose);
}

TEST_F(OpenAIRequest, LogitBiasInTheFormsOfOpenAIAndLlamaServer) {
  const float ban = -std::numeric_limits<float>::infinity();
  auto biases = [&](const std::string& field) {
    std::vector<std::pair<int32_t, float>> out;
    for (const engine::TokenBias& b : parse(Endpoint::completions, R"({"prompt": "hi", "logit_bias": )" + field + "}")
                                          .generation.sampling.logit_bias) {
      out.emplace_back(b.token, b.bias);
    }
    return out;
  };
  using Pairs = std::vector<std::pair<int32_t, float>>;
  EXPECT_EQ(biases(R"({"97": -100, "98": false, "99": 2.5})"), (Pairs{{97, -100.0f}, {98, ban}, {99, 2.5f}}));
  // llama-server's pairs; a token given as text biases each of its tokens
  EXPECT_EQ(biases(R"([[97, 1], ["bc", -2], [100, false]])"), (Pairs{{97, 1.0f}, {98, -2.0f}, {99, -2.0f}, {100, ban}}));
  EXPECT_EQ(biases("null"), Pairs{});
  EXPECT_EQ(biases("{}"), Pairs{});
}

TEST_F(OpenAIRequest, DefaultsComeFromTheServer) {
  ctx_.defaults.temp = 0.3f;
  ctx_.default_max_tokens = 11;
  const ParsedRequest p = parse(Endpoint::completions, R"({"prompt": "a", "stop": null, "seed": null})");
  EXPECT_FLOAT_EQ(p.generation.sampling.temp, 0.3f);
  EXPECT_EQ(p.generation.max_tokens, 11);
  EXPECT_EQ(p.generation.n_logprobs, -1);
  EXPECT_TRUE(p.generation.cache_prompt);
  EXPECT_FALSE(p.response.stream);
  EXPECT_FALSE(p.response.logprobs);
}

TEST_F(OpenAIRequest, MaxTokenFieldsTakeOpenAIsPrecedence) {
  const auto max_tokens = [&](const std::string& fields) {
    return parse(Endpoint::completions, R"({"prompt": "a", )" + fields + "}").generation.max_tokens;
  };
  EXPECT_EQ(max_tokens(R"("max_tokens": 5, "max_completion_tokens": 9, "n_predict": 3)"), 9);
  EXPECT_EQ(max_tokens(R"("max_tokens": 5, "n_predict": 3)"), 5);
  EXPECT_EQ(max_tokens(R"("n_predict": -1)"), -1);
}

TEST_F(OpenAIRequest, PromptFormsOfLlamaServer) {
  EXPECT_EQ(parse(Endpoint::completions, R"({"prompt": [104, 105]})").generation.prompt,
            (std::vector<int32_t>{104, 105}));
  EXPECT_EQ(parse(Endpoint::completions, R"({"prompt": ["hi"]})").generation.prompt,
            (std::vector<int32_t>{'h', 'i'}));
  EXPECT_EQ(parse(Endpoint::completions, R"({"prompt": [[7, 8]]})").generation.prompt,
            (std::vector<int32_t>{7, 8}));
  // parse_special: control tokens written in the text become those tokens.
  EXPECT_EQ(parse(Endpoint::completions, R"({"prompt": "<|im_end|>a"})").generation.prompt,
            (std::vector<int32_t>{testing::kImEnd, 'a'}));
  EXPECT_EQ(parse(Endpoint::completions, R"({"prompt": "x", "top_k": -1, "seed": -1})").generation.sampling.top_k,
            0);
}

TEST_F(OpenAIRequest, NativeCompletionTakesMixedPromptsNProbsAndReturnTokens) {
  const ParsedRequest mixed = native(R"({"prompt": ["hi", 7, "<|im_end|>"], "n_probs": 3, "return_tokens": true})");
  EXPECT_EQ(mixed.generation.prompt, (std::vector<int32_t>{'h', 'i', 7, testing::kImEnd}));
  EXPECT_EQ(mixed.generation.n_logprobs, 3);
  EXPECT_TRUE(mixed.response.logprobs);
  EXPECT_TRUE(mixed.response.return_tokens);
  const ParsedRequest plain = native(R"({"prompt": "ab", "n_predict": 5})");
  EXPECT_EQ(plain.generation.prompt, (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ(plain.generation.max_tokens, 5);
  EXPECT_FALSE(plain.response.logprobs);
  EXPECT_EQ(plain.generation.n_logprobs, -1);
  for (const char* bad : {R"({"prompt": [1, {}]})", R"({"prompt": "a", "n_probs": 21})", R"({})"}) {
    EXPECT_THROW(parse_native_completion_request(bad, ctx_), RequestError) << bad;
  }
}

TEST_F(OpenAIRequest, NativePromptInLlamaServersMultimodalFormIsTextOnly) {
  EXPECT_EQ(native(R"({"prompt": {"prompt_string": "ab"}})").generation.prompt,
            (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ(native(R"({"prompt": {"prompt_string": "ab", "multimodal_data": []}})").generation.prompt.size(),
            2u);
  auto field_of = [&](const char* body) {
    try {
      parse_native_completion_request(body, ctx_);
    } catch (const RequestError& e) {
      return e.param;
    }
    return std::string("accepted");
  };
  EXPECT_EQ(field_of(R"({"prompt": {"prompt_string": "a", "multimodal_data": ["iVBORw0KGgo="]}})"),
            "prompt.multimodal_data");
  EXPECT_EQ(field_of(R"({"prompt": {"prompt_string": 5}})"), "prompt.prompt_string");
  EXPECT_EQ(field_of(R"({"prompt": {}})"), "prompt.prompt_string");
}

TEST_F(OpenAIRequest, NativePromptListsAreOneRequestEach) {
  const std::vector<ParsedRequest> all = parse_native_completion_request(
      R"({"prompt": [[104, 105], "ab", {"prompt_string": "c"}, ["d", 7]], "n_predict": 3})", ctx_);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].generation.prompt, (std::vector<int32_t>{104, 105}));
  EXPECT_EQ(all[1].generation.prompt, (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ(all[2].generation.prompt, (std::vector<int32_t>{'c'}));
  EXPECT_EQ(all[3].generation.prompt, (std::vector<int32_t>{'d', 7}));
  for (const ParsedRequest& p : all) EXPECT_EQ(p.generation.max_tokens, 3);
  // a number anywhere at the top makes it one prompt of ids and text
  EXPECT_EQ(native(R"({"prompt": ["a", 98]})").generation.prompt, (std::vector<int32_t>{'a', 98}));
  auto field_of = [&](const std::string& body) {
    try {
      parse_native_completion_request(body, ctx_);
    } catch (const RequestError& e) {
      return e.param;
    }
    return std::string("accepted");
  };
  EXPECT_EQ(field_of(R"({"prompt": ["a", "b"], "stream": true})"), "stream");
  EXPECT_EQ(field_of(R"({"prompt": ["a"], "stream": true})"), "accepted");
  EXPECT_EQ(field_of(R"({"prompt": ["a", 5.5]})"), "prompt");
  EXPECT_EQ(field_of(R"({"prompt": ["a", true]})"), "prompt");
  std::string many = R"({"prompt": [)";
  for (int i = 0; i <= kMaxNativePrompts; ++i) many += i == 0 ? R"("x")" : R"(,"x")";
  EXPECT_EQ(field_of(many + "]}"), "prompt");
}

TEST_F(OpenAIRequest, ChatRendersWithChatMLFallbackAndSpecialTokens) {
  const ParsedRequest p = parse(Endpoint::chat, R"({"messages": [
      {"role": "developer", "content": "s"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "logprobs": true, "top_logprobs": 3})");
  const std::string text = tok_.decode(p.generation.prompt, true);
  EXPECT_EQ(text, "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(p.generation.prompt.front(), testing::kImStart);
  EXPECT_EQ(p.generation.n_logprobs, 3);
  EXPECT_TRUE(p.response.logprobs);
  EXPECT_EQ(p.response.endpoint, Endpoint::chat);
}

TEST_F(OpenAIRequest, TemplateBosAppearsOnceWhenTheVocabularyAddsIt) {
  const tokenizer::Tokenizer with_bos = testing::test_tokenizer(true);
  const std::string tmpl = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}";
  const Json messages = normalize_messages(Json::parse(R"([{"role": "user", "content": "hi"}])"));
  EXPECT_EQ(chat_prompt_tokens(messages, tmpl, with_bos, nullptr),
            (std::vector<int32_t>{testing::kBos, 'h', 'i'}));
  // A vocabulary that adds no BOS keeps the template's.
  EXPECT_EQ(chat_prompt_tokens(messages, tmpl, tok_, nullptr), (std::vector<int32_t>{testing::kBos, 'h', 'i'}));
}

TEST_F(OpenAIRequest, TemplateRaisingIsABadRequestNamingMessages) {
  ctx_.chat_template = "{{ raise_exception('roles must alternate') }}";
  try {
    parse(Endpoint::chat, R"({"messages": [{"role": "user", "content": "x"}]})");
    FAIL() << "accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "messages");
    EXPECT_NE(std::string(e.what()).find("roles must alternate"), std::string::npos);
  }
}

TEST_F(OpenAIRequest, AssistantToolCallsMayHaveNullContent) {
  EXPECT_NO_THROW(parse(Endpoint::chat, R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function",
       "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "content": "r"}]})"));
}

// Random edits of valid bodies: every outcome is a parse or a RequestError
// (never another exception, a crash or a hang).
TEST_F(OpenAIRequest, RandomlyCorruptedBodiesOnlyEverGiveRequestErrors) {
  const std::pair<Endpoint, std::string> valid[] = {
      {Endpoint::completions, R"({"prompt": "hi", "max_tokens": 3, "stop": ["a"], "logprobs": 2,
                                   "temperature": 0.5, "stream": true, "stream_options": {"include_usage": true}})"},
      {Endpoint::chat, R"({"messages": [{"role": "system", "content": "s"}, {"role": "user",
                           "content": [{"type": "text", "text": "t"}]}], "top_logprobs": 2, "logprobs": true,
                           "seed": 5, "chat_template_kwargs": {"x": [1, {"y": null}]}})"},
  };
  const std::string alphabet = "{}[]\",:0123456789.-+eE truefalsenull\\\x01\xff\xc3";
  std::mt19937_64 rng(11);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto& [endpoint, base] = valid[rng() % 2];
    std::string body = base;
    const int n_edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n_edits; ++k) {
      const size_t at = rng() % body.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: body[at] = c; break;
        case 1: body.insert(at, 1, c); break;
        default: body.erase(at, 1 + rng() % 8); break;
      }
      if (body.empty()) body.push_back('{');
    }
    try {
      parse(endpoint, body);
      ++parsed;
    } catch (const RequestError& e) {
      EXPECT_GE(e.status, 400);
      EXPECT_LT(e.status, 500);
    }
  }
  EXPECT_GT(parsed, 0);  // some edits keep the body valid
}

// Choice i of a response of several samples with the seed plus i, as
// llama-server's child tasks; a random seed stays random for each.
TEST_F(OpenAIRequest, EachChoiceHasItsOwnSeed) {
  ctx_.max_choices = 4;
  const ParsedRequest p = parse(Endpoint::completions, R"({"prompt": "a", "n": 4, "seed": 41})");
  EXPECT_EQ(p.response.n_choices, 4);
  for (int i = 0; i < 4; ++i) {
    const GenerationRequest g = choice_request(p.generation, i);
    EXPECT_EQ(g.sampling.seed, 41u + static_cast<uint32_t>(i));
    EXPECT_EQ(g.prompt, p.generation.prompt);
  }
  GenerationRequest random;
  EXPECT_EQ(choice_request(random, 3).sampling.seed, engine::kRandomSeed);
  GenerationRequest last;
  last.sampling.seed = engine::kRandomSeed - 1;
  EXPECT_EQ(choice_request(last, 1).sampling.seed, 0u) << "wraps past the random seed";
}

TEST(ChatRequest, TemplateVariablesAreTheDefaultsWithTheRequestsKwargsOver) {
  const Json defaults = {{"enable_thinking", false}, {"x", 1}};
  EXPECT_EQ(template_variables(defaults, nullptr), defaults);
  const Json kwargs = {{"enable_thinking", true}, {"y", "z"}};
  EXPECT_EQ(template_variables(defaults, &kwargs), Json({{"enable_thinking", true}, {"x", 1}, {"y", "z"}}));
  EXPECT_EQ(template_variables(Json::object(), &kwargs), kwargs);
}

}  // namespace openai_request_test
}  // namespace cohort::server
