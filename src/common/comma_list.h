// The entries of a comma-separated command-line list ("cuda0,cuda1",
// "a,b,c"), as they are: empty entries kept, no trimming.
#pragma once

#include <string>
#include <vector>

namespace cohort {

inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    const size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

}  // namespace cohort
