// Request-head parsing and body framing: well-formed heads, the faults a
// server must refuse, and random bytes (never a crash, always a status).
#include "server/http_message.h"

#include <cstdint>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace cohort::server {
namespace http_message_test {

TEST(HttpMessage, ParsesRequestHeads) {
  const HeadParseResult r = parse_request_head("POST /v1/x?a=b HTTP/1.1\r\nHost: h\r\nX-Thing:  v  ");
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->method, "POST");
  EXPECT_EQ(r.request->path, "/v1/x");
  EXPECT_EQ(r.request->query, "a=b");
  EXPECT_EQ(*r.request->header("x-thing"), "v");
  EXPECT_TRUE(r.request->keep_alive());
  EXPECT_FALSE(parse_request_head("GET / HTTP/1.0").request->keep_alive());
}

TEST(HttpMessage, BodyFramingAndChunkSizes) {
  HttpRequest r;
  EXPECT_EQ(body_framing(r).kind, BodyFraming::Kind::none);
  r.headers = {{"content-length", "12"}};
  EXPECT_EQ(body_framing(r).length, 12u);
  r.headers = {{"content-length", "-1"}};
  EXPECT_EQ(body_framing(r).status, 400);
  r.headers = {{"transfer-encoding", "chunked"}, {"content-length", "3"}};
  EXPECT_EQ(body_framing(r).status, 400);
  EXPECT_EQ(parse_chunk_size("1a;x=y", 100), 26u);
  EXPECT_FALSE(parse_chunk_size("1a", 25));
  EXPECT_FALSE(parse_chunk_size("", 100));
  EXPECT_FALSE(parse_chunk_size("ffffffffffffffffff", SIZE_MAX));
}

TEST(HttpMessage, RefusesMalformedHeadsWithAStatus) {
  const std::pair<std::string, int> cases[] = {
      {"", 400},
      {"GET", 400},
      {"GET /", 400},
      {"GET / HTTP/1.1 extra", 400},
      {"G@T / HTTP/1.1", 400},
      {"GET noslash HTTP/1.1", 400},
      {"GET /a\x01b HTTP/1.1", 400},
      {"GET / HTTP/2.0", 505},
      {"GET / HTTP/1.9", 505},
      {"GET / FTP/1.1", 400},
      {"GET / HTTP/1.1\r\n folded: x", 400},
      {"GET / HTTP/1.1\r\nNo colon", 400},
      {"GET / HTTP/1.1\r\nBad Name: x", 400},
      {"GET / HTTP/1.1\r\nX: a\x7f", 400},
      {"GET / HTTP/1.1\r\n\r\nX: y", 400},
  };
  for (const auto& [head, status] : cases) {
    SCOPED_TRACE(head);
    const HeadParseResult r = parse_request_head(head);
    EXPECT_FALSE(r.request);
    EXPECT_EQ(r.status, status);
    EXPECT_FALSE(r.error.empty());
  }
}

TEST(HttpMessage, RandomBytesNeverCrashTheParser) {
  std::mt19937_64 rng(7);
  const std::string valid = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n"
                            "Transfer-Encoding: chunked";
  for (int i = 0; i < 20000; ++i) {
    std::string head = valid;
    const int n_edits = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n_edits; ++k) {
      const size_t at = rng() % (head.size() + 1);
      if (rng() % 2 && at < head.size()) head[at] = static_cast<char>(rng() % 256);
      else head.insert(at, 1, static_cast<char>(rng() % 256));
    }
    const HeadParseResult r = parse_request_head(head);
    if (r.request) {
      const BodyFraming f = body_framing(*r.request);
      EXPECT_TRUE(f.status == 0 || f.status == 400 || f.status == 501);
    } else {
      EXPECT_TRUE(r.status == 400 || r.status == 505) << r.status;
    }
  }
}

}  // namespace http_message_test
}  // namespace cohort::server
