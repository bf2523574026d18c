// A minimal blocking HTTP/1.1 client over POSIX sockets, enough for
// `cohort bench-serve`: one request per connection ("Connection: close"),
// a body sent whole, and the response body handed to the caller piece by
// piece as it arrives (Content-Length, chunked, or until the peer closes),
// so that a streamed response can be timed chunk by chunk.
//
// Only plain http:// is spoken (no TLS, no proxies, no redirects).
// Failures to connect, send or read, and malformed responses, throw
// cohort::Error naming the host, port and what went wrong. The parsers
// (parse_http_url, parse_response_head, ChunkedDecoder) are pure and take
// untrusted bytes: they never assert.
//
// Thread safety: http_request may run on many threads at once (each call
// has its own socket); a ChunkedDecoder belongs to one response.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cohort::tools {

// "http://host:port/prefix" split up. The prefix ("" or "/v1"...) is put in
// front of every request path.
struct HttpUrl {
  std::string host;         // name or IPv4/IPv6 literal (without brackets)
  int port = 80;
  std::string base_path;    // "" or "/..." without a trailing '/'

  std::string to_string() const;  // "http://host:port/prefix"
};

// Throws cohort::Error for anything but http://host[:port][/prefix].
HttpUrl parse_http_url(std::string_view url);

struct HttpResponseHead {
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased

  // The first header with this lower-case name, or nullptr.
  const std::string* header(std::string_view name) const;
};

// The status line and header lines of a response; `head` ends before the
// blank line. nullopt (and `error` set) if malformed.
std::optional<HttpResponseHead> parse_response_head(std::string_view head, std::string& error);

// Incremental decoder of a chunked body (RFC 9112 section 7.1): chunk-size
// lines (extensions ignored), data, and the trailer after the last chunk.
class ChunkedDecoder {
 public:
  // Appends the payload found in `in` to `out`. false on malformed input
  // (then error() says why and the decoder stays failed).
  bool feed(std::string_view in, std::string& out);
  bool done() const { return state_ == State::done; }
  const std::string& error() const { return error_; }

 private:
  enum class State { size, data, data_end, trailer, done, failed };
  bool fail(std::string why);

  State state_ = State::size;
  std::string line_;      // a size or trailer line being collected
  size_t remaining_ = 0;  // bytes of the current chunk still to come
  std::string error_;
};

struct HttpRequestOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds read_timeout{600'000};  // longest silence while reading
  std::string content_type = "application/json";
  std::string accept = "*/*";
};

// Sends `method path` (path appended to url.base_path) with `body`, and reads
// the response: `on_head` once the head is in, then `on_body` for each piece
// of the decoded body, as it arrives. Returns the status. Throws
// cohort::Error on connect, I/O, timeout or protocol failures.
int http_request(const HttpUrl& url, const std::string& method, const std::string& path,
                 const std::string& body, const std::function<void(const HttpResponseHead&)>& on_head,
                 const std::function<void(std::string_view)>& on_body,
                 const HttpRequestOptions& options = {});

struct HttpResult {
  int status = 0;
  std::string body;
};

// http_request with the whole body collected.
HttpResult http_fetch(const HttpUrl& url, const std::string& method, const std::string& path,
                      const std::string& body = "", const HttpRequestOptions& options = {});

}  // namespace cohort::tools
