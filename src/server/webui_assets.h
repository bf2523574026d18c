// The files of the web page served at `/` (src/server/webui/), embedded in
// the binary when it is built (cmake/embed_assets.cmake writes
// webui_assets.cpp into the build folder), so that the page needs neither
// the source tree nor the network at run time.
//
// Thread safety: constant data.
#pragma once

#include <span>
#include <string_view>

namespace cohort::server {

struct WebAsset {
  std::string_view path;          // "/index.html", "/app.js", ...: the file's name under webui/
  std::string_view content_type;  // from its extension
  std::string_view body;          // the file's bytes
};

// Every embedded file, in the order of the build's list.
std::span<const WebAsset> web_assets();

}  // namespace cohort::server
