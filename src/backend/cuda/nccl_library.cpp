#include "backend/cuda/nccl_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "common/error.h"

namespace cohort::cuda {
namespace {

template <class F>
void bind(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr) fail("-ar nccl: libnccl.so.2 has no {} (NCCL 2.18 or later is needed)", name);
}

NcclApi load() {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    fail("-ar nccl: cannot load NCCL ({}); install it or use -ar p2p or -ar host", why ? why : "libnccl.so.2");
  }
  NcclApi api{};
  bind(lib, api.get_version, "ncclGetVersion");
  bind(lib, api.get_unique_id, "ncclGetUniqueId");
  bind(lib, api.comm_init_rank, "ncclCommInitRank");
  bind(lib, api.comm_abort, "ncclCommAbort");
  bind(lib, api.all_reduce, "ncclAllReduce");
  bind(lib, api.error_string, "ncclGetErrorString");
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const NcclApi& nccl() {
  static std::once_flag once;
  static NcclApi api;
  std::call_once(once, [] { api = load(); });  // a throw leaves it to be tried again
  return api;
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail("-ar nccl: {} failed: {}", what, nccl().error_string(r));
}

}  // namespace cohort::cuda
