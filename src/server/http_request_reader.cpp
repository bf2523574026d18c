#include "server/http_request_reader.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "common/http_text.h"

namespace cohort::server {

using Io = Connection::Io;
using Kind = RequestReader::Outcome::Kind;

bool RequestReader::started(const Connection& conn) const {
  return state_ != State::head || !conn.buffer().empty();
}

int RequestReader::timeout_status() const { return state_ == State::head ? 0 : 408; }

std::string RequestReader::take_interim() { return std::exchange(interim_, {}); }

HttpRequest RequestReader::take_request() { return std::move(request_); }

void RequestReader::reset() {
  state_ = State::head;
  request_ = HttpRequest{};
  body_end_ = body_have_ = head_scanned_ = 0;
  interim_.clear();
}

RequestReader::Outcome RequestReader::fail(int status, std::string message) {
  state_ = State::done;
  Outcome out;
  out.kind = Kind::failed;
  out.status = status;
  out.message = std::move(message);
  return out;
}

RequestReader::Outcome RequestReader::advance(Connection& conn) {
  Outcome out;
  for (;;) {
    if (state_ == State::done) {
      out.kind = Kind::ready;
      return out;
    }
    if (state_ == State::length_body) {
      out = read_length_body(conn);
      if (out.kind != Kind::ready) return out;
      continue;
    }
    if (step(conn, out)) {
      if (out.kind == Kind::failed) return out;
      continue;
    }
    char chunk[16384];  // the buffered bytes are not enough: receive more
    const Connection::IoResult r = conn.read_some(chunk, sizeof chunk);
    if (r.status == Io::ok) {
      conn.buffer().append(chunk, r.n);
      continue;
    }
    if (r.status == Io::again_read || r.status == Io::again_write) {
      out.kind = Kind::more;
      out.io = r.status;
      return out;
    }
    // The client ended its side: quietly between requests or in a head
    // (nobody may read an answer), 400 within a body (it may half-close).
    if (r.status == Io::closed && state_ != State::head) return fail(400, "the request body ended early");
    return fail(0, "");
  }
}

bool RequestReader::step(Connection& conn, Outcome& out) {
  switch (state_) {
    case State::head: return step_head(conn, out);
    case State::chunk_data: {
      std::string& buf = conn.buffer();
      const size_t take = std::min(buf.size(), body_end_);
      if (take == 0 && body_end_ > 0) return false;
      request_.body.append(buf, 0, take);
      buf.erase(0, take);
      body_end_ -= take;
      if (body_end_ == 0) state_ = State::chunk_end;
      return true;
    }
    default: return step_line(conn, out);
  }
}

bool RequestReader::step_head(Connection& conn, Outcome& out) {
  // The blank line may be written CRLF CRLF, LF LF, or mixed (LF CRLF).
  static constexpr std::string_view kDelimiters[] = {"\r\n\r\n", "\n\n", "\n\r\n"};
  std::string& buf = conn.buffer();
  const size_t from = head_scanned_ > 3 ? head_scanned_ - 3 : 0;  // a delimiter may straddle the old end
  size_t best_end = std::string::npos, best_start = 0;
  for (std::string_view d : kDelimiters) {
    const size_t at = buf.find(d, from);
    if (at != std::string::npos && at + d.size() < best_end) {
      best_end = at + d.size();
      best_start = at;
    }
  }
  const std::string too_large = fmt::format("request head larger than {} bytes", limits_.max_head_bytes);
  if (best_end == std::string::npos) {
    head_scanned_ = buf.size();
    if (buf.size() > limits_.max_head_bytes) out = fail(431, too_large);
    return buf.size() > limits_.max_head_bytes;
  }
  if (best_start > limits_.max_head_bytes) {
    out = fail(431, too_large);
    return true;
  }
  HeadParseResult parsed = parse_request_head(std::string_view(buf).substr(0, best_start));
  buf.erase(0, best_end);
  head_scanned_ = 0;
  if (!parsed.request) {
    out = fail(parsed.status, std::move(parsed.error));
    return true;
  }
  request_ = std::move(*parsed.request);
  const BodyFraming framing = body_framing(request_);
  if (framing.status != 0) {
    out = fail(framing.status, framing.error);
    return true;
  }
  const size_t limit = limits_.max_body_bytes;
  if (framing.kind == BodyFraming::Kind::length && framing.length > limit) {
    out = fail(413, fmt::format("request body larger than the limit of {} bytes", limit));
    return true;
  }
  if (framing.kind == BodyFraming::Kind::none) {
    state_ = State::done;
    return true;
  }
  const std::string* expect = request_.header("expect");
  if (expect && http_text::lower(*expect) == "100-continue") interim_ = "HTTP/1.1 100 Continue\r\n\r\n";
  if (framing.kind == BodyFraming::Kind::chunked) {
    state_ = State::chunk_size;
    return true;
  }
  state_ = State::length_body;
  body_end_ = framing.length;
  body_have_ = std::min(buf.size(), body_end_);
  request_.body.assign(buf, 0, body_have_);
  buf.erase(0, body_have_);
  return true;
}

// chunk_size, chunk_end and trailers: one line each.
bool RequestReader::step_line(Connection& conn, Outcome& out) {
  std::string& buf = conn.buffer();
  const size_t max = state_ == State::chunk_size ? kMaxChunkLine
                     : state_ == State::chunk_end ? 0
                                                  : limits_.max_head_bytes;
  const size_t nl = buf.find('\n');
  const bool too_large = nl == std::string::npos ? buf.size() > max + 1 : nl > max + 1;
  if (too_large) {
    if (state_ == State::chunk_size) out = fail(400, "malformed chunk size line");
    if (state_ == State::chunk_end) out = fail(400, "chunk data not followed by CRLF");
    if (state_ == State::trailers) {
      out = fail(431, fmt::format("trailer fields larger than {} bytes", limits_.max_head_bytes));
    }
    return true;
  }
  if (nl == std::string::npos) return false;
  std::string_view line = std::string_view(buf).substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const bool empty = line.empty();
  std::optional<size_t> size;
  if (state_ == State::chunk_size) size = parse_chunk_size(line, limits_.max_body_bytes);
  buf.erase(0, nl + 1);
  switch (state_) {
    case State::chunk_size:
      if (!size) {
        out = fail(400, "malformed chunk size line");
      } else if (request_.body.size() + *size > limits_.max_body_bytes) {
        out = fail(413, fmt::format("request body larger than the limit of {} bytes", limits_.max_body_bytes));
      } else if (*size == 0) {
        state_ = State::trailers;
      } else {
        body_end_ = *size;
        state_ = State::chunk_data;
      }
      return true;
    case State::chunk_end:
      if (!empty) out = fail(400, "chunk data not followed by CRLF");
      state_ = empty ? State::chunk_size : State::done;
      return true;
    default:  // trailer fields, ignored, up to the blank line
      if (empty) state_ = State::done;
      return true;
  }
}

RequestReader::Outcome RequestReader::read_length_body(Connection& conn) {
  std::string& body = request_.body;
  while (body_have_ < body_end_) {
    if (body_have_ == body.size()) body.resize(std::min(body_end_, std::max(body_have_ + kMinGrowth, 2 * body_have_)));
    const Connection::IoResult r = conn.read_some(body.data() + body_have_, body.size() - body_have_);
    if (r.status == Io::ok) {
      body_have_ += r.n;
      continue;
    }
    if (r.status == Io::again_read || r.status == Io::again_write) {
      Outcome out;
      out.io = r.status;
      return out;
    }
    if (r.status == Io::closed) return fail(400, "the request body ended early");
    return fail(0, "");
  }
  body.resize(body_end_);
  state_ = State::done;
  Outcome out;
  out.kind = Kind::ready;
  return out;
}

}  // namespace cohort::server
