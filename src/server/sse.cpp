#include "server/sse.h"

#include "server/openai_response.h"

namespace cohort::server {

std::string sse_data(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  out.append("data: ").append(payload).append("\n\n");
  return out;
}

std::string sse_json(const Json& value) { return sse_data(dump(value)); }

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string sse_comment(std::string_view text) {
  std::string out(": ");
  out.append(text).append("\n\n");
  return out;
}

}  // namespace cohort::server
