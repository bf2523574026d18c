// make_backend: the one place that knows which backends exist.
#include "backend/backend.h"

#include "backend/cpu/cpu_backend.h"
#include "common/error.h"

namespace cohort::backend {

const char* device_name(Device d) {
  switch (d) {
    case Device::cpu: return "cpu";
    case Device::cuda: return "cuda";
  }
  return "?";
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options, const BackendLimits& limits) {
  if (limits.n_max_tok < 1 || limits.n_max_ctx < 1 || limits.max_row < 1 || limits.head_dim < 1) {
    fail("backend: impossible limits ({} tokens, {} positions, rows of {}, heads of {})",
         limits.n_max_tok, limits.n_max_ctx, limits.max_row, limits.head_dim);
  }
  switch (options.device) {
    case Device::cpu: return std::make_unique<cpu::CpuBackend>(options, limits);
    case Device::cuda: break;
  }
  fail("device '{}' has no forward backend in this build (available: cpu)", device_name(options.device));
}

}  // namespace cohort::backend
