// One accepted connection, plain TCP or TLS over TCP: reads that never
// wait (for the I/O loop, which owns a connection while a request arrives),
// whole writes that wait at most a timeout per stall (for the worker that
// answers a request), and a check whether the client has gone away.
//
// The socket is non-blocking from construction on. A closed peer is a
// failed write, never a signal: plain writes use MSG_NOSIGNAL; TLS writes
// go through OpenSSL's write(2), so a process that uses TLS must ignore
// SIGPIPE (HttpServer::start does so when TLS is on). write_all() waits in
// slices of kPollSlice and gives up early once `stop` is set, so a server
// can stop while a client reads slowly.
//
// TLS: with an SSL_CTX the connection starts with a server-side handshake,
// driven by handshake() until it says ok; read_some()/write_some() then
// carry application data through OpenSSL. A read or write may need the
// socket to be readable or writable (again_read / again_write) whichever way
// the data flows: TLS may have to receive to send and the other way round.
// OpenSSL may hold decrypted bytes that poll() cannot see: a reader drains
// read_some() until it says again_read before it waits on the socket.
//
// Ownership: owns the socket and the SSL object; closes both on
// destruction (TLS: a close_notify is sent if the socket takes it at once).
// Thread safety: none. One thread uses a connection at a time: the I/O loop
// while a request is read, a worker while it is answered; the hand-off
// between them goes through a mutex, which orders their accesses.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace cohort::server {

class Connection {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kPollSlice{50};

  enum class Io {
    ok,           // some bytes moved (or the handshake is done)
    again_read,   // nothing now: retry once the socket is readable
    again_write,  // nothing now: retry once the socket is writable
    closed,       // the peer closed its side (TLS: close_notify or end of file)
    error,        // a socket or TLS protocol error
  };
  struct IoResult {
    Io status;
    size_t n = 0;  // bytes moved when ok
  };

  // Takes `fd` (an accepted socket) and makes it non-blocking. `tls` null:
  // plain TCP. `stop` must outlive the connection.
  Connection(int fd, SSL_CTX* tls, const std::atomic<bool>& stop);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  int fd() const { return fd_; }
  bool is_tls() const { return ssl_ != nullptr; }

  // TLS: advances the handshake without waiting. ok once it is complete
  // (and always for plain TCP). On error, http_request_seen() tells whether
  // the client spoke plain HTTP to the TLS port.
  Io handshake();
  bool http_request_seen() const { return http_request_seen_; }

  // Reads at most `n` bytes into `dst` without waiting.
  IoResult read_some(char* dst, size_t n);
  // Writes at most `n` bytes of `data` without waiting. TLS: after
  // again_*, the next call must pass the same bytes again.
  IoResult write_some(const char* data, size_t n);

  // Sends all of `data`, waiting at most `timeout` for the connection to
  // take each part. False if the peer is gone, the timeout passed, or `stop`.
  bool write_all(std::string_view data, std::chrono::milliseconds timeout);

  // True when the client has closed its side (or reset the connection);
  // false while it is connected, even with unread bytes pending. Does not block.
  bool peer_closed();

  // Bytes received and not yet consumed by a request reader; they stay with
  // the connection (a pipelined next request) across hand-offs.
  std::string& buffer() { return buffer_; }
  const std::string& buffer() const { return buffer_; }

 private:
  IoResult tls_result(int rc, bool reading);

  int fd_;
  SSL* ssl_ = nullptr;
  const std::atomic<bool>& stop_;
  bool http_request_seen_ = false;
  std::string buffer_;
};

}  // namespace cohort::server
