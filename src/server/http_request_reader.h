// Reads one HTTP/1.1 request at a time from a Connection without ever
// waiting: the I/O loop calls advance() whenever the socket may have bytes,
// and it takes what is there, moves the request along (head, then a
// Content-Length or chunked body, then trailers) and says whether the
// request is complete, needs more bytes, or failed with a status to answer.
//
// The framing rules are those of http_message.h: head at most
// max_head_bytes (431), body at most max_body_bytes (413, before a byte of
// it is read when the length is announced), chunk-size lines of at most
// 1 KiB, chunk data followed by CRLF (400), trailers ignored. A body that
// breaks off is 400 (the client ended its side) and one that does not
// arrive in time 408 (timeout_status()). With "Expect: 100-continue" the
// reader asks for "100 Continue" to be sent (take_interim()).
//
// Memory: a Content-Length body is received straight into the request and
// grows at most twice as fast as its bytes arrive (at least 64 KiB at a
// time): a large body is held once, and a client that announces much and
// sends little holds little.
//
// Thread safety: none; used by whichever thread owns the connection.
#pragma once

#include <cstddef>
#include <string>

#include "server/http_connection.h"
#include "server/http_message.h"

namespace cohort::server {

class RequestReader {
 public:
  static constexpr size_t kMinGrowth = size_t{64} << 10;  // a length body's first step
  static constexpr size_t kMaxChunkLine = 1024;

  struct Limits {
    size_t max_head_bytes = 16384;
    size_t max_body_bytes = size_t{8} << 20;
  };
  struct Outcome {
    enum class Kind {
      more,    // wait until the connection is readable (or writable: `io`) and call again
      ready,   // a whole request: take_request()
      failed,  // answer `status` (0: close without an answer) and close
    };
    Kind kind = Kind::more;
    Connection::Io io = Connection::Io::again_read;  // for more
    int status = 0;
    std::string message;
  };

  explicit RequestReader(Limits limits) : limits_(limits) {}

  // Reads and parses what the connection has, without waiting. After
  // `ready` or `failed`, call reset() before the next request.
  Outcome advance(Connection& conn);
  // Whether a request has begun (any byte of it received): its read
  // timeout runs from then on, the idle timeout before.
  bool started(const Connection& conn) const;
  // What to answer when the read timeout passes: 0 (close quietly) while
  // waiting for the head, 408 once the body is being read.
  int timeout_status() const;
  // The interim response to send now ("HTTP/1.1 100 Continue"), once.
  std::string take_interim();
  HttpRequest take_request();
  void reset();

 private:
  enum class State { head, length_body, chunk_size, chunk_data, chunk_end, trailers, done };

  // One step on the bytes in the connection's buffer: true if it made
  // progress, false if it needs more bytes; `out` is set when done/failed.
  bool step(Connection& conn, Outcome& out);
  bool step_head(Connection& conn, Outcome& out);
  bool step_line(Connection& conn, Outcome& out);
  // Reads the rest of a Content-Length body straight into request_.body.
  Outcome read_length_body(Connection& conn);
  Outcome fail(int status, std::string message);

  const Limits limits_;
  State state_ = State::head;
  HttpRequest request_;
  size_t body_end_ = 0;     // length_body: final size of request_.body; chunk_data: bytes left
  size_t body_have_ = 0;    // length_body: bytes of request_.body received
  size_t head_scanned_ = 0; // head: buffered bytes already searched for the blank line
  std::string interim_;
};

}  // namespace cohort::server
