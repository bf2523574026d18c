// bench-serve's SSE reader: events out of bytes that arrive in pieces of any
// size, with every line end the specification allows, comments and other
// fields skipped, and OpenAI's [DONE].
#include "tools/sse_parser.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::tools {
namespace sse_parser_test {

std::vector<std::string> parse_whole(std::string_view text) {
  SseParser p;
  std::vector<std::string> events;
  p.feed(text, events);
  return events;
}

std::vector<std::string> parse_bytewise(std::string_view text) {
  SseParser p;
  std::vector<std::string> events;
  for (char c : text) p.feed(std::string_view(&c, 1), events);
  return events;
}

using Events = std::vector<std::string>;

TEST(SseParser, OpenAiStreamGivesOneEventPerDataLine) {
  const std::string stream = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
  const Events want = {"{\"a\":1}", "{\"b\":2}", "[DONE]"};
  EXPECT_EQ(parse_whole(stream), want);
  EXPECT_EQ(parse_bytewise(stream), want);
  EXPECT_TRUE(is_done_event(want.back()));
  EXPECT_FALSE(is_done_event(want.front()));
}

TEST(SseParser, EveryLineEndIsAccepted) {
  const Events want = {"x", "y", "z"};
  EXPECT_EQ(parse_whole("data: x\r\n\r\ndata: y\r\rdata: z\n\n"), want);
  EXPECT_EQ(parse_bytewise("data: x\r\n\r\ndata: y\r\rdata: z\n\n"), want);
}

TEST(SseParser, SeveralDataLinesJoinWithNewlines) {
  EXPECT_EQ(parse_whole("data: one\ndata:two\ndata\n\n"), (Events{"one\ntwo\n"}));
}

TEST(SseParser, CommentsAndOtherFieldsAreSkipped) {
  EXPECT_EQ(parse_whole(": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: x\n\n"), (Events{"x"}));
  EXPECT_EQ(parse_whole("event: ping\n\n"), Events{});  // no data: nothing dispatched
}

TEST(SseParser, OnlyOneSpaceAfterTheColonIsRemoved) {
  EXPECT_EQ(parse_whole("data:  two spaces\n\n"), (Events{" two spaces"}));
}

TEST(SseParser, AnUnterminatedEventIsNotDispatched) {
  SseParser p;
  Events events;
  p.feed("data: a\n\ndata: partial\n", events);
  EXPECT_EQ(events, (Events{"a"}));
  p.feed("\n", events);  // ... until its blank line arrives
  EXPECT_EQ(events, (Events{"a", "partial"}));
}

TEST(SseParser, OverlongLineFails) {
  SseParser p(8);
  Events events;
  EXPECT_THROW(p.feed("data: 0123456789\n\n", events), Error);
}

}  // namespace sse_parser_test
}  // namespace cohort::tools
