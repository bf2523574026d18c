// The server side of TLS (--ssl-cert-file, --ssl-key-file): an OpenSSL
// SSL_CTX holding the certificate chain and its private key, from which
// every TLS connection is made (http_connection.h).
//
// TLS 1.2 and 1.3 with OpenSSL's default ciphers; no client certificates.
// Partial writes and moving write buffers are allowed, as non-blocking
// sockets need; an end of stream without close_notify reads as a close.
//
// Ownership: owns the SSL_CTX (connections take a reference of their own).
// Thread safety: after load(), safe to use from any thread (OpenSSL's
// SSL_CTX is, once configured).
#pragma once

#include <memory>
#include <string>

typedef struct ssl_ctx_st SSL_CTX;

namespace cohort::server {

class TlsContext {
 public:
  // Reads the PEM certificate chain and private key. Throws cohort::Error
  // naming the file at fault (unreadable, not PEM, key not matching).
  static std::unique_ptr<TlsContext> load(const std::string& cert_file, const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

}  // namespace cohort::server
