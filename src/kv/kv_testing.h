// Helpers shared by the kv/ unit tests.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

namespace cohort::kv::testing {

// n token ids counting up from `first`: a prompt whose blocks differ from
// those of any prompt that starts elsewhere.
inline std::vector<int32_t> iota_tokens(int n, int32_t first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

}  // namespace cohort::kv::testing
