#include "server/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "common/error.h"
#include "common/http_text.h"

namespace cohort::server {
namespace {

using Clock = Connection::Clock;

// A socket bound to host:port and listening, or -1 with `error` set.
int open_listener(const std::string& host, int port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    error = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 512) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

std::string join_methods(const std::map<std::string, Handler>& methods) {
  std::string out;
  for (const auto& [m, h] : methods) out += (out.empty() ? "" : ", ") + m;
  return out + (out.empty() ? "" : ", ") + "OPTIONS";
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, ErrorBodyFn error_body)
    : options_(options), error_body_(std::move(error_body)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(const std::string& method, const std::string& path, Handler handler) {
  routes_[path][method] = std::move(handler);
}

int HttpServer::start(const std::string& host, int port) {
  std::string error;
  listen_fd_ = open_listener(host, port, error);
  if (listen_fd_ < 0) fail("cannot listen on {}:{}: {}", host, port, error);
  const int actual = bound_port(listen_fd_);
  {
    std::lock_guard<std::mutex> lock(lifecycle_mutex_);
    started_ = true;
  }
  acceptor_ = std::thread([this] { accept_loop(); });
  for (int i = 0; i < std::max(1, options_.n_threads); ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
  return actual;
}

void HttpServer::stop() {
  {
    std::lock_guard<std::mutex> lock(lifecycle_mutex_);
    if (!started_ || stopped_ || stopping_.exchange(true)) return;
  }
  queue_ready_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  for (int fd : queue_) ::close(fd);  // accepted, never served
  open_ -= static_cast<int>(queue_.size());
  queue_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  {
    std::lock_guard<std::mutex> lock(lifecycle_mutex_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

void HttpServer::wait() {
  std::unique_lock<std::mutex> lock(lifecycle_mutex_);
  stopped_cv_.wait(lock, [&] { return stopped_ || !started_; });
}

void HttpServer::accept_loop() {
  while (!stopping_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(Connection::kPollSlice.count())) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors (or kernel memory), the pending connection stays
      // pending and poll() is readable at once: wait a slice, do not spin.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        std::this_thread::sleep_for(Connection::kPollSlice);
      }
      continue;
    }
    if (open_.load() >= options_.max_connections) {
      refuse(fd);
      continue;
    }
    ++open_;
    const int one = 1;  // SSE chunks are small and should leave at once
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bool grow = false;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      queue_.push_back(fd);
      grow = idle_ < queue_.size() && workers_.size() < static_cast<size_t>(options_.max_threads);
    }
    // Only this thread adds workers while the server runs; stop() joins it first.
    if (grow) workers_.emplace_back([this] { worker_loop(); });
    queue_ready_.notify_one();
  }
}

void HttpServer::worker_loop() {
  for (;;) {
    int fd = -1;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      ++idle_;
      queue_ready_.wait(lock, [&] { return stopping_.load() || !queue_.empty(); });
      --idle_;
      if (stopping_.load()) return;
      fd = queue_.front();
      queue_.pop_front();
    }
    serve_connection(fd);
  }
}

void HttpServer::serve_connection(int fd) {
  {
    Connection conn(fd, stopping_);
    for (bool first = true; serve_request(conn, first); first = false) {
    }
  }
  --open_;
}

// Best effort and without waiting: the 503 fits any socket buffer.
void HttpServer::refuse(int fd) {
  const ErrorBody e = error_body_ ? error_body_(503, "too many connections; retry later")
                                  : ErrorBody{"too many connections; retry later", "text/plain; charset=utf-8"};
  const std::string head = fmt::format("HTTP/1.1 503 Service Unavailable\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
                                       "Retry-After: 1\r\nConnection: close\r\n\r\n",
                                       e.content_type, e.body.size());
  const std::string out = head + e.body;
  (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

bool HttpServer::serve_request(Connection& conn, bool first) {
  const auto wait_for = first ? options_.first_byte_timeout : options_.idle_timeout;
  if (conn.wait_readable(Clock::now() + wait_for) != Connection::ReadStatus::ok) return false;
  const Clock::time_point deadline = Clock::now() + options_.read_timeout;
  std::string head;
  const Connection::ReadStatus rs = conn.read_head(head, options_.max_head_bytes, deadline);
  if (rs == Connection::ReadStatus::too_large) {
    send_error(conn, 431, "request head larger than " + std::to_string(options_.max_head_bytes) + " bytes");
  }
  if (rs != Connection::ReadStatus::ok) return false;
  HeadParseResult parsed = parse_request_head(head);
  if (!parsed.request) {
    send_error(conn, parsed.status, parsed.error);
    return false;
  }
  HttpRequest& request = *parsed.request;
  if (!read_body(conn, request, deadline)) return false;
  Exchange exchange(request, conn, options_.write_timeout, stopping_, options_.cors_origin);
  dispatch(exchange);
  if (exchange.state() == Exchange::State::streaming) exchange.end_stream();
  if (exchange.state() == Exchange::State::none && !exchange.client_gone()) {
    respond_error(exchange, 500, "the handler sent no response");
  }
  return exchange.keep_alive();
}

bool HttpServer::read_body(Connection& conn, HttpRequest& request, Clock::time_point deadline) {
  const BodyFraming framing = body_framing(request);
  if (framing.status != 0) {
    send_error(conn, framing.status, framing.error);
    return false;
  }
  const size_t limit = options_.max_body_bytes;
  const std::string too_large = fmt::format("request body larger than the limit of {} bytes", limit);
  if (framing.kind == BodyFraming::Kind::length && framing.length > limit) {
    send_error(conn, 413, too_large);
    return false;
  }
  if (framing.kind == BodyFraming::Kind::none) return true;
  const std::string* expect = request.header("expect");
  if (expect && http_text::lower(*expect) == "100-continue" &&
      !conn.write_all("HTTP/1.1 100 Continue\r\n\r\n", options_.write_timeout)) {
    return false;
  }
  if (framing.kind == BodyFraming::Kind::length) {
    return body_read(conn, conn.read_exact(framing.length, request.body, deadline));
  }
  std::string line;  // chunked: size line, data, CRLF ... "0", trailers, blank line
  for (;;) {
    const Connection::ReadStatus rs = conn.read_line(line, 1024, deadline);
    if (rs == Connection::ReadStatus::too_large) {
      send_error(conn, 400, "malformed chunk size line");
      return false;
    }
    if (!body_read(conn, rs)) return false;
    const std::optional<size_t> size = parse_chunk_size(line, limit);
    if (!size) {
      send_error(conn, 400, "malformed chunk size line");
      return false;
    }
    if (request.body.size() + *size > limit) {
      send_error(conn, 413, too_large);
      return false;
    }
    if (*size == 0) break;
    if (!body_read(conn, conn.read_exact(*size, request.body, deadline))) return false;
    const Connection::ReadStatus end = conn.read_line(line, 0, deadline);
    if (end == Connection::ReadStatus::too_large || (end == Connection::ReadStatus::ok && !line.empty())) {
      send_error(conn, 400, "chunk data not followed by CRLF");
      return false;
    }
    if (!body_read(conn, end)) return false;
  }
  do {  // trailer fields, ignored, up to the blank line
    const Connection::ReadStatus rs = conn.read_line(line, options_.max_head_bytes, deadline);
    if (rs == Connection::ReadStatus::too_large) {
      send_error(conn, 431, "trailer fields larger than " + std::to_string(options_.max_head_bytes) + " bytes");
      return false;
    }
    if (!body_read(conn, rs)) return false;
  } while (!line.empty());
  return true;
}

// A body read that did not complete is answered where someone may read the
// answer: 408 when the time ran out, 400 when the client ended its side
// before the body did; a stopping server or a broken socket closes.
bool HttpServer::body_read(Connection& conn, Connection::ReadStatus status) {
  if (status == Connection::ReadStatus::ok) return true;
  if (status == Connection::ReadStatus::timeout) send_error(conn, 408, "the request body did not arrive in time");
  if (status == Connection::ReadStatus::closed) send_error(conn, 400, "the request body ended early");
  return false;
}

void HttpServer::dispatch(Exchange& exchange) {
  const HttpRequest& request = exchange.request();
  const auto path = routes_.find(request.path);
  if (path == routes_.end()) {
    respond_error(exchange, 404, fmt::format("Invalid URL ({} {})", request.method, request.path));
    return;
  }
  if (request.method == "OPTIONS") {  // CORS preflight: browsers send it without credentials
    exchange.add_header("Access-Control-Allow-Methods", join_methods(path->second));
    exchange.add_header("Access-Control-Allow-Headers", "*");
    exchange.respond(204, "", "");
    return;
  }
  if (!authorized(request)) {
    exchange.add_header("WWW-Authenticate", "Bearer");
    respond_error(exchange, 401, "Invalid API Key");
    return;
  }
  const auto handler = path->second.find(request.method);
  if (handler == path->second.end()) {
    exchange.add_header("Allow", join_methods(path->second));
    respond_error(exchange, 405, fmt::format("Method {} is not allowed for {}; use {}", request.method,
                                             request.path, join_methods(path->second)));
    return;
  }
  try {
    handler->second(exchange);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {} {}: {}\n", request.method, request.path, e.what());
    respond_error(exchange, 500, e.what());
  } catch (...) {
    fmt::print(stderr, "error: {} {}: unknown exception\n", request.method, request.path);
    respond_error(exchange, 500, "internal error");
  }
}

// Compares every key with the presented one in time that depends only on
// their lengths, so that a client cannot learn a key byte by byte from how
// long a refusal takes.
bool HttpServer::authorized(const HttpRequest& request) const {
  if (options_.api_keys.empty()) return true;
  if (std::find(options_.public_paths.begin(), options_.public_paths.end(), request.path) !=
      options_.public_paths.end()) {
    return true;
  }
  const std::string* auth = request.header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth == nullptr || auth->size() < kBearer.size() || auth->compare(0, kBearer.size(), kBearer) != 0) {
    return false;
  }
  const std::string_view given = std::string_view(*auth).substr(kBearer.size());
  bool match = false;
  for (const std::string& key : options_.api_keys) {
    unsigned diff = key.size() == given.size() ? 0u : 1u;
    for (size_t i = 0; i < key.size(); ++i) {
      diff |= static_cast<unsigned char>(key[i]) ^ static_cast<unsigned char>(i < given.size() ? given[i] : 0);
    }
    match |= diff == 0;
  }
  return match;
}

void HttpServer::respond_error(Exchange& exchange, int status, const std::string& message) {
  if (exchange.state() != Exchange::State::none) return;
  if (!error_body_) {
    exchange.respond(status, message, "text/plain; charset=utf-8");
    return;
  }
  const ErrorBody e = error_body_(status, message);
  exchange.respond(status, e.body, e.content_type);
}

void HttpServer::send_error(Connection& conn, int status, const std::string& message) {
  HttpRequest request;  // stands in for the unreadable one; asks for a close
  request.headers.emplace_back("connection", "close");
  Exchange exchange(request, conn, options_.write_timeout, stopping_, options_.cors_origin);
  respond_error(exchange, status, message);
}

}  // namespace cohort::server
