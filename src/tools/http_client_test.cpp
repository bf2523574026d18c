// bench-serve's HTTP client: URLs, response heads, chunked bodies fed in
// pieces, and whole exchanges with a one-shot server on the loopback
// interface (a chunked event stream, a Content-Length body, a refused
// connection).
#include "tools/http_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::tools {
namespace http_client_test {

TEST(HttpUrl, ParsesHostPortAndPrefix) {
  HttpUrl u = parse_http_url("http://127.0.0.1:8080");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.base_path, "");
  u = parse_http_url("http://example.org/api/");
  EXPECT_EQ(u.host, "example.org");
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.base_path, "/api");
  u = parse_http_url("http://[::1]:9000");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 9000);
  EXPECT_EQ(u.to_string(), "http://[::1]:9000");
  u = parse_http_url("localhost:1234");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 1234);
}

TEST(HttpUrl, RefusesWhatItCannotSpeak) {
  EXPECT_THROW(parse_http_url("https://x:443"), Error);
  EXPECT_THROW(parse_http_url("ftp://x"), Error);
  EXPECT_THROW(parse_http_url("http://:80"), Error);
  EXPECT_THROW(parse_http_url("http://x:0"), Error);
  EXPECT_THROW(parse_http_url("http://x:99999"), Error);
  EXPECT_THROW(parse_http_url("http://x:port"), Error);
  EXPECT_THROW(parse_http_url("http://x:"), Error);
  EXPECT_THROW(parse_http_url("http://[::1"), Error);
  EXPECT_THROW(parse_http_url("http://x/a?b=1"), Error);
}

TEST(ResponseHead, StatusReasonAndHeaders) {
  std::string error;
  const auto h = parse_response_head("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A:  b \r\n", error);
  ASSERT_TRUE(h) << error;
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(h->reason, "OK");
  ASSERT_NE(h->header("content-type"), nullptr);
  EXPECT_EQ(*h->header("content-type"), "text/event-stream");
  EXPECT_EQ(*h->header("x-a"), "b");
  EXPECT_EQ(h->header("content-length"), nullptr);
  const auto bare = parse_response_head("HTTP/1.0 404\n", error);
  ASSERT_TRUE(bare) << error;
  EXPECT_EQ(bare->status, 404);
}

TEST(ResponseHead, MalformedHeadsAreReported) {
  std::string error;
  EXPECT_FALSE(parse_response_head("", error));
  EXPECT_FALSE(parse_response_head("HTTP/2 200 OK", error));
  EXPECT_FALSE(parse_response_head("HTTP/1.1 2x0 OK", error));
  EXPECT_FALSE(parse_response_head("HTTP/1.1 200 OK\r\nno colon\r\n", error));
  EXPECT_FALSE(parse_response_head("HTTP/1.1 200 OK\r\n folded: x\r\n", error));
  EXPECT_FALSE(error.empty());
}

TEST(ChunkedDecoder, DecodesWholeAndBytewise) {
  const std::string body = "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n";
  ChunkedDecoder whole;
  std::string out;
  ASSERT_TRUE(whole.feed(body, out)) << whole.error();
  EXPECT_TRUE(whole.done());
  EXPECT_EQ(out, "hello, world");
  ChunkedDecoder bytewise;
  out.clear();
  for (char c : body) ASSERT_TRUE(bytewise.feed(std::string_view(&c, 1), out)) << bytewise.error();
  EXPECT_TRUE(bytewise.done());
  EXPECT_EQ(out, "hello, world");
}

TEST(ChunkedDecoder, BadFramingFails) {
  std::string out;
  ChunkedDecoder a;
  EXPECT_FALSE(a.feed("zz\r\n", out));
  EXPECT_NE(a.error().find("malformed chunk size"), std::string::npos);
  ChunkedDecoder b;
  EXPECT_FALSE(b.feed("2\r\nabc\r\n", out));  // data longer than its size
  ChunkedDecoder c;
  EXPECT_FALSE(c.feed(std::string(2000, '1'), out));  // a size line without end
}

// Listens on a free loopback port; serve() answers one connection with
// `response` after reading the request head and body.
class OneShotServer {
 public:
  OneShotServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(::listen(fd_, 1), 0);
  }
  ~OneShotServer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  const std::string& request() const { return request_; }

  void serve(std::string response) {
    thread_ = std::thread([this, response = std::move(response)] {
      const int c = ::accept(fd_, nullptr, nullptr);
      char buf[4096];
      // The request: head, then Content-Length bytes (the test sends a small one).
      while (request_.find("\r\n\r\n") == std::string::npos || !body_complete()) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        request_.append(buf, static_cast<size_t>(n));
      }
      ::send(c, response.data(), response.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }

 private:
  bool body_complete() const {
    const size_t cl = request_.find("Content-Length: ");
    if (cl == std::string::npos) return true;
    const size_t n = std::stoul(request_.substr(cl + 16));
    return request_.size() >= request_.find("\r\n\r\n") + 4 + n;
  }
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
};

TEST(HttpRequest, StreamsAChunkedBodyAndSendsTheRequestWhole) {
  OneShotServer server;
  server.serve(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "f\r\ndata: {\"a\":1}\n\n\r\n" "e\r\ndata: [DONE]\n\n\r\n" "0\r\n\r\n");
  HttpUrl url = parse_http_url("http://127.0.0.1:" + std::to_string(server.port()));
  std::string body;
  int head_status = 0;
  const int status = http_request(
      url, "POST", "/v1/completions", "{\"x\":1}", [&](const HttpResponseHead& h) { head_status = h.status; },
      [&](std::string_view piece) { body.append(piece); });
  EXPECT_EQ(status, 200);
  EXPECT_EQ(head_status, 200);
  EXPECT_EQ(body, "data: {\"a\":1}\n\ndata: [DONE]\n\n");
  const std::string& req = server.request();
  EXPECT_EQ(req.rfind("POST /v1/completions HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("Content-Length: 7\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("Connection: close\r\n"), std::string::npos) << req;
  EXPECT_EQ(req.substr(req.size() - 7), "{\"x\":1}");
}

TEST(HttpRequest, ReadsAContentLengthBody) {
  OneShotServer server;
  server.serve("HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!");
  const HttpResult r =
      http_fetch(parse_http_url("http://127.0.0.1:" + std::to_string(server.port())), "GET", "/missing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "nope!");
}

TEST(HttpRequest, TruncatedBodyIsAnError) {
  OneShotServer server;
  server.serve("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort");
  EXPECT_THROW(http_fetch(parse_http_url("http://127.0.0.1:" + std::to_string(server.port())), "GET", "/"),
               Error);
}

TEST(HttpRequest, RefusedConnectionNamesTheAddress) {
  int port = 0;
  {
    OneShotServer closed;  // a port that was free a moment ago and has no listener now
    port = closed.port();
  }
  try {
    http_fetch(parse_http_url("http://127.0.0.1:" + std::to_string(port)), "GET", "/");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect to 127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
}

}  // namespace http_client_test
}  // namespace cohort::tools
