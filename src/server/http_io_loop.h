// The HTTP server's I/O thread: one epoll loop that accepts connections and
// owns every connection while it waits for or reads a request (the TLS
// handshake, the first byte, the head, a Content-Length or chunked body,
// the keep-alive wait between requests), with their timeouts, "100
// Continue" and the error answers to requests that cannot be read. A whole
// request leaves the loop with its connection (RequestFn, to a worker);
// after the answer, hand_back() returns a keep-alive connection to the loop.
// An idle or slow client therefore costs a descriptor and a few hundred
// bytes, never a thread.
//
// Why an epoll loop of our own and not Boost.Asio/Beast (what C++ servers
// usually build on): the parts that carry the protocol's rules existed and were
// tested byte for byte before this loop (http_message's parser and framing
// checks, the 400/408/413/431/501/505 answers with the API's error bodies,
// Exchange's streaming with per-stall write timeouts and client_gone).
// Beast would bring its own parser, limits and error codes in their place,
// or be used for nothing but readiness; and the worker side would still
// write synchronously, with its own timeouts, to a socket (and an SSL
// stream) that an io_context owns between requests, so the hand-off
// between loop and workers would have to be written here either way. What
// Asio would have given is the readiness bookkeeping and timers: about 300
// lines below (epoll, an eventfd for hand-backs, one deadline per
// connection and a sweep when the earliest passes), Linux only, as the
// server is.
//
// Timeouts: a new connection has first_byte_timeout (handshake included)
// for its first byte, a kept-alive one idle_timeout; from its first byte a
// request has read_timeout to arrive whole (then 408 within a body, a
// quiet close within the head); an answer sent from the loop has
// write_timeout per stall. Deadlines are checked when the earliest one
// passes, by a sweep over the connections in the loop.
//
// TLS handshakes run on this thread too: their CPU (an RSA-2048 signature
// is 0.9 ms on the development machine, `openssl speed`; a P-256 one 25 us)
// delays the reads of other connections while it lasts. Nothing here
// limits the rate of new connections (max_connections limits how many are
// open), so a client that connects as fast as it can keeps this thread busy
// with handshakes; more I/O threads would be the next step if that matters.
//
// Limits: beyond max_connections (in the loop or on workers) a connection
// is answered 503 (plain HTTP; closed without a word under TLS, where no
// answer is possible before a handshake) and closed; when accept runs out
// of descriptors it pauses for Connection::kPollSlice instead of spinning.
//
// Threads: start() spawns the loop's thread; RequestFn runs on it (it must
// not block). hand_back() may be called from any thread. stop() (after
// `stopping` is set) wakes the loop, closes the connections it holds and
// joins; connections handed back later are closed.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/http_connection.h"
#include "server/http_message.h"
#include "server/http_request_reader.h"

namespace cohort::server {

struct IoLoopOptions {
  RequestReader::Limits limits;
  std::chrono::milliseconds first_byte_timeout{10000};
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds write_timeout{30000};
  int max_connections = 1024;
};

class IoLoop {
 public:
  // A whole request and its connection, for a worker.
  using RequestFn = std::function<void(std::unique_ptr<Connection>, HttpRequest)>;
  // The complete bytes of an error answer (head and body, "Connection: close").
  using ErrorResponseFn = std::function<std::string(int status, const std::string& message)>;

  // `tls` (may be null) and `stopping` must outlive the loop.
  IoLoop(IoLoopOptions options, SSL_CTX* tls, const std::atomic<bool>& stopping, RequestFn on_request,
         ErrorResponseFn error_response);
  ~IoLoop();  // stop()
  IoLoop(const IoLoop&) = delete;
  IoLoop& operator=(const IoLoop&) = delete;

  // Takes the listening sockets (one an address) and starts the thread.
  // Throws cohort::Error if epoll or eventfd cannot be made.
  void start(std::vector<int> listen_fds);
  // REQUIRES: `stopping` is set. Joins the thread; closes every connection
  // the loop holds, and the listeners. Idempotent.
  void stop();
  // The answer to a request is complete: a connection to keep alive goes
  // back to the loop, another is closed. Any thread.
  void hand_back(std::unique_ptr<Connection> conn, bool keep_alive);
  // Connections open (in the loop or on workers).
  int open_connections() const { return open_.load(); }

 private:
  struct Session;
  using Clock = Connection::Clock;

  void run();
  void accept_ready(int listen_fd);
  // Watches the listeners for connections (EPOLLIN) or stops watching them.
  void watch_listeners(bool watch);
  void refuse(int fd);
  void adopt(std::unique_ptr<Connection> conn, bool first);
  // Moves a session along after readiness (or on adoption).
  void drive(Session& s);
  // Sends what the loop has queued on `s`; false on a broken connection.
  bool flush(Session& s);
  // Registers the events `s` waits for.
  void wait_for(Session& s, uint32_t events);
  void set_deadline(Session& s, Clock::time_point deadline);
  void expire(Clock::time_point now);
  void answer_and_close(Session& s, int status, const std::string& message);
  void close(Session& s);
  void take_returned();

  const IoLoopOptions options_;
  SSL_CTX* const tls_;
  const std::atomic<bool>& stopping_;
  const RequestFn on_request_;
  const ErrorResponseFn error_response_;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;    // eventfd: hand_back() and stop() wake the loop
  std::vector<int> listen_fds_;
  std::thread thread_;
  std::atomic<int> open_{0};

  // Owned by the loop's thread only.
  std::unordered_map<int, std::unique_ptr<Session>> sessions_;  // by socket
  Clock::time_point next_deadline_ = Clock::time_point::max();
  bool accept_paused_ = false;
  Clock::time_point accept_resume_{};

  std::mutex returned_mutex_;
  std::vector<std::unique_ptr<Connection>> returned_;  // GUARDED_BY(returned_mutex_)
  bool loop_ended_ = false;                            // GUARDED_BY(returned_mutex_)
};

}  // namespace cohort::server
