// A small HTTP/1.1 server: routes by exact path and method, a fixed pool of
// worker threads (one connection each at a time), a body size limit, plain
// and chunked (streamed) responses, and a graceful stop.
//
// Why not cpp-httplib: the Debian package (libcpp-httplib-dev 0.11.4) ships
// only declarations in httplib.h, its implementation lives in
// libcpp-httplib.so, which the GPU machine does not have; and that version
// cannot tell a handler that its client closed the connection, which is how
// a waiting request gets cancelled here (Exchange::client_gone).
//
// Behaviour at the protocol level:
//   - keep-alive (HTTP/1.1 default), Content-Length or chunked request
//     bodies, "Expect: 100-continue";
//   - 400 malformed request, 404 unknown path, 405 known path with another
//     method (with Allow), 413 body over the limit, 431 head over the limit,
//     501 unknown transfer coding (400 for several Transfer-Encoding
//     lines), 505 HTTP version; a body that breaks off gets 400 (malformed
//     chunk framing, or the client ended its side) or 408 (it went quiet
//     past read_timeout) before the close; bodies of these come from the
//     ErrorBodyFn, so they can be in the API's error format;
//   - OPTIONS on a known path answers the CORS preflight (204), and every
//     response carries Access-Control-Allow-Origin (options.cors_origin);
//   - with API keys set, 401 (WWW-Authenticate: Bearer) for a request
//     without one of them, outside the public paths;
//   - a handler that throws gets a 500 if nothing was sent yet, else the
//     connection is closed; the server never lets an exception escape;
//   - beyond max_connections a connection gets 503 (Retry-After: 1) and is
//     closed; one that sends nothing is closed after first_byte_timeout;
//     when the process runs out of descriptors, accepting pauses for a
//     poll slice instead of spinning.
//
// Threads: start() spawns one accept thread and n_threads workers; when an
// accepted connection finds no idle worker, another is started, up to
// max_threads (then connections wait in the queue). Handlers run on workers
// and may block (a completion waits there until its last token), so a busy
// server must not make /health or /metrics wait behind them.
// stop() may be called from any thread except a handler; it wakes everything
// within Connection::kPollSlice, lets handlers see client_gone(), and joins.
// Requests in flight at stop() get no answer: their connections close.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/http_connection.h"
#include "server/http_exchange.h"
#include "server/http_message.h"

namespace cohort::server {

struct HttpServerOptions {
  size_t max_body_bytes = size_t{8} << 20;   // --max-body
  size_t max_head_bytes = 16384;             // request line + headers
  int n_threads = 4;                          // --threads-http: workers started at once
  int max_threads = 256;                      // --threads-http-max: started on demand
  std::chrono::milliseconds first_byte_timeout{10000};  // a new connection's first request to begin
  std::chrono::milliseconds read_timeout{30000};   // one request, from its first byte
  std::chrono::milliseconds idle_timeout{5000};    // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30000};  // the longest a client may take no bytes of a reply
  // --api-key: when any is set, a request needs "Authorization: Bearer KEY"
  // with one of them (401 otherwise), except on public_paths and for CORS
  // preflights.
  std::vector<std::string> api_keys;
  std::vector<std::string> public_paths;
  std::string cors_origin = "*";  // Access-Control-Allow-Origin of every response; empty: none
  // --max-connections: connections open at once (queued or served); one
  // more is answered 503 with Retry-After and closed.
  int max_connections = 1024;
};

// The body and content type of a response the server itself produces for
// `status` (404, 405, 413, ...) with a human `message`.
struct ErrorBody {
  std::string body;
  std::string content_type;
};
using ErrorBodyFn = std::function<ErrorBody(int status, const std::string& message)>;

using Handler = std::function<void(Exchange&)>;

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options, ErrorBodyFn error_body = {});
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // REQUIRES: before start().
  void route(const std::string& method, const std::string& path, Handler handler);

  // Binds host:port (port 0: any free port), listens and starts the threads.
  // Returns the bound port. Throws cohort::Error naming host and port.
  int start(const std::string& host, int port);
  // Stops accepting, ends connections, joins the threads. Idempotent.
  void stop();
  // Blocks until stop() has finished.
  void wait();

  const HttpServerOptions& options() const { return options_; }

 private:
  void accept_loop();
  void worker_loop();
  void serve_connection(int fd);
  // Answers 503 and closes a connection beyond max_connections.
  void refuse(int fd);
  // Serves one request; returns whether the connection stays open.
  bool serve_request(Connection& conn, bool first);
  bool read_body(Connection& conn, HttpRequest& request, Connection::Clock::time_point deadline);
  // True for `ok`; otherwise answers what can be answered and returns false.
  bool body_read(Connection& conn, Connection::ReadStatus status);
  void dispatch(Exchange& exchange);
  // Whether the request may reach its handler under options_.api_keys.
  bool authorized(const HttpRequest& request) const;
  // A complete error response on `conn` (and the connection is then closed).
  void send_error(Connection& conn, int status, const std::string& message);
  void respond_error(Exchange& exchange, int status, const std::string& message);

  const HttpServerOptions options_;
  const ErrorBodyFn error_body_;
  std::map<std::string, std::map<std::string, Handler>> routes_;  // path -> method -> handler

  std::atomic<bool> stopping_{false};
  int listen_fd_ = -1;
  std::thread acceptor_;
  std::vector<std::thread> workers_;

  std::mutex queue_mutex_;
  std::condition_variable queue_ready_;
  std::deque<int> queue_;                 // accepted sockets; GUARDED_BY(queue_mutex_)
  size_t idle_ = 0;                       // workers waiting; GUARDED_BY(queue_mutex_)
  std::atomic<int> open_{0};              // connections accepted and not yet closed

  std::mutex lifecycle_mutex_;
  std::condition_variable stopped_cv_;
  bool started_ = false;                  // GUARDED_BY(lifecycle_mutex_)
  bool stopped_ = false;                  // GUARDED_BY(lifecycle_mutex_)
};

}  // namespace cohort::server
