// The HTTP server over real sockets: routing, protocol errors, body limits,
// chunked bodies, keep-alive, streaming, client disconnects and stop().
#include "server/http_server.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "server/http_client_testing.h"

namespace cohort::server {
namespace http_server_test {

using namespace std::chrono_literals;
using testing::http_request;
using testing::roundtrip;

class HttpServerTest : public ::testing::Test {
 protected:
  HttpServerTest() : server_(options(), [](int status, const std::string& message) {
                       return ErrorBody{fmt::format("E{}: {}", status, message), "text/plain"};
                     }) {
    server_.route("GET", "/ping", [](Exchange& e) { e.respond(200, "pong", "text/plain"); });
    server_.route("POST", "/echo", [](Exchange& e) { e.respond(200, e.request().body, "text/plain"); });
    server_.route("GET", "/throw", [](Exchange&) -> void { throw std::runtime_error("boom"); });
    server_.route("GET", "/stream", [](Exchange& e) {
      e.begin_stream(200, "text/event-stream");
      for (const char* part : {"one ", "two ", "three"}) e.write(part);
    });
    server_.route("GET", "/wait", [this](Exchange& e) {
      handler_started_.set_value();
      while (!e.client_gone()) std::this_thread::sleep_for(5ms);
      client_gone_seen_.store(true);
    });
    server_.route("GET", "/block", [this](Exchange& e) {
      ++blocked_;
      while (!release_.load() && !e.client_gone()) std::this_thread::sleep_for(5ms);
      e.respond(200, "done", "text/plain");
    });
    port_ = server_.start("127.0.0.1", 0);
  }
  static HttpServerOptions options() {
    HttpServerOptions o;
    o.max_body_bytes = 1000;
    o.max_head_bytes = 2000;
    o.n_threads = 3;
    o.common_headers = {{"X-Common", "1"}};
    return o;
  }

  HttpServer server_;
  int port_ = 0;
  std::promise<void> handler_started_;
  std::atomic<bool> client_gone_seen_{false};
  std::atomic<int> blocked_{0};
  std::atomic<bool> release_{false};
};

TEST_F(HttpServerTest, RoutesByPathAndMethod) {
  const testing::RawResponse r = roundtrip(port_, http_request("GET", "/ping"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "pong");
  EXPECT_EQ(r.headers.at("access-control-allow-origin"), "*");
  EXPECT_EQ(roundtrip(port_, http_request("GET", "/ping?x=1")).status, 200);
  EXPECT_EQ(roundtrip(port_, http_request("POST", "/echo", "hello")).body, "hello");
}

TEST_F(HttpServerTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  const testing::RawResponse missing = roundtrip(port_, http_request("GET", "/nope"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body.rfind("E404: ", 0), 0u);
  const testing::RawResponse wrong = roundtrip(port_, http_request("DELETE", "/ping"));
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.headers.at("allow"), "GET, OPTIONS");
}

// As llama-server: the preflight is 200 on any path, the Origin echoed
// (cors "*" with credentials, the default), the fixed methods and headers.
TEST_F(HttpServerTest, OptionsAnswersTheCorsPreflightAsLlamaServer) {
  const std::string preflight = "Origin: https://web.example.fr\r\nAccess-Control-Request-Method: POST\r\n"
                                "Access-Control-Request-Headers: Authorization\r\n";
  for (const char* path : {"/echo", "/nope"}) {
    const testing::RawResponse r = roundtrip(port_, http_request("OPTIONS", path, "", preflight));
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, "");
    EXPECT_EQ(r.headers.at("access-control-allow-origin"), "https://web.example.fr");
    EXPECT_EQ(r.headers.at("access-control-allow-credentials"), "true");
    EXPECT_EQ(r.headers.at("access-control-allow-methods"), "GET, POST, DELETE, OPTIONS");
    EXPECT_EQ(r.headers.at("access-control-allow-headers"), "*");
    EXPECT_EQ(r.headers.at("vary"), "Origin");
  }
}

TEST_F(HttpServerTest, EveryResponseEchoesTheOriginAndCarriesTheCommonHeaders) {
  const std::string origin = "Origin: http://localhost:5173\r\n";
  const testing::RawResponse ok = roundtrip(port_, http_request("GET", "/ping", "", origin));
  EXPECT_EQ(ok.headers.at("access-control-allow-origin"), "http://localhost:5173");
  EXPECT_EQ(ok.headers.at("x-common"), "1");
  EXPECT_EQ(ok.headers.count("access-control-allow-credentials"), 0u) << "a preflight's header only";
  const testing::RawResponse missing = roundtrip(port_, http_request("GET", "/nope", "", origin));
  EXPECT_EQ(missing.headers.at("access-control-allow-origin"), "http://localhost:5173");
  EXPECT_EQ(missing.headers.at("x-common"), "1");
  const testing::RawResponse streamed = roundtrip(port_, http_request("GET", "/stream", "", origin));
  EXPECT_EQ(streamed.headers.at("access-control-allow-origin"), "http://localhost:5173");
  EXPECT_EQ(streamed.headers.at("x-common"), "1");
  EXPECT_EQ(roundtrip(port_, http_request("GET", "/ping")).headers.at("access-control-allow-origin"), "*")
      << "no Origin: not a cross-origin request";
  const testing::RawResponse bad = roundtrip(port_, "GARBAGE\r\n\r\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.headers.at("x-common"), "1") << "the I/O loop's own answers too";
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413) {
  EXPECT_EQ(roundtrip(port_, http_request("POST", "/echo", std::string(1001, 'x'))).status, 413);
  EXPECT_EQ(roundtrip(port_, http_request("POST", "/echo", std::string(1000, 'x'))).status, 200);
  const std::string chunked = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" +
                              std::string(1000, 'x') + "\r\n1\r\nx\r\n0\r\n\r\n";
  EXPECT_EQ(roundtrip(port_, chunked).status, 413);
}

TEST_F(HttpServerTest, MalformedRequestsGet4xxOr5xxProtocolStatuses) {
  EXPECT_EQ(roundtrip(port_, "GARBAGE\r\n\r\n").status, 400);
  EXPECT_EQ(roundtrip(port_, "GET /ping HTTP/2.0\r\n\r\n").status, 505);
  EXPECT_EQ(roundtrip(port_, "GET ping HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(roundtrip(port_, "GET /ping HTTP/1.1\r\nNoColon\r\n\r\n").status, 400);
  EXPECT_EQ(roundtrip(port_, "POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n").status, 400);
  EXPECT_EQ(roundtrip(port_, "POST /echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab").status,
            400);
  EXPECT_EQ(roundtrip(port_, "POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").status, 501);
  EXPECT_EQ(roundtrip(port_, "GET /ping HTTP/1.1\r\nX: " + std::string(3000, 'a') + "\r\n\r\n").status, 431);
  EXPECT_EQ(roundtrip(port_, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").status, 400);
  EXPECT_EQ(roundtrip(port_, http_request("GET", "/ping")).status, 200);  // still serving
}

TEST_F(HttpServerTest, ChunkedRequestBodyAndExpectContinue) {
  const std::string chunked =
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
  EXPECT_EQ(roundtrip(port_, chunked).body, "hello world");
  testing::ClientSocket s(port_);
  s.send("POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
  EXPECT_NE(s.read_until("100 Continue\r\n\r\n").find("HTTP/1.1 100 Continue"), std::string::npos);
  s.send("ok");
  const std::string all = s.read_all();
  EXPECT_EQ(testing::parse_response(all.substr(all.find("\r\n\r\n") + 4)).body, "ok");
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  testing::ClientSocket s(port_);
  s.send("GET /ping HTTP/1.1\r\n\r\nPOST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
  s.send("GET /ping HTTP/1.1\r\nConnection: close\r\n\r\n");
  const std::string all = s.read_all();
  size_t n = 0;
  for (size_t at = all.find("HTTP/1.1 200"); at != std::string::npos; at = all.find("HTTP/1.1 200", at + 1)) ++n;
  EXPECT_EQ(n, 3u);
  EXPECT_NE(all.find("\r\n\r\nhi"), std::string::npos);
}

TEST_F(HttpServerTest, HandlerExceptionIs500AndTheServerKeepsServing) {
  const testing::RawResponse r = roundtrip(port_, http_request("GET", "/throw"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("boom"), std::string::npos);
  EXPECT_EQ(roundtrip(port_, http_request("GET", "/ping")).status, 200);
}

TEST_F(HttpServerTest, StreamedResponseIsChunkedAndEnded) {
  const testing::RawResponse r = roundtrip(port_, http_request("GET", "/stream"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("transfer-encoding"), "chunked");
  EXPECT_EQ(r.body, "one two three");
  // HTTP/1.0 clients get the bytes unframed and a close.
  const testing::RawResponse old = roundtrip(port_, "GET /stream HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.body, "one two three");
}

TEST_F(HttpServerTest, HandlerSeesTheClientGoAway) {
  testing::ClientSocket s(port_);
  s.send(http_request("GET", "/wait"));
  handler_started_.get_future().wait();
  s.close();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!client_gone_seen_.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(client_gone_seen_.load());
}

TEST_F(HttpServerTest, StopEndsIdleConnectionsAndWaitingHandlersPromptly) {
  testing::ClientSocket idle(port_);
  testing::ClientSocket waiting(port_);
  waiting.send(http_request("GET", "/wait"));
  handler_started_.get_future().wait();
  const auto t0 = std::chrono::steady_clock::now();
  server_.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_TRUE(client_gone_seen_.load());
  server_.wait();  // returns at once after stop
}

// stop() right after start() finds workers still starting: each must see it,
// however its check of the flag and its wait fall around the notification.
// A stop that hangs is left running (the server leaked) so the test fails
// instead of waiting on it.
TEST(HttpServer, StopRightAfterStartEndsEveryWorker) {
  for (int i = 0; i < 300; ++i) {
    HttpServerOptions o;
    o.n_threads = 4;
    auto* server = new HttpServer(o);
    server->start("127.0.0.1", 0);
    auto stopped = std::make_shared<std::promise<void>>();
    std::future<void> done = stopped->get_future();
    std::thread([server, stopped] {
      server->stop();
      stopped->set_value();
    }).detach();
    ASSERT_EQ(done.wait_for(10s), std::future_status::ready) << "stop() still waiting after 10 s, round " << i;
    delete server;
  }
}

// Three workers at start; six handlers that block do not keep /ping waiting.
TEST_F(HttpServerTest, BlockedHandlersDoNotStarveOtherRequests) {
  std::vector<std::unique_ptr<testing::ClientSocket>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<testing::ClientSocket>(port_));
    clients.back()->send(http_request("GET", "/block"));
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (blocked_.load() < 6 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(blocked_.load(), 6);
  EXPECT_EQ(roundtrip(port_, http_request("GET", "/ping")).body, "pong");
  release_.store(true);
}

// --api-key: a request needs "Authorization: Bearer KEY" with one of the
// keys, except on the public paths and for the CORS preflight; CORS headers
// follow cors.origins.
TEST(HttpServer, ApiKeysGuardEveryRouteButThePublicOnes) {
  HttpServerOptions o;
  o.api_keys = {"sk-first", "sk-second"};
  o.public_paths = {"/health"};
  o.cors.origins = "";
  HttpServer server(o, [](int status, const std::string& message) {
    return ErrorBody{fmt::format("E{}: {}", status, message), "text/plain"};
  });
  server.route("GET", "/ping", [](Exchange& e) { e.respond(200, "pong", "text/plain"); });
  server.route("GET", "/health", [](Exchange& e) { e.respond(200, "ok", "text/plain"); });
  const int port = server.start("127.0.0.1", 0);
  auto with_auth = [port](const std::string& path, const std::string& header) {
    return roundtrip(port, http_request("GET", path, "", header.empty() ? "" : "Authorization: " + header + "\r\n"));
  };
  const testing::RawResponse none = with_auth("/ping", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.body, "E401: Invalid API Key");
  EXPECT_EQ(none.headers.at("www-authenticate"), "Bearer");
  EXPECT_EQ(none.headers.count("access-control-allow-origin"), 0u) << "cors.origins empty: no CORS header";
  for (const char* bad : {"Bearer sk-firs", "Bearer sk-first2", "Bearer ", "sk-first", "Basic sk-first",
                          "bearer sk-first", "Bearer SK-FIRST"}) {
    EXPECT_EQ(with_auth("/ping", bad).status, 401) << bad;
  }
  EXPECT_EQ(with_auth("/ping", "Bearer sk-first").body, "pong");
  EXPECT_EQ(with_auth("/ping", "Bearer sk-second").body, "pong");
  auto with_key = [port](const std::string& key, const std::string& more = "") {
    return roundtrip(port, http_request("GET", "/ping", "", more + "X-Api-Key: " + key + "\r\n"));
  };
  EXPECT_EQ(with_key("sk-second").body, "pong") << "Anthropic's header";
  EXPECT_EQ(with_key("sk-secon").status, 401);
  EXPECT_EQ(with_key("Bearer sk-second").status, 401);
  EXPECT_EQ(with_key("sk-second", "Authorization: Bearer sk-wrong\r\n").status, 401)
      << "Authorization, when given, decides";
  EXPECT_EQ(with_auth("/health", "").body, "ok") << "a public path needs no key";
  EXPECT_EQ(with_auth("/nope", "Bearer sk-first").status, 404);
  EXPECT_EQ(roundtrip(port, http_request("OPTIONS", "/ping")).status, 200) << "preflights carry no credentials";
}

TEST(HttpServer, CorsOriginIsTheConfiguredOne) {
  HttpServerOptions o;
  o.cors.origins = "https://example.org";
  HttpServer server(o);
  server.route("GET", "/ping", [](Exchange& e) { e.respond(200, "pong", "text/plain"); });
  const int port = server.start("127.0.0.1", 0);
  EXPECT_EQ(roundtrip(port, http_request("GET", "/ping")).headers.at("access-control-allow-origin"),
            "https://example.org");
  EXPECT_EQ(roundtrip(port, http_request("GET", "/nope")).headers.at("access-control-allow-origin"),
            "https://example.org");
}

// A body that breaks off is answered before the close: 400 when the client
// ended its side or sent malformed framing, 408 when it went quiet; several
// Transfer-Encoding lines are refused; Expect is matched without case.
TEST(HttpServer, BodyFramingErrorsAreAnsweredBeforeTheClose) {
  HttpServerOptions o;
  o.read_timeout = 300ms;
  HttpServer server(o);
  server.route("POST", "/echo", [](Exchange& e) { e.respond(200, e.request().body, "text/plain"); });
  const int port = server.start("127.0.0.1", 0);
  const std::string chunked = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const testing::RawResponse no_crlf = roundtrip(port, chunked + "2\r\nhiXX\r\n0\r\n\r\n");
  EXPECT_EQ(no_crlf.status, 400);
  EXPECT_NE(no_crlf.body.find("CRLF"), std::string::npos) << no_crlf.body;
  for (const std::string& cut : {chunked + "2\r\nhi\r\n", chunked + "2\r\nh",
                                 std::string("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")}) {
    {
      testing::ClientSocket s(port);
      s.send(cut);
      s.shutdown_write();
      EXPECT_EQ(testing::parse_response(s.read_all()).status, 400) << cut;
    }
    {
      testing::ClientSocket s(port);
      s.send(cut);
      EXPECT_EQ(testing::parse_response(s.read_all()).status, 408) << cut;
    }
  }
  EXPECT_EQ(roundtrip(port, "POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "2\r\nhi\r\n0\r\n\r\n").status,
            400);
  EXPECT_EQ(roundtrip(port, "POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n").status,
            501);
  testing::ClientSocket s(port);
  s.send("POST /echo HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
  EXPECT_NE(s.read_until("100 Continue\r\n\r\n", 2s).find("HTTP/1.1 100 Continue"), std::string::npos);
  s.send("ok");
  const std::string all = s.read_all();
  EXPECT_EQ(testing::parse_response(all.substr(all.find("\r\n\r\n") + 4)).body, "ok");
}

// write_timeout bounds each stall of a slow reader, not the whole reply: a
// client that takes a large reply slowly, but steadily, gets all of it.
TEST(HttpServer, ASlowButSteadyReaderGetsALargeReply) {
  HttpServerOptions o;
  o.write_timeout = 400ms;
  HttpServer server(o);
  const std::string big(16 << 20, 'x');
  server.route("GET", "/big", [&big](Exchange& e) { e.respond(200, big, "text/plain"); });
  const int port = server.start("127.0.0.1", 0);
  testing::ClientSocket s(port);
  s.set_receive_buffer(64 << 10);
  s.send(http_request("GET", "/big"));
  // At most 64 KiB every 5 ms: about a second beyond what the socket
  // buffers hold, well past write_timeout, but never a stall that long.
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (!s.eof() && std::chrono::steady_clock::now() < give_up) {
    s.read_some(64 << 10, 1s);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(testing::parse_response(s.received()).body.size(), big.size());
}

// Beyond max_connections a connection is answered 503 with Retry-After;
// closing one makes room again; a connection that sends nothing is closed
// after first_byte_timeout, which makes room too.
TEST(HttpServer, ConnectionsBeyondTheLimitGet503AndIdleOnesAreClosed) {
  HttpServerOptions o;
  o.max_connections = 2;
  o.first_byte_timeout = 300ms;
  HttpServer server(o);
  server.route("GET", "/ping", [](Exchange& e) { e.respond(200, "pong", "text/plain"); });
  const int port = server.start("127.0.0.1", 0);
  auto a = std::make_unique<testing::ClientSocket>(port);
  testing::ClientSocket b(port);
  std::this_thread::sleep_for(50ms);  // both accepted
  const testing::RawResponse refused = roundtrip(port, http_request("GET", "/ping"));
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers.at("retry-after"), "1");
  a.reset();
  std::this_thread::sleep_for(100ms);  // the server sees the close
  EXPECT_EQ(roundtrip(port, http_request("GET", "/ping")).body, "pong");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(b.read_all(), "") << "an idle connection is closed without an answer";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(roundtrip(port, http_request("GET", "/ping")).body, "pong");
}

size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Idle connections cost no thread and delay nothing: with 1,000 open, of
// which 200 sent half a request head, /ping answers at once (each request
// on a new connection) and the process has as many threads as before.
// Before the I/O thread, 270 idle sockets held every worker and made
// /health time out for ~28 s.
TEST(HttpServer, ThousandIdleConnectionsDelayNoRequestAndAddNoThread) {
  constexpr int kIdle = 1000;
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t want = 2 * kIdle + 256;  // both ends of each connection live in this process
  if (limit.rlim_cur < want) {
    limit.rlim_cur = std::min(want, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < want) GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << limit.rlim_max << " < " << want;
  HttpServerOptions o;
  o.n_threads = 4;
  o.max_connections = 4 * kIdle;
  HttpServer server(o);
  server.route("GET", "/ping", [](Exchange& e) { e.respond(200, "pong", "text/plain"); });
  const int port = server.start("127.0.0.1", 0);
  ASSERT_EQ(roundtrip(port, http_request("GET", "/ping")).body, "pong");
  const size_t threads_before = thread_count();
  std::vector<std::unique_ptr<testing::ClientSocket>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<testing::ClientSocket>(port));
    if (i % 5 == 0) idle.back()->send("GET /ping HTTP/1.1\r\nHost: localhost\r\nX-Half: ");
  }
  const auto accepted_by = std::chrono::steady_clock::now() + 10s;
  while (server.open_connections() < kIdle && std::chrono::steady_clock::now() < accepted_by) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(server.open_connections(), kIdle);
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(roundtrip(port, http_request("GET", "/ping")).body, "pong");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double p50 = ms[ms.size() / 2], p99 = ms[ms.size() * 99 / 100], max = ms.back();
  std::printf("/ping with %d idle connections: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", kIdle, p50, p99, max);
  RecordProperty("p50_ms", fmt::format("{:.3f}", p50));
  RecordProperty("p99_ms", fmt::format("{:.3f}", p99));
  // The issue asks for 100 ms each; the bound on the slowest allows for a
  // loaded CI machine (measured: well under 1 ms, docs/PERFORMANCE.md).
  EXPECT_LT(p99, 100.0);
  EXPECT_LT(max, 500.0);
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_GE(server.open_connections(), kIdle) << "the idle connections are still open";
}

TEST(HttpServer, ListenFailureNamesHostAndPort) {
  HttpServer a(HttpServerOptions{});
  const int port = a.start("127.0.0.1", 0);
  HttpServer b(HttpServerOptions{});
  try {
    b.start("127.0.0.1", port);
    FAIL() << "second listen on the same port succeeded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos);
  }
}

}  // namespace http_server_test
}  // namespace cohort::server
