#include "server/http_connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

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

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

}  // namespace

Connection::Connection(int fd, SSL_CTX* tls, const std::atomic<bool>& stop) : fd_(fd), stop_(stop) {
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  if (tls != nullptr) {
    ssl_ = SSL_new(tls);
    if (ssl_ != nullptr && SSL_set_fd(ssl_, fd_) != 1) {
      SSL_free(ssl_);
      ssl_ = nullptr;
    }
    if (ssl_ == nullptr) {  // out of memory: a connection that fails every call
      ::close(fd_);
      fd_ = -1;
      return;
    }
    SSL_set_accept_state(ssl_);
  }
}

Connection::~Connection() {
  if (ssl_ != nullptr) {
    if (SSL_is_init_finished(ssl_)) {
      ERR_clear_error();
      (void)SSL_shutdown(ssl_);  // one try: the socket is non-blocking
    }
    SSL_free(ssl_);
  }
  if (fd_ >= 0) ::close(fd_);
}

// OpenSSL's result of SSL_read/SSL_write/SSL_do_handshake as an IoResult.
// SSL_get_error reads this thread's error queue, so every call clears it first.
Connection::IoResult Connection::tls_result(int rc, bool reading) {
  if (rc > 0) return {Io::ok, static_cast<size_t>(rc)};
  const int err = SSL_get_error(ssl_, rc);
  switch (err) {
    case SSL_ERROR_WANT_READ: return {Io::again_read};
    case SSL_ERROR_WANT_WRITE: return {Io::again_write};
    case SSL_ERROR_ZERO_RETURN: return {Io::closed};
    case SSL_ERROR_SYSCALL:
      if (errno == 0 || errno == ECONNRESET || errno == EPIPE) return {reading ? Io::closed : Io::error};
      return {Io::error};
    default:
      if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_HTTP_REQUEST) http_request_seen_ = true;
      ERR_clear_error();
      return {Io::error};
  }
}

Connection::Io Connection::handshake() {
  if (ssl_ == nullptr) return fd_ >= 0 ? Io::ok : Io::error;
  if (SSL_is_init_finished(ssl_)) return Io::ok;
  ERR_clear_error();
  errno = 0;
  return tls_result(SSL_do_handshake(ssl_), true).status;
}

Connection::IoResult Connection::read_some(char* dst, size_t n) {
  if (fd_ < 0) return {Io::error};
  if (ssl_ != nullptr) {
    ERR_clear_error();
    errno = 0;
    return tls_result(SSL_read(ssl_, dst, static_cast<int>(std::min<size_t>(n, 1 << 30))), true);
  }
  for (;;) {
    const ssize_t got = ::recv(fd_, dst, n, 0);
    if (got > 0) return {Io::ok, static_cast<size_t>(got)};
    if (got == 0) return {Io::closed};
    if (errno == EINTR) continue;
    return {would_block(errno) ? Io::again_read : Io::error};
  }
}

Connection::IoResult Connection::write_some(const char* data, size_t n) {
  if (fd_ < 0) return {Io::error};
  if (ssl_ != nullptr) {
    ERR_clear_error();
    errno = 0;
    return tls_result(SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(n, 1 << 30))), false);
  }
  for (;;) {
    const ssize_t sent = ::send(fd_, data, n, MSG_NOSIGNAL);
    if (sent > 0) return {Io::ok, static_cast<size_t>(sent)};
    if (sent < 0 && errno == EINTR) continue;
    return {sent < 0 && would_block(errno) ? Io::again_write : Io::error};
  }
}

bool Connection::write_all(std::string_view data, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  while (!data.empty()) {
    if (stop_.load(std::memory_order_relaxed)) return false;
    const IoResult r = write_some(data.data(), data.size());
    if (r.status == Io::ok) {  // the client took some: its time for the rest starts again
      data.remove_prefix(r.n);
      deadline = Clock::now() + timeout;
      continue;
    }
    if (r.status != Io::again_read && r.status != Io::again_write) return false;
    if (Clock::now() >= deadline) return false;
    pollfd p{fd_, static_cast<short>(r.status == Io::again_read ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, slice_ms(deadline)) < 0 && errno != EINTR) return false;
    if (p.revents & (POLLERR | POLLHUP)) return false;
  }
  return true;
}

// Looks at the socket only (TLS records included): a close_notify alert is
// followed by the end of the stream, which POLLRDHUP reports.
bool Connection::peer_closed() {
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLERR | POLLHUP | POLLRDHUP)) return true;
  if (p.revents & POLLIN) {
    char byte = 0;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && !would_block(errno));
  }
  return false;
}

}  // namespace cohort::server
