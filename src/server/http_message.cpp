#include "server/http_message.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/http_text.h"

namespace cohort::server {
namespace {

bool is_token_char(char c) {  // RFC 9110 tchar
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char);
}

using http_text::lower;
using http_text::next_line;
using http_text::trim;

HeadParseResult failure(int status, std::string error) {
  HeadParseResult r;
  r.status = status;
  r.error = std::move(error);
  return r;
}

bool has_control_chars(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

// "GET /path?q HTTP/1.1" into `req`; an error message or "".
std::string parse_request_line(std::string_view line, HttpRequest& req, int& status) {
  status = 400;
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return "malformed request line";
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return "malformed method";
  if (target.empty() || target.front() != '/' || has_control_chars(target)) {
    return "malformed request target";
  }
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1.") {
    status = version.substr(0, 5) == "HTTP/" ? 505 : 400;
    return "unsupported HTTP version";
  }
  if (version[7] != '0' && version[7] != '1') {
    status = 505;
    return "unsupported HTTP version";
  }
  req.method = std::string(method);
  const size_t q = target.find('?');
  req.path = std::string(target.substr(0, q));
  req.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
  req.version_minor = version[7] - '0';
  return "";
}

}  // namespace

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

bool HttpRequest::keep_alive() const {
  const std::string* c = header("connection");
  const std::string value = c ? lower(*c) : std::string();
  if (version_minor == 0) return value.find("keep-alive") != std::string::npos;
  return value.find("close") == std::string::npos;
}

HeadParseResult parse_request_head(std::string_view head) {
  std::string_view rest = head;
  std::string_view line;
  if (!next_line(rest, line) || line.empty()) return failure(400, "empty request line");
  HttpRequest req;
  int status = 400;
  if (std::string error = parse_request_line(line, req, status); !error.empty()) {
    return failure(status, std::move(error));
  }
  while (next_line(rest, line)) {
    if (line.empty()) return failure(400, "unexpected empty header line");
    if (line.front() == ' ' || line.front() == '\t') return failure(400, "folded header line");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return failure(400, "malformed header line");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (has_control_chars(value)) return failure(400, "control character in a header value");
    req.headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
  HeadParseResult r;
  r.request = std::move(req);
  return r;
}

BodyFraming body_framing(const HttpRequest& request) {
  BodyFraming f;
  const std::string* te = nullptr;
  std::optional<size_t> length;
  for (const auto& [k, v] : request.headers) {
    if (k == "transfer-encoding") {
      if (te != nullptr) {  // RFC 9112 §6.1: the lines form one list, whose last coding must be chunked
        f.status = 400;
        f.error = "several Transfer-Encoding lines";
        return f;
      }
      te = &v;
    } else if (k == "content-length") {
      size_t n = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (v.empty() || ec != std::errc() || end != v.data() + v.size() || (length && *length != n)) {
        f.status = 400;
        f.error = "malformed Content-Length";
        return f;
      }
      length = n;
    }
  }
  if (te) {
    if (length) {
      f.status = 400;
      f.error = "both Content-Length and Transfer-Encoding";
    } else if (lower(*te) != "chunked") {
      f.status = 501;
      f.error = "unsupported Transfer-Encoding '" + *te + "'";
    } else {
      f.kind = BodyFraming::Kind::chunked;
    }
    return f;
  }
  if (length) {
    f.kind = BodyFraming::Kind::length;
    f.length = *length;
  }
  return f;
}

std::optional<size_t> parse_chunk_size(std::string_view line, size_t max) {
  line = trim(line.substr(0, line.find(';')));
  if (line.empty() || line.size() > 16) return std::nullopt;
  size_t n = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n, 16);
  if (ec != std::errc() || end != line.data() + line.size() || n > max) return std::nullopt;
  return n;
}

const char* status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string format_response_head(int status, const HttpHeaders& headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  out += "\r\n";
  return out;
}

}  // namespace cohort::server
