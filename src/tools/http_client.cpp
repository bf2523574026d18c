#include "tools/http_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "common/error.h"
#include "common/http_text.h"

namespace cohort::tools {
namespace {

constexpr size_t kMaxHeadBytes = 64 * 1024;  // a response head larger than this is refused
constexpr size_t kMaxChunkLine = 1024;       // a chunk-size or trailer line
constexpr size_t kReadBuffer = 64 * 1024;

using http_text::lower;
using http_text::next_line;
using http_text::trim;

template <typename Int>
bool parse_int(std::string_view s, Int& out, int base = 10) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// An open TCP connection; closed on destruction.
class Socket {
 public:
  Socket(const HttpUrl& url, std::chrono::milliseconds connect_timeout);
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  void send_all(std::string_view data);
  // Bytes read into `buf` (0 at end of stream), waiting at most `timeout`.
  size_t receive(char* buf, size_t size, std::chrono::milliseconds timeout);

 private:
  [[noreturn]] void io_fail(const char* what, int err) const {
    fail("{} {}: {}", what, where_, std::strerror(err));
  }
  int fd_ = -1;
  std::string where_;  // "host:port" for messages
};

// A non-blocking connect to one address, waited for with poll; the fd or -1
// with errno set.
int connect_one(const addrinfo& ai, std::chrono::milliseconds timeout) {
  const int fd = ::socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) return -1;
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int err = 0;
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
      socklen_t len = sizeof err;
      if (n == 0) err = ETIMEDOUT;
      else if (n < 0) err = errno;
      else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
  }
  if (err != 0) {
    ::close(fd);
    errno = err;
    return -1;
  }
  ::fcntl(fd, F_SETFL, flags);  // blocking again; reads wait in poll with a timeout
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

Socket::Socket(const HttpUrl& url, std::chrono::milliseconds connect_timeout)
    : where_(fmt::format("{}:{}", url.host, url.port)) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    fail("cannot resolve host '{}': {}", url.host, ::gai_strerror(rc));
  }
  int err = 0;
  for (addrinfo* ai = found; ai && fd_ < 0; ai = ai->ai_next) {
    fd_ = connect_one(*ai, connect_timeout);
    if (fd_ < 0) err = errno;
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) fail("cannot connect to {}: {}", where_, std::strerror(err));
}

void Socket::send_all(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_fail("sending to", errno);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

size_t Socket::receive(char* buf, size_t size, std::chrono::milliseconds timeout) {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_fail("waiting for", errno);
    if (n == 0) fail("no answer from {} for {} ms", where_, timeout.count());
    const ssize_t got = ::recv(fd_, buf, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) io_fail("reading from", errno);
    return static_cast<size_t>(got);
  }
}

// How the body of a response is delimited.
enum class Framing { none, length, chunked, until_close };

Framing framing_of(const HttpResponseHead& head, const std::string& method, size_t& length) {
  if (method == "HEAD" || head.status / 100 == 1 || head.status == 204 || head.status == 304) {
    return Framing::none;
  }
  if (const std::string* te = head.header("transfer-encoding")) {
    if (lower(*te).find("chunked") != std::string::npos) return Framing::chunked;
    return Framing::until_close;
  }
  if (const std::string* cl = head.header("content-length")) {
    if (!parse_int(trim(*cl), length)) fail("malformed Content-Length '{}' in the response", *cl);
    return Framing::length;
  }
  return Framing::until_close;
}

std::string format_request(const HttpUrl& url, const std::string& method, const std::string& path,
                           const std::string& body, const HttpRequestOptions& o) {
  const bool v6 = url.host.find(':') != std::string::npos;
  std::string out = fmt::format("{} {}{} HTTP/1.1\r\nHost: {}{}{}:{}\r\n", method, url.base_path, path,
                                v6 ? "[" : "", url.host, v6 ? "]" : "", url.port);
  out += fmt::format("User-Agent: cohort-bench-serve\r\nAccept: {}\r\nConnection: close\r\n", o.accept);
  if (!body.empty() || method == "POST") {
    out += fmt::format("Content-Type: {}\r\nContent-Length: {}\r\n", o.content_type, body.size());
  }
  out += "\r\n";
  out += body;
  return out;
}

}  // namespace

std::string HttpUrl::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}{}", v6 ? "[" : "", host, v6 ? "]" : "", port, base_path);
}

HttpUrl parse_http_url(std::string_view url) {
  const std::string text(url);
  std::string_view rest = url;
  if (const size_t scheme = rest.find("://"); scheme != std::string_view::npos) {
    const std::string name = lower(rest.substr(0, scheme));
    if (name == "https") fail("URL '{}': https is not supported; use http://", text);
    if (name != "http") fail("URL '{}': scheme '{}' is not supported; use http://", text, name);
    rest.remove_prefix(scheme + 3);
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  HttpUrl u;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) fail("URL '{}': unterminated '[' in the host", text);
    u.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') fail("URL '{}': unexpected text after ']'", text);
    if (!after.empty()) port_text = after.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (u.host.empty()) fail("URL '{}': no host", text);
  if (u.host.find('@') != std::string::npos) fail("URL '{}': user information is not supported", text);
  if (!port_text.empty() || authority.find(':') != std::string_view::npos) {
    if (!parse_int(port_text, u.port) || u.port < 1 || u.port > 65535) {
      fail("URL '{}': '{}' is not a port number (1..65535)", text, port_text);
    }
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.find_first_of("?# ") != std::string_view::npos) {
    fail("URL '{}': a query or fragment is not allowed", text);
  }
  u.base_path = std::string(path);
  return u;
}

const std::string* HttpResponseHead::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::optional<HttpResponseHead> parse_response_head(std::string_view head, std::string& error) {
  std::string_view rest = head;
  std::string_view line;
  if (!next_line(rest, line) || line.substr(0, 7) != "HTTP/1." || line.size() < 12 || line[8] != ' ') {
    error = "malformed status line";
    return std::nullopt;
  }
  HttpResponseHead h;
  if (!parse_int(line.substr(9, 3), h.status) || h.status < 100 || h.status > 999 ||
      (line.size() > 12 && line[12] != ' ')) {
    error = "malformed status code";
    return std::nullopt;
  }
  h.reason = std::string(trim(line.size() > 12 ? line.substr(13) : std::string_view()));
  while (next_line(rest, line)) {
    const size_t colon = line.find(':');
    if (line.empty() || colon == std::string_view::npos || colon == 0 || line.front() == ' ' ||
        line.front() == '\t') {
      error = "malformed header line";
      return std::nullopt;
    }
    h.headers.emplace_back(lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
  }
  return h;
}

bool ChunkedDecoder::fail(std::string why) {
  state_ = State::failed;
  error_ = std::move(why);
  return false;
}

bool ChunkedDecoder::feed(std::string_view in, std::string& out) {
  while (!in.empty()) {
    switch (state_) {
      case State::failed: return false;
      case State::done: return true;  // bytes after the body are ignored
      case State::data: {
        const size_t n = std::min(remaining_, in.size());
        out.append(in.substr(0, n));
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::data_end;
        continue;
      }
      default: break;
    }
    // A line: chunk size, the CRLF after data, or a trailer line.
    const size_t nl = in.find('\n');
    line_.append(in.substr(0, nl));
    if (line_.size() > kMaxChunkLine) return fail("chunk line too long");
    if (nl == std::string_view::npos) return true;
    in.remove_prefix(nl + 1);
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (state_ == State::size) {
      size_t size = 0;
      if (!parse_int(trim(line.substr(0, line.find(';'))), size, 16)) {
        return fail(fmt::format("malformed chunk size '{}'", line));
      }
      remaining_ = size;
      state_ = size == 0 ? State::trailer : State::data;
    } else if (state_ == State::data_end) {
      if (!line.empty()) return fail("chunk data longer than its size");
      state_ = State::size;
    } else if (line.empty()) {  // State::trailer: the blank line ends the body
      state_ = State::done;
    }
    line_.clear();
  }
  return state_ != State::failed;
}

int http_request(const HttpUrl& url, const std::string& method, const std::string& path,
                 const std::string& body, const std::function<void(const HttpResponseHead&)>& on_head,
                 const std::function<void(std::string_view)>& on_body, const HttpRequestOptions& options) {
  Socket sock(url, options.connect_timeout);
  sock.send_all(format_request(url, method, path, body, options));
  std::string buf(kReadBuffer, '\0');
  std::string pending;  // bytes of the head, then of the body not yet handed out
  size_t head_end = std::string::npos, sep = 0;
  while (head_end == std::string::npos) {
    const size_t n = sock.receive(buf.data(), buf.size(), options.read_timeout);
    if (n == 0) fail("{} closed the connection before a complete response head", url.to_string());
    pending.append(buf.data(), n);
    head_end = pending.find("\r\n\r\n");
    sep = 4;
    if (const size_t lf = pending.find("\n\n"); lf < head_end) head_end = lf, sep = 2;
    if (head_end == std::string::npos && pending.size() > kMaxHeadBytes) fail("response head too large");
  }
  std::string error;
  const std::optional<HttpResponseHead> head = parse_response_head(pending.substr(0, head_end), error);
  if (!head) fail("bad response from {}: {}", url.to_string(), error);
  if (on_head) on_head(*head);
  pending.erase(0, head_end + sep);
  size_t length = 0;
  const Framing framing = framing_of(*head, method, length);
  if (framing == Framing::none) return head->status;
  ChunkedDecoder chunked;
  std::string decoded;
  // Hands `data` to the caller as the framing says; true when the body is complete.
  auto consume = [&](std::string_view data) {
    if (framing == Framing::chunked) {
      decoded.clear();
      if (!chunked.feed(data, decoded)) fail("bad chunked body from {}: {}", url.to_string(), chunked.error());
      if (!decoded.empty() && on_body) on_body(decoded);
      return chunked.done();
    }
    if (framing == Framing::length) data = data.substr(0, length);
    if (!data.empty() && on_body) on_body(data);
    if (framing == Framing::length) length -= data.size();
    return framing == Framing::length && length == 0;
  };
  if (consume(pending)) return head->status;
  for (;;) {
    const size_t n = sock.receive(buf.data(), buf.size(), options.read_timeout);
    if (n == 0) {
      if (framing == Framing::until_close) return head->status;
      fail("{} closed the connection in the middle of the response body", url.to_string());
    }
    if (consume(std::string_view(buf.data(), n))) return head->status;
  }
}

HttpResult http_fetch(const HttpUrl& url, const std::string& method, const std::string& path,
                      const std::string& body, const HttpRequestOptions& options) {
  HttpResult r;
  r.status = http_request(url, method, path, body, nullptr,
                          [&r](std::string_view piece) { r.body.append(piece); }, options);
  return r;
}

}  // namespace cohort::tools
