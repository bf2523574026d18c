#include "server/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>

#include "common/error.h"

namespace cohort::server {
namespace {

// The oldest error on this thread's OpenSSL queue as text, and the queue cleared.
std::string openssl_error() {
  const unsigned long e = ERR_peek_error();
  char text[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, text, sizeof text);
  ERR_clear_error();
  return text;
}

void check_readable(const char* flag, const std::string& file) {
  std::ifstream in(file);
  if (!in) fail("{} {}: cannot read it", flag, file);
}

}  // namespace

std::unique_ptr<TlsContext> TlsContext::load(const std::string& cert_file, const std::string& key_file) {
  check_readable("--ssl-cert-file", cert_file);
  check_readable("--ssl-key-file", key_file);
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) fail("TLS: cannot create a context: {}", openssl_error());
  std::unique_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    fail("--ssl-cert-file {}: not a PEM certificate: {}", cert_file, openssl_error());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    fail("--ssl-key-file {}: not a PEM private key for the certificate: {}", key_file, openssl_error());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    fail("--ssl-key-file {}: does not match the certificate in {}: {}", key_file, cert_file, openssl_error());
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace cohort::server
