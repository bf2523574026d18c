// One accepted TCP connection: buffered reads against a deadline, whole
// writes, and a check whether the client has gone away.
//
// Every blocking call waits in slices of kPollSlice and gives up early once
// `stop` is set, so a server can stop while connections are idle or slow.
// Writes use MSG_NOSIGNAL: a closed peer is a failed write, never SIGPIPE.
//
// Ownership: owns the socket; closes it on destruction. Move-only.
// Thread safety: none; one worker thread uses a connection at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace cohort::server {

class Connection {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kPollSlice{50};
  static constexpr size_t kMinGrowth = size_t{64} << 10;  // read_exact's first step

  enum class ReadStatus {
    ok,
    closed,     // the peer closed before the data was complete
    timeout,    // the deadline passed
    too_large,  // more than the allowed bytes before the delimiter
    stopped,    // `stop` was set
    error,      // a socket error
  };

  Connection(int fd, const std::atomic<bool>& stop);
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&&) = delete;
  Connection(const Connection&) = delete;
  ~Connection();

  // Waits until some bytes can be read (or are buffered). ok, closed,
  // timeout, stopped or error.
  ReadStatus wait_readable(Clock::time_point deadline);
  // Reads up to and excluding the blank line that ends a request head
  // ("\r\n\r\n" or "\n\n"), which is consumed. too_large when `max` bytes
  // arrive without it.
  ReadStatus read_head(std::string& head, size_t max, Clock::time_point deadline);
  // Reads one line (CR LF or LF, excluded) of at most `max` bytes.
  ReadStatus read_line(std::string& line, size_t max, Clock::time_point deadline);
  // Appends exactly `n` bytes to `out`.
  ReadStatus read_exact(size_t n, std::string& out, Clock::time_point deadline);

  // Sends all of `data`, waiting at most `timeout` for the socket to take
  // each part. False if the peer is gone, the timeout passed, or `stop`.
  bool write_all(std::string_view data, std::chrono::milliseconds timeout);

  // True when the client has closed its side (or reset the connection);
  // false while it is connected, even with unread bytes pending. Does not block.
  bool peer_closed();

 private:
  // Reads what is available into buffer_ (waiting up to the deadline).
  ReadStatus fill(Clock::time_point deadline);

  int fd_;
  const std::atomic<bool>& stop_;
  std::string buffer_;   // bytes received and not yet consumed
};

}  // namespace cohort::server
