// Server-sent events framing, as OpenAI's streaming API uses it: each
// message is one "data: <json>" line and a blank line; the stream ends with
// "data: [DONE]". JSON text never holds a raw newline (dump() escapes it),
// so one data line always suffices.
// ref: https://html.spec.whatwg.org/multipage/server-sent-events.html
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "server/request_fields.h"

namespace cohort::server {

// "data: " + payload + "\n\n". REQUIRES: payload has no '\n' or '\r'.
std::string sse_data(std::string_view payload);
// "data: " + dump(value) + "\n\n".
std::string sse_json(const Json& value);
// "data: [DONE]\n\n".
std::string sse_done();
// A comment line (": text\n\n"), ignored by clients; keeps proxies from
// closing an idle stream. REQUIRES: text has no newline.
std::string sse_comment(std::string_view text);

}  // namespace cohort::server
