// Which CORS headers a response carries, as llama-server answers them
// (its --cors-origins, --cors-methods, --cors-headers, --cors-credentials;
// ref: llama.cpp tools/server/server-http.cpp, pre-routing handler).
//
// Access-Control-Allow-Origin, on every response, from `origins`:
//   "*"          with credentials: the request's Origin echoed (a browser
//                refuses "*" on a credentialed request); "*" when the
//                request has no Origin or credentials are off;
//   "localhost"  the request's Origin echoed when its host is localhost,
//                127.0.0.1 or [::1], else no header;
//   "a,b,..."    the request's Origin echoed when it is one of the list,
//                else no header (llama-server sends the list itself, which
//                browsers refuse); a single origin is sent as it is;
//   ""           no header.
// A preflight (OPTIONS, any path, no credentials needed) is answered 200
// with the Allow-Origin above and Allow-Credentials, Allow-Methods and
// Allow-Headers from the policy. Where the answer depends on the Origin,
// every response carries "Vary: Origin", so that a cache does not hand one
// origin's answer to another.
//
// Thread safety: plain data and const functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace cohort::server {

struct CorsPolicy {
  std::string origins = "*";
  std::string methods = "GET, POST, DELETE, OPTIONS";
  std::string headers = "*";
  bool credentials = true;

  // Access-Control-Allow-Origin for a request whose Origin header is
  // `origin` (nullptr: none); nullopt: no header.
  std::optional<std::string> allow_origin(const std::string* origin) const;
  // The CORS headers of any response to that request.
  void add_response_headers(const std::string* origin, HttpHeaders& out) const;
  // The headers a preflight's answer adds to those.
  void add_preflight_headers(HttpHeaders& out) const;
  // Whether Access-Control-Allow-Origin depends on the request's Origin.
  bool depends_on_origin() const;
};

// Whether an Origin ("scheme://host[:port]") names localhost, 127.0.0.1 or
// [::1]. "http://localhost.example.com" does not.
bool is_localhost_origin(std::string_view origin);

}  // namespace cohort::server
