// Embedding requests: every input form reaches the token lists, bad
// requests are 400s naming their field, and the answers have llama-server's
// and OpenAI's forms.
#include "server/embedding_api.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/request_error.h"
#include "server/request_fields.h"
#include "server/server_testing.h"

namespace cohort::server {
namespace embedding_api_test {

class EmbeddingApi : public ::testing::Test {
 protected:
  EmbeddingApi() : tok_(testing::test_tokenizer()) {}
  EmbeddingRequest parse(const std::string& body) const { return parse_embedding_request(body, tok_, 8); }
  // The field a refused body names.
  std::string refused(const std::string& body) const {
    try {
      parse(body);
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status, 400) << body;
      EXPECT_NE(std::string(e.what()).find(e.param), std::string::npos) << e.what();
      return e.param;
    }
    ADD_FAILURE() << "accepted: " << body;
    return "";
  }
  tokenizer::Tokenizer tok_;
};

TEST_F(EmbeddingApi, AStringIsOneInputOfItsTokens) {
  const EmbeddingRequest r = parse(R"({"input": "abc"})");
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0], (std::vector<int32_t>{'a', 'b', 'c'}));
  EXPECT_EQ(r.embd_normalize, 2);
  EXPECT_FALSE(r.base64);
  EXPECT_FALSE(r.native);
}

TEST_F(EmbeddingApi, TokenIdsAreOneInputAndListsAreOneInputEach) {
  EXPECT_EQ(parse(R"({"input": [1, 2, 3]})").inputs, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  const EmbeddingRequest r = parse(R"({"input": ["ab", [5, 6], "c"]})");
  EXPECT_EQ(r.inputs, (std::vector<std::vector<int32_t>>{{'a', 'b'}, {5, 6}, {'c'}}));
}

TEST_F(EmbeddingApi, ContentIsTheNativeSpellingOfInput) {
  const EmbeddingRequest r = parse(R"({"content": "hi"})");
  EXPECT_TRUE(r.native);
  EXPECT_EQ(r.inputs, (std::vector<std::vector<int32_t>>{{'h', 'i'}}));
}

TEST_F(EmbeddingApi, InputsInLlamaServersForms) {
  using Inputs = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(parse(R"({"input": [104, "ab", 105]})").inputs, (Inputs{{104, 'a', 'b', 105}}));
  EXPECT_EQ(parse(R"({"input": [[104], [104, "ab"]]})").inputs, (Inputs{{104}, {104, 'a', 'b'}}));
  EXPECT_EQ(parse(R"({"input": {"prompt_string": "ab"}})").inputs, (Inputs{{'a', 'b'}}));
  EXPECT_EQ(parse(R"({"input": ["a", {"prompt_string": "b"}, {"content": [{"type": "text", "text": "c"},
                                                                         {"type": "text", "text": "d"}]}]})")
                .inputs,
            (Inputs{{'a'}, {'b'}, {'c', 'd'}}));
}

TEST_F(EmbeddingApi, NormalizeAndEncodingAreRead) {
  const EmbeddingRequest r = parse(R"({"input": "a", "embd_normalize": -1, "encoding_format": "base64"})");
  EXPECT_EQ(r.embd_normalize, -1);
  EXPECT_TRUE(r.base64);
  EXPECT_FALSE(parse(R"({"input": "a", "encoding_format": "float"})").base64);
}

TEST_F(EmbeddingApi, BadRequestsNameTheirField) {
  EXPECT_EQ(refused(R"({})"), "input");
  EXPECT_EQ(refused(R"({"input": ""})"), "input");
  EXPECT_EQ(refused(R"({"input": []})"), "input");
  EXPECT_EQ(refused(R"({"input": 5})"), "input");
  EXPECT_EQ(refused(R"({"input": {"a": 1}})"), "input.prompt_string");
  EXPECT_EQ(refused(R"({"input": {"content": [{"type": "image_url"}]}})"), "input.content[0]");
  EXPECT_EQ(refused(R"({"input": ["a", {"content": "a"}]})"), "input[1].content");
  EXPECT_EQ(refused(R"({"input": ["a", ""]})"), "input[1]");
  EXPECT_EQ(refused(R"({"input": ["a", 7.5]})"), "input");  // a number: one mixed input
  EXPECT_EQ(refused(R"({"input": [["a", 7.5]]})"), "input[0]");
  EXPECT_EQ(refused(R"({"input": "123456789"})"), "input");  // 9 tokens, the context holds 8
  EXPECT_EQ(refused(R"({"input": ["a", "123456789"]})"), "input[1]");
  EXPECT_EQ(refused(R"({"input": [1, 99999]})"), "input");   // outside the vocabulary
  EXPECT_EQ(refused(R"({"input": "a", "embd_normalize": "2"})"), "embd_normalize");
  EXPECT_EQ(refused(R"({"input": "a", "embd_normalize": -2})"), "embd_normalize");
  EXPECT_EQ(refused(R"({"input": "a", "encoding_format": "int8"})"), "encoding_format");
  EXPECT_EQ(refused(R"({"input": "a", "encoding_format": 1})"), "encoding_format");
  EXPECT_NO_THROW(parse(R"({"input": "12345678"})"));  // exactly the context
}

TEST_F(EmbeddingApi, NativeAnswerIsAListOfVectorLists) {
  const std::vector<InputEmbeddings> in = {{{0.5f, -1.0f}}, {{1.0f, 2.0f}, {3.0f, 4.0f}}};
  const Json j = Json::parse(native_embeddings_json(in));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["index"], 0);
  EXPECT_EQ(j[0]["embedding"], Json::parse("[[0.5, -1.0]]"));
  EXPECT_EQ(j[1]["index"], 1);
  EXPECT_EQ(j[1]["embedding"], Json::parse("[[1, 2], [3, 4]]"));
}

TEST_F(EmbeddingApi, OpenAIAnswerHasDataModelAndUsage) {
  const std::vector<InputEmbeddings> in = {{{0.25f, 1.0f}}, {{-2.0f, 0.0f}}};
  const Json j = Json::parse(openai_embeddings_json(in, false, "m", 7));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["usage"], Json::parse(R"({"prompt_tokens": 7, "total_tokens": 7})"));
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][1]["embedding"], Json::parse("[-2.0, 0.0]"));
}

TEST_F(EmbeddingApi, FloatsRoundTripThroughTheText) {
  const std::vector<float> v = {0.1f, 1e-30f, -3.4028235e38f, 1.0f / 3.0f};
  const Json j = Json::parse(native_embeddings_json({{v}}));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(j[0]["embedding"][0][i].get<float>(), v[i]);
}

TEST_F(EmbeddingApi, Base64IsTheLittleEndianFloatBytes) {
  // 1.0f is 00 00 80 3f; 2.0f is 00 00 00 40.
  const Json j = Json::parse(openai_embeddings_json({{{1.0f, 2.0f}}}, true, "m", 1));
  EXPECT_EQ(j["data"][0]["embedding"], "AACAPwAAAEA=");
}

TEST(Base64, EncodesRfc4648Vectors) {
  auto enc = [](const std::string& s) {
    return base64_encode({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(enc(""), "");
  EXPECT_EQ(enc("f"), "Zg==");
  EXPECT_EQ(enc("fo"), "Zm8=");
  EXPECT_EQ(enc("foo"), "Zm9v");
  EXPECT_EQ(enc("foob"), "Zm9vYg==");
  EXPECT_EQ(enc("fooba"), "Zm9vYmE=");
  EXPECT_EQ(enc("foobar"), "Zm9vYmFy");
}

}  // namespace embedding_api_test
}  // namespace cohort::server
