// RequestReader over a socket pair: requests that arrive a byte at a time,
// pipelined requests, the limits, and what a timeout or a close answers.
#include "server/http_request_reader.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace cohort::server {
namespace http_request_reader_test {

using Kind = RequestReader::Outcome::Kind;

// A connection and the client's end of it.
struct Peer {
  Peer() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    client_ = fds[0];
    conn_ = std::make_unique<Connection>(fds[1], nullptr, stop_);
  }
  ~Peer() {
    if (client_ >= 0) ::close(client_);
  }
  void send(const std::string& bytes) {
    ASSERT_EQ(::write(client_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  // Sends `bytes` one at a time, advancing after each; the last outcome.
  RequestReader::Outcome trickle(RequestReader& reader, const std::string& bytes) {
    RequestReader::Outcome out;
    for (size_t i = 0; i < bytes.size(); ++i) {
      send(bytes.substr(i, 1));
      out = reader.advance(*conn_);
      if (out.kind != Kind::more) {
        EXPECT_EQ(i + 1, bytes.size()) << "finished early at byte " << i;
        break;
      }
    }
    return out;
  }

  std::atomic<bool> stop_{false};
  int client_ = -1;
  std::unique_ptr<Connection> conn_;
};

class RequestReaderTest : public ::testing::Test, public Peer {
 protected:
  RequestReader::Limits limits_{200, 100};
};

TEST_F(RequestReaderTest, AssemblesARequestSentAByteAtATime) {
  RequestReader reader(limits_);
  EXPECT_EQ(reader.advance(*conn_).kind, Kind::more);
  EXPECT_FALSE(reader.started(*conn_));
  const std::string head = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n";
  EXPECT_EQ(trickle(reader, head).kind, Kind::more);
  EXPECT_TRUE(reader.started(*conn_));
  EXPECT_EQ(reader.take_interim(), "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_EQ(reader.timeout_status(), 408) << "within the body";
  EXPECT_EQ(trickle(reader, "5\r\nhello\r\n6;x=1\r\n world\r\n0\r\nT: 1\r\n\r\n").kind, Kind::ready);
  const HttpRequest r = reader.take_request();
  EXPECT_EQ(r.path, "/echo");
  EXPECT_EQ(r.body, "hello world");
}

TEST_F(RequestReaderTest, PipelinedRequestsStayBufferedForTheNext) {
  RequestReader reader(limits_);
  send("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\n");
  ASSERT_EQ(reader.advance(*conn_).kind, Kind::ready);
  EXPECT_EQ(reader.take_request().body, "abc");
  reader.reset();
  ASSERT_EQ(reader.advance(*conn_).kind, Kind::ready);
  EXPECT_EQ(reader.take_request().path, "/b");
  reader.reset();
  EXPECT_EQ(reader.advance(*conn_).kind, Kind::more);
  EXPECT_EQ(reader.timeout_status(), 0) << "a head that does not end is closed quietly";
  send("\r\n");
  ASSERT_EQ(reader.advance(*conn_).kind, Kind::ready);
  EXPECT_EQ(reader.take_request().path, "/c");
}

TEST_F(RequestReaderTest, LimitsAndFramingErrorsFailWithTheirStatus) {
  const std::pair<std::string, int> cases[] = {
      {"GET / HTTP/1.1\r\nX: " + std::string(300, 'a') + "\r\n\r\n", 431},
      {"GET / HTTP/1.1\r\nX: " + std::string(300, 'a'), 431},
      {"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n32\r\n" + std::string(50, 'x') + "\r\n33\r\n", 413},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiXX", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"GET / HTTP/2.0\r\n\r\n", 505},
  };
  for (const auto& [bytes, status] : cases) {
    Peer fresh;
    RequestReader reader(limits_);
    fresh.send(bytes);
    const RequestReader::Outcome out = reader.advance(*fresh.conn_);
    EXPECT_EQ(out.kind, Kind::failed) << bytes;
    EXPECT_EQ(out.status, status) << bytes;
  }
}

TEST_F(RequestReaderTest, ACloseWithinABodyIs400AndBetweenRequestsQuiet) {
  {
    RequestReader reader(limits_);
    send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
    EXPECT_EQ(reader.advance(*conn_).kind, Kind::more);
    ::shutdown(client_, SHUT_WR);
    const RequestReader::Outcome out = reader.advance(*conn_);
    EXPECT_EQ(out.kind, Kind::failed);
    EXPECT_EQ(out.status, 400);
  }
  Peer fresh;
  RequestReader reader(limits_);
  ::shutdown(fresh.client_, SHUT_WR);
  const RequestReader::Outcome out = reader.advance(*fresh.conn_);
  EXPECT_EQ(out.kind, Kind::failed);
  EXPECT_EQ(out.status, 0);
}

}  // namespace http_request_reader_test
}  // namespace cohort::server
