// The response side of one HTTP request, as a handler sees it: a plain
// response, or a streamed one (chunked transfer coding on HTTP/1.1; raw
// bytes and a close on HTTP/1.0), and whether the client is still there.
//
// Thread safety: none; used by the worker thread serving the request.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "server/cors_policy.h"
#include "server/http_connection.h"
#include "server/http_message.h"

namespace cohort::server {

// One request and the means to answer it, handed to a handler. Either
// respond() once, or begin_stream(), write() any number of chunks and
// end_stream() (the server ends an open stream when the handler returns).
class Exchange {
 public:
  enum class State { none, responded, streaming, finished, broken };

  // `request`, `conn`, `stopping`, `cors` and `common_headers` must
  // outlive the exchange. Every response carries the CORS headers of
  // `cors` for this request, then `common_headers`.
  Exchange(const HttpRequest& request, Connection& conn, std::chrono::milliseconds write_timeout,
           const std::atomic<bool>& stopping, const CorsPolicy& cors, const HttpHeaders& common_headers);

  const HttpRequest& request() const { return request_; }
  State state() const { return state_; }

  // Adds a header to the response (before respond / begin_stream).
  void add_header(std::string name, std::string value);
  // Sends a complete response. REQUIRES: state() == none.
  void respond(int status, std::string_view body, std::string_view content_type);
  // Sends the head of a streamed response. REQUIRES: state() == none.
  // False if the client is already gone.
  bool begin_stream(int status, std::string_view content_type);
  // Sends one chunk. False (and state broken) if the client is gone.
  bool write(std::string_view data);
  // Ends the stream. No-op unless streaming.
  void end_stream();
  // True once the client closed its side, a write failed, or the server is
  // stopping. Cheap and non-blocking; poll it while waiting.
  bool client_gone();
  // Whether the connection may serve another request after this one.
  bool keep_alive() const;

 private:
  HttpHeaders response_headers(std::string_view content_type) const;

  const HttpRequest& request_;
  Connection& conn_;
  const std::chrono::milliseconds write_timeout_;
  const std::atomic<bool>& stopping_;
  const CorsPolicy& cors_;
  const HttpHeaders& common_headers_;
  HttpHeaders extra_headers_;
  State state_ = State::none;
  bool chunked_ = false;  // HTTP/1.0 clients get an unframed stream and a close
};

}  // namespace cohort::server
