// Incremental parser of a text/event-stream body, as a client reads it:
// bytes in (in pieces of any size, as they come off the socket), the data of
// each complete event out.
//
// Per the SSE specification: lines end with LF, CR LF or CR; a line
// "data: x" or "data:x" adds x to the event's data (several data lines are
// joined with '\n'); lines starting with ':' are comments; other fields
// (event, id, retry) are read and ignored; a blank line dispatches the event
// if it has data. An event not ended by a blank line when the stream ends is
// dropped, as the specification says.
// ref: https://html.spec.whatwg.org/multipage/server-sent-events.html
//
// OpenAI's streams end with the event "[DONE]" (is_done_event).
// Thread safety: one parser per stream.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::tools {

class SseParser {
 public:
  // REQUIRES: max_line_bytes > 0. A longer line fails the stream.
  explicit SseParser(size_t max_line_bytes = size_t{16} << 20) : max_line_(max_line_bytes) {}

  // Appends the data of every event completed by `bytes` to `events`.
  // Throws cohort::Error if a line exceeds the limit.
  void feed(std::string_view bytes, std::vector<std::string>& events);

 private:
  void end_line(std::vector<std::string>& events);

  size_t max_line_;
  std::string line_;         // the current line, without its end
  std::string data_;         // data of the current event
  bool has_data_ = false;    // a data line was seen (data may still be "")
  bool after_cr_ = false;    // the last byte was CR: an LF right after it belongs to it
};

inline bool is_done_event(std::string_view data) { return data == "[DONE]"; }

}  // namespace cohort::tools
