// SSE framing: one data line per message, a blank line after each, [DONE]
// at the end; payloads with newlines inside strings stay on one line.
#include "server/sse.h"

#include <gtest/gtest.h>

namespace cohort::server {
namespace sse_test {

TEST(Sse, DataMessageIsOneLineAndABlankLine) {
  EXPECT_EQ(sse_data("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  EXPECT_EQ(sse_comment("keep-alive"), ": keep-alive\n\n");
}

TEST(Sse, JsonWithNewlinesInStringsStaysOnOneDataLine) {
  const std::string framed = sse_json(Json{{"text", "line 1\nline 2\r\n"}});
  ASSERT_EQ(framed.rfind("data: ", 0), 0u);
  ASSERT_EQ(framed.substr(framed.size() - 2), "\n\n");
  const std::string payload = framed.substr(6, framed.size() - 8);
  EXPECT_EQ(payload.find('\n'), std::string::npos);
  EXPECT_EQ(Json::parse(payload)["text"], "line 1\nline 2\r\n");
}

TEST(Sse, InvalidUtf8IsReplacedNotThrown) {
  const std::string framed = sse_json(Json{{"text", std::string("a\xC3")}});
  EXPECT_EQ(Json::parse(framed.substr(6))["text"], "a\xEF\xBF\xBD");
}

}  // namespace sse_test
}  // namespace cohort::server
