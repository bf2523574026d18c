// The web page at `/` (webui_assets.h): GET / is index.html, every other
// file is served at its own name (/chat.js, ...). The page is served while
// the model loads too; it asks the API, which answers 503 until then.
#include <string>

#include "server/routes.h"
#include "server/webui_assets.h"

namespace cohort::server {
namespace {

// The page loads nothing from elsewhere; the policy makes sure of it.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'";

void serve_asset(Exchange& exchange, const WebAsset& asset) {
  exchange.add_header("Cache-Control", "no-cache");
  exchange.add_header("X-Content-Type-Options", "nosniff");
  exchange.add_header("Content-Security-Policy", kContentSecurityPolicy);
  exchange.respond(200, asset.body, asset.content_type);
}

}  // namespace

std::vector<std::string> webui_paths() {
  std::vector<std::string> paths = {"/"};
  for (const WebAsset& asset : web_assets()) paths.emplace_back(asset.path);
  return paths;
}

void register_webui_routes(HttpServer& server) {
  for (const WebAsset& asset : web_assets()) {
    server.route("GET", std::string(asset.path), [&asset](Exchange& e) { serve_asset(e, asset); });
    if (asset.path == "/index.html") server.route("GET", "/", [&asset](Exchange& e) { serve_asset(e, asset); });
  }
}

}  // namespace cohort::server
