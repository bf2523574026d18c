#include <cstdlib>
#include <cstring>

#include "backend/cuda/launch.cuh"

namespace cohort::cuda {

bool pdl_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("COHORT_PDL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

}  // namespace cohort::cuda
