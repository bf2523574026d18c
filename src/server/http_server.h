// A small HTTP/1.1 server: routes by exact path and method, an I/O thread
// that reads requests, a pool of worker threads that answer them, a body
// size limit, plain and chunked (streamed) responses, TLS, and a graceful
// stop.
//
// Why not cpp-httplib: the Debian package (libcpp-httplib-dev 0.11.4) ships
// only declarations in httplib.h, its implementation lives in
// libcpp-httplib.so, which the GPU machine does not have; and that version
// cannot tell a handler that its client closed the connection, which is how
// a waiting request gets cancelled here (Exchange::client_gone). Why an
// epoll loop of our own for reading and not Boost.Asio: http_io_loop.h.
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
//   - OPTIONS on any path answers the CORS preflight (200, no credentials
//     needed), and every response carries the CORS headers of options.cors
//     (cors_policy.h) and options.common_headers;
//   - with API keys set, 401 (WWW-Authenticate: Bearer) for a request
//     without one of them, outside the public paths;
//   - a handler that throws gets a 500 if nothing was sent yet, else the
//     connection is closed; the server never lets an exception escape;
//   - beyond max_connections a connection gets 503 (Retry-After: 1) and is
//     closed; one that sends nothing is closed after first_byte_timeout;
//     when the process runs out of descriptors, accepting pauses for a
//     poll slice instead of spinning;
//   - with ssl_cert_file and ssl_key_file, every connection is TLS
//     (OpenSSL); a plain HTTP request to that port gets a plain-text 400
//     and a close.
//
// Threads: start() spawns the I/O thread (http_io_loop.h), which accepts
// connections and holds each while its request arrives, idle keep-alive
// connections included, and n_threads workers. A whole request goes to a
// worker, which runs its handler and writes the answer (blocking writes,
// write_timeout per stall); then a keep-alive connection goes back to the
// I/O thread. Handlers may block (a completion waits on its worker until
// its last token), so when a request finds no idle worker another is
// started, up to max_threads (then requests wait in the queue): a busy
// server does not make /health or /metrics wait behind them. Idle or slow
// clients hold no worker.
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
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/cors_policy.h"
#include "server/http_connection.h"
#include "server/http_exchange.h"
#include "server/http_io_loop.h"
#include "server/http_message.h"
#include "server/tls_context.h"

namespace cohort::server {

struct HttpServerOptions {
  size_t max_body_bytes = size_t{8} << 20;   // --max-body
  size_t max_head_bytes = 16384;             // request line + headers
  int n_threads = 4;                          // --threads-http: workers started at once
  int max_threads = 256;                      // --threads-http-max: started while requests wait
  std::chrono::milliseconds first_byte_timeout{10000};  // a new connection's first request to begin
  std::chrono::milliseconds read_timeout{30000};   // one request, from its first byte
  std::chrono::milliseconds idle_timeout{5000};    // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30000};  // the longest a client may take no bytes of a reply
  // --api-key: when any is set, a request needs "Authorization: Bearer KEY"
  // with one of them, or without Authorization "X-Api-Key: KEY" (as
  // llama-server reads Anthropic's header), 401 otherwise; except on
  // public_paths and for CORS preflights.
  std::vector<std::string> api_keys;
  std::vector<std::string> public_paths;
  CorsPolicy cors;              // --cors-origins and the rest (cors_policy.h)
  HttpHeaders common_headers;   // on every response (Process-Start-Time-Unix)
  // --max-connections: connections open at once (queued or served); one
  // more is answered 503 with Retry-After and closed.
  int max_connections = 1024;
  // --ssl-cert-file, --ssl-key-file: PEM files; both set: TLS on every
  // connection, both empty: plain HTTP.
  std::string ssl_cert_file;
  std::string ssl_key_file;
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

  // Loads the TLS certificate and key if set, binds host:port (port 0: any
  // free port; `host` may be a comma list of addresses, as llama-server's
  // --host, each listened on with the same port), listens and starts the
  // threads. Returns the bound port. Throws cohort::Error naming the
  // address and port, or the TLS file at fault.
  int start(const std::string& host, int port);
  // Stops accepting, ends connections, joins the threads. Idempotent.
  void stop();
  // Blocks until stop() has finished.
  void wait();

  const HttpServerOptions& options() const { return options_; }
  // Connections open now: reading a request, idle, or being answered.
  int open_connections() const { return loop_ ? loop_->open_connections() : 0; }

 private:
  // A whole request and its connection, waiting for a worker.
  struct Job {
    std::unique_ptr<Connection> conn;
    HttpRequest request;
  };

  // On the I/O thread: queues a request, starting a worker if none is idle.
  void enqueue(std::unique_ptr<Connection> conn, HttpRequest request);
  void worker_loop();
  void serve(Job& job);
  void dispatch(Exchange& exchange);
  // Whether the request may reach its handler under options_.api_keys.
  bool authorized(const HttpRequest& request) const;
  void respond_error(Exchange& exchange, int status, const std::string& message);
  // The bytes of an error answer that closes the connection (the I/O loop's
  // answers to unreadable requests, and the 503 beyond max_connections).
  std::string error_response(int status, const std::string& message) const;

  const HttpServerOptions options_;
  const ErrorBodyFn error_body_;
  std::map<std::string, std::map<std::string, Handler>> routes_;  // path -> method -> handler

  std::atomic<bool> stopping_{false};
  std::unique_ptr<TlsContext> tls_;
  std::unique_ptr<IoLoop> loop_;
  std::vector<std::thread> workers_;  // grown by the I/O thread only; joined after it

  std::mutex queue_mutex_;
  std::condition_variable queue_ready_;
  std::deque<Job> queue_;                 // GUARDED_BY(queue_mutex_)
  size_t idle_ = 0;                       // workers waiting; GUARDED_BY(queue_mutex_)

  std::mutex lifecycle_mutex_;
  std::condition_variable stopped_cv_;
  bool started_ = false;                  // GUARDED_BY(lifecycle_mutex_)
  bool stopped_ = false;                  // GUARDED_BY(lifecycle_mutex_)
};

}  // namespace cohort::server
