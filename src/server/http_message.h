// HTTP/1.1 messages as the server sees them: a request (head parsed from
// bytes, body read by the connection) and the text of a response head.
//
// The parser is given untrusted bytes: it never asserts, bounds nothing
// itself (the connection limits how many bytes reach it) and reports every
// fault as a status (400, 501, 505) with a reason. Bare LF line ends are
// accepted as CRLF, as most servers do; obsolete header folding is refused.
//
// Thread safety: pure functions and plain data.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cohort::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;       // as sent ("GET", "POST"); methods are case-sensitive
  std::string path;         // the target up to '?', not percent-decoded
  std::string query;        // after '?', or ""
  int version_minor = 1;    // HTTP/1.<version_minor>
  HttpHeaders headers;      // names lower-cased, values without surrounding blanks
  std::string body;

  // The first header with this lower-case name, or nullptr.
  const std::string* header(std::string_view name) const;
  // Whether the connection stays open after the response: HTTP/1.1 unless
  // "Connection: close", HTTP/1.0 only with "Connection: keep-alive".
  bool keep_alive() const;
};

struct HeadParseResult {
  std::optional<HttpRequest> request;  // set on success (body empty)
  int status = 0;                      // on failure: 400 or 505
  std::string error;                   // on failure: why
};

// Parses a request line and header lines; `head` ends before the empty line.
HeadParseResult parse_request_head(std::string_view head);

// How a request's body is delimited.
struct BodyFraming {
  enum class Kind { none, length, chunked };
  Kind kind = Kind::none;
  size_t length = 0;        // for Kind::length
  int status = 0;           // non-zero: the headers are unusable (400 or 501)
  std::string error;
};

// From Content-Length / Transfer-Encoding (RFC 9112 section 6.3: both, or
// several differing lengths, are refused).
BodyFraming body_framing(const HttpRequest& request);

// The size on a chunk-size line of a chunked body ("1a;ext=1" -> 26), or
// nullopt if the line is malformed or the size exceeds `max`.
std::optional<size_t> parse_chunk_size(std::string_view line, size_t max);

// "OK", "Not Found", ...; "Unknown" for codes the server does not send.
const char* status_reason(int status);

// "HTTP/1.1 <status> <reason>\r\n" + "Name: value\r\n"... + "\r\n".
std::string format_response_head(int status, const HttpHeaders& headers);

}  // namespace cohort::server
