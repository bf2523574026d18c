#include "server/http_exchange.h"

#include <cstdio>

namespace cohort::server {

Exchange::Exchange(const HttpRequest& request, Connection& conn, std::chrono::milliseconds write_timeout,
                   const std::atomic<bool>& stopping, const CorsPolicy& cors, const HttpHeaders& common_headers)
    : request_(request),
      conn_(conn),
      write_timeout_(write_timeout),
      stopping_(stopping),
      cors_(cors),
      common_headers_(common_headers) {}

void Exchange::add_header(std::string name, std::string value) {
  extra_headers_.emplace_back(std::move(name), std::move(value));
}

HttpHeaders Exchange::response_headers(std::string_view content_type) const {
  HttpHeaders h;
  if (!content_type.empty()) h.emplace_back("Content-Type", std::string(content_type));
  h.emplace_back("Server", "cohort");
  cors_.add_response_headers(request_.header("origin"), h);
  h.insert(h.end(), common_headers_.begin(), common_headers_.end());
  for (const auto& kv : extra_headers_) h.push_back(kv);
  return h;
}

void Exchange::respond(int status, std::string_view body, std::string_view content_type) {
  if (state_ != State::none) return;
  HttpHeaders h = response_headers(content_type);
  h.emplace_back("Content-Length", std::to_string(body.size()));
  h.emplace_back("Connection", request_.keep_alive() ? "keep-alive" : "close");
  std::string out = format_response_head(status, h);
  if (request_.method != "HEAD") out.append(body);
  state_ = conn_.write_all(out, write_timeout_) ? State::responded : State::broken;
}

bool Exchange::begin_stream(int status, std::string_view content_type) {
  if (state_ != State::none) return false;
  chunked_ = request_.version_minor >= 1;
  HttpHeaders h = response_headers(content_type);
  h.emplace_back("Cache-Control", "no-cache");
  if (chunked_) h.emplace_back("Transfer-Encoding", "chunked");
  h.emplace_back("Connection", chunked_ && request_.keep_alive() ? "keep-alive" : "close");
  const bool ok = conn_.write_all(format_response_head(status, h), write_timeout_);
  state_ = ok ? State::streaming : State::broken;
  return ok;
}

bool Exchange::write(std::string_view data) {
  if (state_ != State::streaming) return false;
  if (data.empty()) return true;  // an empty chunk would end the stream
  bool ok = false;
  if (chunked_) {
    char size[32];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out(size, static_cast<size_t>(n));
    out.append(data);
    out.append("\r\n");
    ok = conn_.write_all(out, write_timeout_);
  } else {
    ok = conn_.write_all(data, write_timeout_);
  }
  if (!ok) state_ = State::broken;
  return ok;
}

void Exchange::end_stream() {
  if (state_ != State::streaming) return;
  const bool ok = !chunked_ || conn_.write_all("0\r\n\r\n", write_timeout_);
  state_ = ok ? State::finished : State::broken;
}

bool Exchange::client_gone() {
  if (state_ == State::broken || stopping_.load(std::memory_order_relaxed)) return true;
  if (conn_.peer_closed()) {
    state_ = State::broken;
    return true;
  }
  return false;
}

bool Exchange::keep_alive() const {
  if (stopping_.load(std::memory_order_relaxed) || !request_.keep_alive()) return false;
  if (state_ == State::responded) return true;
  return state_ == State::finished && chunked_;
}

}  // namespace cohort::server
