// Recoverable errors: bad files, bad flags, bad requests.
//
// A cohort::Error carries one human-readable message that names the thing at
// fault (file, field, value). Callers at the edge turn it into an exit status
// with one `error: ...` line on stderr, or into an HTTP 4xx. Programmer errors
// use assert; device failures use the *_CHECK macros of the backends.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace cohort {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws cohort::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace cohort
