// Access-Control-Allow-Origin for each kind of --cors-origins, and what
// counts as a localhost origin (the cases of llama.cpp's test_security.py).
#include "server/cors_policy.h"

#include <gtest/gtest.h>

namespace cohort::server {
namespace cors_policy_test {

std::optional<std::string> allow(const CorsPolicy& p, const char* origin) {
  const std::string o = origin == nullptr ? "" : origin;
  return p.allow_origin(origin == nullptr ? nullptr : &o);
}

TEST(CorsPolicy, StarWithCredentialsEchoesTheOrigin) {
  CorsPolicy p;
  EXPECT_EQ(allow(p, "web.mydomain.fr"), "web.mydomain.fr");
  EXPECT_EQ(allow(p, "http://evil.com"), "http://evil.com");
  EXPECT_EQ(allow(p, nullptr), "*");
  EXPECT_TRUE(p.depends_on_origin());
  p.credentials = false;
  EXPECT_EQ(allow(p, "web.mydomain.fr"), "*");
  EXPECT_FALSE(p.depends_on_origin());
}

TEST(CorsPolicy, LocalhostEchoesOnlyLocalOrigins) {
  CorsPolicy p;
  p.origins = "localhost";
  for (const char* o : {"http://localhost", "http://localhost:8080", "http://127.0.0.1", "http://127.0.0.1:3000",
                        "http://[::1]", "http://[::1]:3000", "https://LOCALHOST/"}) {
    EXPECT_EQ(allow(p, o), o) << o;
  }
  for (const char* o : {"http://web.mydomain.fr", "http://evil.com", "http://notlocalhost",
                        "http://localhost.evil.com", "localhost", "http://127.0.0.1.evil.com", "http://[::1"}) {
    EXPECT_EQ(allow(p, o), std::nullopt) << o;
  }
  EXPECT_EQ(allow(p, nullptr), std::nullopt);
}

TEST(CorsPolicy, AListEchoesAListedOriginAndOneOriginIsSentAsIs) {
  CorsPolicy p;
  p.origins = "https://a.example, https://b.example";
  EXPECT_EQ(allow(p, "https://b.example"), "https://b.example");
  EXPECT_EQ(allow(p, "https://c.example"), std::nullopt);
  EXPECT_EQ(allow(p, nullptr), std::nullopt);
  p.origins = "https://a.example";
  EXPECT_EQ(allow(p, "https://c.example"), "https://a.example");
  EXPECT_FALSE(p.depends_on_origin());
  p.origins = "";
  EXPECT_EQ(allow(p, "https://a.example"), std::nullopt);
}

TEST(CorsPolicy, ResponseHeadersAddVaryWhereTheAnswerDependsOnTheOrigin) {
  CorsPolicy p;
  p.origins = "localhost";
  const std::string evil = "http://evil.com";
  HttpHeaders h;
  p.add_response_headers(&evil, h);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"Vary", "Origin"}));
  HttpHeaders pre;
  p.add_preflight_headers(pre);
  EXPECT_EQ(pre, (HttpHeaders{{"Access-Control-Allow-Credentials", "true"},
                              {"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
                              {"Access-Control-Allow-Headers", "*"}}));
}

}  // namespace cors_policy_test
}  // namespace cohort::server
