#include "server/http_io_loop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace cohort::server {

using Io = Connection::Io;

// A connection while the loop owns it.
struct IoLoop::Session {
  Session(std::unique_ptr<Connection> c, RequestReader::Limits limits) : conn(std::move(c)), reader(limits) {}
  std::unique_ptr<Connection> conn;
  RequestReader reader;
  Clock::time_point deadline;
  bool started = false;  // a request has begun: read_timeout runs
  std::string out;       // bytes the loop sends: "100 Continue" or an error answer
  bool closing = false;  // close once `out` is sent
  uint32_t events = 0;   // registered with epoll
};

IoLoop::IoLoop(IoLoopOptions options, SSL_CTX* tls, const std::atomic<bool>& stopping, RequestFn on_request,
               ErrorResponseFn error_response)
    : options_(options),
      tls_(tls),
      stopping_(stopping),
      on_request_(std::move(on_request)),
      error_response_(std::move(error_response)) {}

IoLoop::~IoLoop() {
  stop();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void IoLoop::start(std::vector<int> listen_fds) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) fail("HTTP server: cannot create epoll or eventfd: {}", std::strerror(errno));
  listen_fds_ = std::move(listen_fds);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  for (int fd : listen_fds_) {
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  thread_ = std::thread([this] { run(); });
}

void IoLoop::stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void IoLoop::hand_back(std::unique_ptr<Connection> conn, bool keep_alive) {
  if (keep_alive && !stopping_.load()) {
    std::lock_guard<std::mutex> lock(returned_mutex_);
    if (!loop_ended_) {
      returned_.push_back(std::move(conn));
      const uint64_t one = 1;
      (void)::write(wake_fd_, &one, sizeof one);
      return;
    }
  }
  conn.reset();
  --open_;
}

void IoLoop::run() {
  std::vector<epoll_event> events(256);
  while (!stopping_.load()) {
    const Clock::time_point now = Clock::now();
    Clock::time_point wake = std::min(next_deadline_, now + std::chrono::seconds(1));
    if (accept_paused_) wake = std::min(wake, accept_resume_);
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                               static_cast<int>(std::clamp<int64_t>(wait_ms, 0, 1000)));
    for (int i = 0; i < n && !stopping_.load(); ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        (void)::read(wake_fd_, &count, sizeof count);
        take_returned();
      } else if (std::find(listen_fds_.begin(), listen_fds_.end(), fd) != listen_fds_.end()) {
        accept_ready(fd);
      } else if (const auto s = sessions_.find(fd); s != sessions_.end()) {
        drive(*s->second);
      }
    }
    const Clock::time_point after = Clock::now();
    if (after >= next_deadline_) expire(after);
    if (accept_paused_ && after >= accept_resume_) {
      accept_paused_ = false;
      watch_listeners(true);
    }
  }
  {
    std::lock_guard<std::mutex> lock(returned_mutex_);
    loop_ended_ = true;
    open_ -= static_cast<int>(returned_.size());
    returned_.clear();
  }
  open_ -= static_cast<int>(sessions_.size());
  sessions_.clear();
  for (int fd : listen_fds_) ::close(fd);
  listen_fds_.clear();
}

void IoLoop::watch_listeners(bool watch) {
  for (int fd : listen_fds_) {
    epoll_event ev{};
    ev.events = watch ? static_cast<uint32_t>(EPOLLIN) : 0u;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  }
}

void IoLoop::take_returned() {
  std::vector<std::unique_ptr<Connection>> back;
  {
    std::lock_guard<std::mutex> lock(returned_mutex_);
    back.swap(returned_);
  }
  for (auto& conn : back) adopt(std::move(conn), false);
}

void IoLoop::accept_ready(int listen_fd) {
  for (int i = 0; i < 64; ++i) {  // a batch, then the other events get their turn
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors (or kernel memory): the pending connection stays
      // pending and the listener readable; stop watching the listeners for
      // a slice instead of spinning on them.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_ = true;
        accept_resume_ = Clock::now() + Connection::kPollSlice;
        watch_listeners(false);
        return;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      continue;  // ECONNABORTED and the like: that one is gone
    }
    if (open_.load() >= options_.max_connections) {
      refuse(fd);
      continue;
    }
    ++open_;
    const int one = 1;  // SSE chunks are small and should leave at once
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    adopt(std::make_unique<Connection>(fd, tls_, stopping_), true);
  }
}

// Best effort and without waiting: the 503 fits any socket buffer. Under
// TLS nothing can be said before a handshake, which would hold the
// descriptor the limit is there to protect: the connection is just closed.
void IoLoop::refuse(int fd) {
  if (tls_ == nullptr) {
    const std::string out = error_response_(503, "too many connections; retry later");
    (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::close(fd);
}

void IoLoop::adopt(std::unique_ptr<Connection> conn, bool first) {
  const int fd = conn->fd();
  auto session = std::make_unique<Session>(std::move(conn), options_.limits);
  Session& s = *session;
  sessions_[fd] = std::move(session);
  set_deadline(s, Clock::now() + (first ? options_.first_byte_timeout : options_.idle_timeout));
  // Bytes may be waiting already: a pipelined request, or TLS records
  // OpenSSL has read ahead. drive() registers the events it then waits for.
  drive(s);
}

void IoLoop::set_deadline(Session& s, Clock::time_point deadline) {
  s.deadline = deadline;
  next_deadline_ = std::min(next_deadline_, deadline);
}

void IoLoop::wait_for(Session& s, uint32_t events) {
  if (events == s.events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = s.conn->fd();
  ::epoll_ctl(epoll_fd_, s.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, s.conn->fd(), &ev);
  s.events = events;
}

bool IoLoop::flush(Session& s) {
  while (!s.out.empty()) {
    const Connection::IoResult r = s.conn->write_some(s.out.data(), s.out.size());
    if (r.status == Io::ok) {
      s.out.erase(0, r.n);
      if (s.closing) set_deadline(s, Clock::now() + options_.write_timeout);  // per stall
      continue;
    }
    if (r.status == Io::again_read || r.status == Io::again_write) {
      wait_for(s, r.status == Io::again_read ? EPOLLIN : EPOLLOUT);
      return true;
    }
    return false;
  }
  return true;
}

void IoLoop::drive(Session& s) {
  Connection& conn = *s.conn;
  if (const Io hs = conn.handshake(); hs != Io::ok) {
    if (hs == Io::again_read || hs == Io::again_write) {
      wait_for(s, hs == Io::again_read ? EPOLLIN : EPOLLOUT);
      return;
    }
    // A plain HTTP request to the TLS port: tell it so in plain text, as
    // nginx does, when the socket takes the words at once.
    if (conn.http_request_seen()) {
      const std::string out = error_response_(400, "plain HTTP request sent to an HTTPS port");
      (void)::send(conn.fd(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    close(s);
    return;
  }
  if (!s.out.empty() && !flush(s)) {
    close(s);
    return;
  }
  if (s.closing) {
    if (s.out.empty()) close(s);
    return;
  }
  const RequestReader::Outcome o = s.reader.advance(conn);
  if (!s.started && s.reader.started(conn)) {
    s.started = true;
    set_deadline(s, Clock::now() + options_.read_timeout);
  }
  if (std::string interim = s.reader.take_interim(); !interim.empty()) {
    s.out += interim;
    if (!flush(s)) {
      close(s);
      return;
    }
  }
  switch (o.kind) {
    case RequestReader::Outcome::Kind::more: {
      uint32_t events = o.io == Io::again_write ? EPOLLOUT : EPOLLIN;
      if (!s.out.empty()) events |= EPOLLOUT;
      wait_for(s, events);
      return;
    }
    case RequestReader::Outcome::Kind::ready: {
      HttpRequest request = s.reader.take_request();
      const int fd = conn.fd();
      if (s.events != 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      std::unique_ptr<Connection> owned = std::move(s.conn);
      sessions_.erase(fd);  // `s` is gone from here on
      on_request_(std::move(owned), std::move(request));
      return;
    }
    case RequestReader::Outcome::Kind::failed:
      if (o.status == 0) {
        close(s);
      } else {
        answer_and_close(s, o.status, o.message);
      }
      return;
  }
}

void IoLoop::answer_and_close(Session& s, int status, const std::string& message) {
  s.out += error_response_(status, message);
  s.closing = true;
  set_deadline(s, Clock::now() + options_.write_timeout);
  if (!flush(s) || s.out.empty()) close(s);  // else flush() registered what the rest waits for
}

void IoLoop::close(Session& s) {
  const int fd = s.conn->fd();
  if (s.events != 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  sessions_.erase(fd);
  --open_;
}

// Sessions past their deadline: quietly closed before a request began or
// while an answer is stuck; 408 within a body; otherwise as the reader says.
void IoLoop::expire(Clock::time_point now) {
  std::vector<Session*> due;
  next_deadline_ = Clock::time_point::max();
  for (auto& [fd, s] : sessions_) {
    if (s->deadline <= now) {
      due.push_back(s.get());
    } else {
      next_deadline_ = std::min(next_deadline_, s->deadline);
    }
  }
  for (Session* s : due) {
    const int status = s->closing || !s->started ? 0 : s->reader.timeout_status();
    if (status == 0) {
      close(*s);
    } else {
      answer_and_close(*s, status, "the request body did not arrive in time");
    }
  }
}

}  // namespace cohort::server
