#include "server/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "common/comma_list.h"
#include "common/error.h"

namespace cohort::server {
namespace {

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
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
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
  if (!options_.ssl_cert_file.empty() || !options_.ssl_key_file.empty()) {
    tls_ = TlsContext::load(options_.ssl_cert_file, options_.ssl_key_file);
    // OpenSSL writes with write(2), which raises SIGPIPE when the client has
    // gone; that must be a failed write (Connection::write_all), not the end
    // of the process. A handler the program installed is left alone.
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
  }
  // One listener an address of the comma list; with port 0, the others
  // take the port the first one got.
  std::vector<int> listen_fds;
  int actual = port;
  for (const std::string& address : split_commas(host)) {
    std::string error;
    const int fd = address.empty() ? -1 : open_listener(address, actual, error);
    if (fd < 0) {
      for (int open : listen_fds) ::close(open);
      if (address.empty()) fail("--host {}: an empty address in the list", host);
      fail("cannot listen on {}:{}: {}", address, actual, error);
    }
    listen_fds.push_back(fd);
    actual = bound_port(fd);
  }
  {
    std::lock_guard<std::mutex> lock(lifecycle_mutex_);
    started_ = true;
  }
  for (int i = 0; i < std::max(1, options_.n_threads); ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
  IoLoopOptions io;
  io.limits = {options_.max_head_bytes, options_.max_body_bytes};
  io.first_byte_timeout = options_.first_byte_timeout;
  io.read_timeout = options_.read_timeout;
  io.idle_timeout = options_.idle_timeout;
  io.write_timeout = options_.write_timeout;
  io.max_connections = options_.max_connections;
  loop_ = std::make_unique<IoLoop>(
      io, tls_ ? tls_->get() : nullptr, stopping_,
      [this](std::unique_ptr<Connection> conn, HttpRequest request) { enqueue(std::move(conn), std::move(request)); },
      [this](int status, const std::string& message) { return error_response(status, message); });
  loop_->start(std::move(listen_fds));
  return actual;
}

void HttpServer::stop() {
  {
    std::lock_guard<std::mutex> lock(lifecycle_mutex_);
    if (!started_ || stopped_ || stopping_.exchange(true)) return;
  }
  // A worker that saw stopping_ false under queue_mutex_ is waiting once the
  // lock is free again, so the notification cannot fall between its check
  // and its wait (a lost wakeup there left stop() joining it forever).
  { std::lock_guard<std::mutex> lock(queue_mutex_); }
  queue_ready_.notify_all();
  if (loop_) loop_->stop();  // no worker is started after this
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  for (Job& job : queue_) loop_->hand_back(std::move(job.conn), false);  // read, never served
  queue_.clear();
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

void HttpServer::enqueue(std::unique_ptr<Connection> conn, HttpRequest request) {
  bool grow = false;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.push_back(Job{std::move(conn), std::move(request)});
    grow = idle_ < queue_.size() && workers_.size() < static_cast<size_t>(options_.max_threads);
  }
  // Only the I/O thread adds workers while the server runs; stop() joins it first.
  if (grow) workers_.emplace_back([this] { worker_loop(); });
  queue_ready_.notify_one();
}

void HttpServer::worker_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      ++idle_;
      queue_ready_.wait(lock, [&] { return stopping_.load() || !queue_.empty(); });
      --idle_;
      if (stopping_.load()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    serve(job);
  }
}

void HttpServer::serve(Job& job) {
  bool keep_alive = false;
  {
    Exchange exchange(job.request, *job.conn, options_.write_timeout, stopping_, options_.cors,
                      options_.common_headers);
    dispatch(exchange);
    if (exchange.state() == Exchange::State::streaming) exchange.end_stream();
    if (exchange.state() == Exchange::State::none && !exchange.client_gone()) {
      respond_error(exchange, 500, "the handler sent no response");
    }
    keep_alive = exchange.keep_alive();
  }
  loop_->hand_back(std::move(job.conn), keep_alive);
}

void HttpServer::dispatch(Exchange& exchange) {
  const HttpRequest& request = exchange.request();
  if (request.method == "OPTIONS") {  // CORS preflight: browsers send it without credentials
    HttpHeaders h;
    options_.cors.add_preflight_headers(h);
    for (auto& [name, value] : h) exchange.add_header(std::move(name), std::move(value));
    exchange.respond(200, "", "");
    return;
  }
  const auto path = routes_.find(request.path);
  if (path == routes_.end()) {
    respond_error(exchange, 404, fmt::format("Invalid URL ({} {})", request.method, request.path));
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
  std::string_view given;
  if (auth != nullptr) {
    constexpr std::string_view kBearer = "Bearer ";
    if (auth->size() < kBearer.size() || auth->compare(0, kBearer.size(), kBearer) != 0) return false;
    given = std::string_view(*auth).substr(kBearer.size());
  } else if (const std::string* key = request.header("x-api-key")) {
    given = *key;  // Anthropic's header, which llama-server also reads
  } else {
    return false;
  }
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

std::string HttpServer::error_response(int status, const std::string& message) const {
  const ErrorBody e = error_body_ ? error_body_(status, message) : ErrorBody{message, "text/plain; charset=utf-8"};
  HttpHeaders h;
  h.emplace_back("Content-Type", e.content_type);
  h.emplace_back("Server", "cohort");
  options_.cors.add_response_headers(nullptr, h);  // the request is unread or unparsed
  h.insert(h.end(), options_.common_headers.begin(), options_.common_headers.end());
  if (status == 503) h.emplace_back("Retry-After", "1");
  h.emplace_back("Content-Length", std::to_string(e.body.size()));
  h.emplace_back("Connection", "close");
  return format_response_head(status, h) + e.body;
}

}  // namespace cohort::server
