#include "server/http_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace cohort::server {
namespace {

// Milliseconds to poll now: one slice, or less if the deadline is nearer.
int slice_ms(Connection::Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Connection::Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, Connection::kPollSlice.count()));
}

}  // namespace

Connection::Connection(int fd, const std::atomic<bool>& stop) : fd_(fd), stop_(stop) {}

Connection::Connection(Connection&& other) noexcept
    : fd_(other.fd_), stop_(other.stop_), buffer_(std::move(other.buffer_)) {
  other.fd_ = -1;
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

Connection::ReadStatus Connection::fill(Clock::time_point deadline) {
  for (;;) {
    if (stop_.load(std::memory_order_relaxed)) return ReadStatus::stopped;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, slice_ms(deadline));
    if (ready < 0 && errno != EINTR) return ReadStatus::error;
    if (ready > 0) {
      char chunk[16384];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n > 0) {
        buffer_.append(chunk, static_cast<size_t>(n));
        return ReadStatus::ok;
      }
      if (n == 0) return ReadStatus::closed;
      if (errno != EINTR && errno != EAGAIN) return ReadStatus::error;
    }
    if (Clock::now() >= deadline) return ReadStatus::timeout;
  }
}

Connection::ReadStatus Connection::wait_readable(Clock::time_point deadline) {
  if (!buffer_.empty()) return ReadStatus::ok;
  return fill(deadline);
}

Connection::ReadStatus Connection::read_head(std::string& head, size_t max,
                                             Clock::time_point deadline) {
  // The blank line may be written CRLF CRLF, LF LF, or mixed (LF CRLF).
  static constexpr std::string_view kDelimiters[] = {"\r\n\r\n", "\n\n", "\n\r\n"};
  for (;;) {
    size_t best_end = std::string::npos, best_start = 0;
    for (std::string_view d : kDelimiters) {
      const size_t at = buffer_.find(d);
      if (at != std::string::npos && at + d.size() < best_end) {
        best_end = at + d.size();
        best_start = at;
      }
    }
    if (best_end != std::string::npos) {
      if (best_start > max) return ReadStatus::too_large;
      head.assign(buffer_, 0, best_start);
      buffer_.erase(0, best_end);
      return ReadStatus::ok;
    }
    if (buffer_.size() > max) return ReadStatus::too_large;
    if (ReadStatus s = fill(deadline); s != ReadStatus::ok) return s;
  }
}

Connection::ReadStatus Connection::read_line(std::string& line, size_t max,
                                             Clock::time_point deadline) {
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      if (nl > max + 1) return ReadStatus::too_large;
      line.assign(buffer_, 0, nl);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      buffer_.erase(0, nl + 1);
      return ReadStatus::ok;
    }
    if (buffer_.size() > max + 1) return ReadStatus::too_large;
    if (ReadStatus s = fill(deadline); s != ReadStatus::ok) return s;
  }
}

// What is buffered, then the rest received straight into `out`, which grows
// at most twice as fast as bytes arrive (a large body is held once, and a
// client that announces much and sends little holds little).
Connection::ReadStatus Connection::read_exact(size_t n, std::string& out,
                                              Clock::time_point deadline) {
  const size_t buffered = std::min(n, buffer_.size());
  out.append(buffer_, 0, buffered);
  buffer_.erase(0, buffered);
  const size_t end = out.size() + (n - buffered);
  size_t have = out.size();
  while (have < end) {
    if (stop_.load(std::memory_order_relaxed)) return ReadStatus::stopped;
    if (have == out.size()) out.resize(std::min(end, std::max(have + kMinGrowth, 2 * have)));
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, slice_ms(deadline));
    if (ready < 0 && errno != EINTR) return ReadStatus::error;
    if (ready > 0) {
      const ssize_t got = ::recv(fd_, out.data() + have, out.size() - have, 0);
      if (got > 0) {
        have += static_cast<size_t>(got);
        continue;
      }
      if (got == 0) return ReadStatus::closed;
      if (errno != EINTR && errno != EAGAIN) return ReadStatus::error;
    }
    if (Clock::now() >= deadline) return ReadStatus::timeout;
  }
  return ReadStatus::ok;
}

bool Connection::write_all(std::string_view data, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  while (!data.empty()) {
    if (stop_.load(std::memory_order_relaxed)) return false;
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {  // the client took some: its time for the rest starts again
      data.remove_prefix(static_cast<size_t>(n));
      deadline = Clock::now() + timeout;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (Clock::now() >= deadline) return false;
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, slice_ms(deadline)) < 0 && errno != EINTR) return false;
    if (p.revents & (POLLERR | POLLHUP)) return false;
  }
  return true;
}

bool Connection::peer_closed() {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLERR | POLLHUP | POLLRDHUP)) return true;
  if (p.revents & POLLIN) {
    char byte = 0;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  return false;
}

}  // namespace cohort::server
