// A raw HTTP/1.1 client for the server's tests: sends bytes exactly as
// given (so malformed requests can be sent), reads until the server closes,
// and splits the answer into status, headers and (de-chunked) body.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace cohort::server::testing {

// A connected socket to 127.0.0.1:port, closed on destruction.
class ClientSocket {
 public:
  explicit ClientSocket(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  ~ClientSocket() { close(); }
  ClientSocket(const ClientSocket&) = delete;
  ClientSocket& operator=(const ClientSocket&) = delete;

  void send(const std::string& bytes) {
    EXPECT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  // Reads until `needle` has arrived ("" : until the server closes) or the
  // timeout passed; returns all read so far.
  std::string read_until(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while ((needle.empty() || received_.find(needle) == std::string::npos) && !eof_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) eof_ = true;
      else received_.append(buf, static_cast<size_t>(n));
    }
    return received_;
  }
  std::string read_all() { return read_until(""); }
  // Ends the client's side (the server reads end of file), keeps reading open.
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  // One recv of at most `max` bytes, waiting up to `timeout` for data.
  void read_some(size_t max, std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (eof_ || ::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return;
    std::string buf(max, '\0');
    const ssize_t n = ::recv(fd_, buf.data(), max, 0);
    if (n <= 0) eof_ = true;
    else received_.append(buf, 0, static_cast<size_t>(n));
  }
  bool eof() const { return eof_; }
  const std::string& received() const { return received_; }
  void set_receive_buffer(int bytes) { ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  std::string received_;
  bool eof_ = false;
};

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
};

inline std::string dechunk(std::string data) {
  std::string out;
  for (;;) {
    const size_t eol = data.find("\r\n");
    if (eol == std::string::npos) return out;
    const size_t n = std::stoul(data.substr(0, eol), nullptr, 16);
    if (n == 0) return out;
    out += data.substr(eol + 2, n);
    data.erase(0, eol + 2 + n + 2);
  }
}

inline RawResponse parse_response(const std::string& raw) {
  RawResponse r;
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || head_end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    const size_t eol = raw.find("\r\n", pos);
    const std::string line = raw.substr(pos, eol - pos);
    const size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = line.substr(colon + 2);
    pos = eol + 2;
  }
  r.body = raw.substr(head_end + 4);
  if (r.headers["transfer-encoding"] == "chunked") r.body = dechunk(r.body);
  return r;
}

// Sends `request` on a fresh connection and reads the whole answer.
inline RawResponse roundtrip(int port, const std::string& request) {
  ClientSocket s(port);
  s.send(request);
  return parse_response(s.read_all());
}

inline std::string http_request(const std::string& method, const std::string& path, const std::string& body = "",
                                const std::string& extra_headers = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace cohort::server::testing
