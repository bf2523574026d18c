#include "server/cors_policy.h"

#include "common/http_text.h"

namespace cohort::server {
namespace {

// Whether `origin` is one of the comma-separated `list` (blanks around
// entries ignored; scheme and host compared without case, as browsers
// serialize them in lower case).
bool listed(std::string_view list, std::string_view origin) {
  const std::string want = http_text::lower(origin);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view entry = http_text::trim(list.substr(0, comma));
    if (http_text::lower(entry) == want) return true;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}

}  // namespace

bool is_localhost_origin(std::string_view origin) {
  const size_t scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return false;
  std::string_view rest = origin.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  std::string_view host;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return false;
    host = rest.substr(1, close - 1);
    rest.remove_prefix(close + 1);
  } else {
    const size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon);
  }
  if (!rest.empty() && rest.front() != ':') return false;  // junk after the host
  const std::string h = http_text::lower(host);
  return h == "localhost" || h == "127.0.0.1" || h == "::1";
}

std::optional<std::string> CorsPolicy::allow_origin(const std::string* origin) const {
  if (origins.empty()) return std::nullopt;
  const bool has_origin = origin != nullptr && !origin->empty();
  if (origins == "*") {
    if (credentials && has_origin) return *origin;
    return "*";
  }
  if (origins == "localhost") {
    if (has_origin && is_localhost_origin(*origin)) return *origin;
    return std::nullopt;
  }
  if (origins.find(',') == std::string::npos) return origins;
  if (has_origin && listed(origins, *origin)) return *origin;
  return std::nullopt;
}

bool CorsPolicy::depends_on_origin() const {
  if (origins == "*") return credentials;
  return origins == "localhost" || origins.find(',') != std::string::npos;
}

void CorsPolicy::add_response_headers(const std::string* origin, HttpHeaders& out) const {
  if (const std::optional<std::string> allow = allow_origin(origin)) {
    out.emplace_back("Access-Control-Allow-Origin", *allow);
  }
  if (depends_on_origin()) out.emplace_back("Vary", "Origin");
}

void CorsPolicy::add_preflight_headers(HttpHeaders& out) const {
  out.emplace_back("Access-Control-Allow-Credentials", credentials ? "true" : "false");
  out.emplace_back("Access-Control-Allow-Methods", methods);
  out.emplace_back("Access-Control-Allow-Headers", headers);
}

}  // namespace cohort::server
