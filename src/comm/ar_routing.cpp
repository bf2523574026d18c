#include "comm/ar_routing.h"

#include <cstdlib>
#include <exception>

#include "common/error.h"

namespace cohort::comm {

const char* ar_path_name(ArPath p) {
  switch (p) {
    case ArPath::kernel: return "kernel";
    case ArPath::copy_engine: return "copy engines";
    case ArPath::nccl: return "nccl";
  }
  return "?";
}

ArPath ar_path(int64_t bytes, const ArRouting& routing) {
  if (routing.nccl_min_bytes >= 0 && bytes >= routing.nccl_min_bytes) return ArPath::nccl;
  return bytes >= routing.ce_min_bytes ? ArPath::copy_engine : ArPath::kernel;
}

int64_t parse_byte_size(const std::string& what, const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    fail("{}: '{}' is not a size (e.g. 8, 64K, 4M)", what, text);
  }
  const std::string unit = text.substr(used);
  const int shift = unit.empty() ? 0 : unit == "K" || unit == "k" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (shift < 0 || v < 1 || v > (int64_t{4} << (30 - shift))) {
    fail("{}: '{}' is not a size from 1 byte to 4G (units K, M, G)", what, text);
  }
  return v << shift;
}

ArRouting ar_routing_from_env() {
  ArRouting r;
  const char* ce = std::getenv("COHORT_AR_CE_MIN_BYTES");
  if (ce != nullptr && *ce != '\0') r.ce_min_bytes = parse_byte_size("COHORT_AR_CE_MIN_BYTES", ce);
  const char* nccl = std::getenv("COHORT_AR_NCCL_MIN_BYTES");
  if (nccl != nullptr && *nccl != '\0') r.nccl_min_bytes = parse_byte_size("COHORT_AR_NCCL_MIN_BYTES", nccl);
  return r;
}

}  // namespace cohort::comm
