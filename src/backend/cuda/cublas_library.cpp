#include "backend/cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "common/error.h"

namespace cohort::cuda {
namespace {

const std::string& library_name() {
  static const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  return name;
}

template <class F>
void bind(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr) fail("cuBLAS: {} has no {}", library_name(), name);
}

CublasApi load() {
  void* lib = dlopen(library_name().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    fail("cuBLAS: cannot load {} ({}); the GPU path needs the CUDA {} toolkit's cuBLAS", library_name(),
         why ? why : "not found", CUBLAS_VER_MAJOR);
  }
  CublasApi api{};
  bind(lib, api.create, "cublasCreate_v2");
  bind(lib, api.destroy, "cublasDestroy_v2");
  bind(lib, api.set_stream, "cublasSetStream_v2");
  bind(lib, api.set_workspace, "cublasSetWorkspace_v2");
  bind(lib, api.gemm_ex, "cublasGemmEx");
  bind(lib, api.status_name, "cublasGetStatusName");
  bind(lib, api.status_string, "cublasGetStatusString");
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const CublasApi& cublas() {
  static std::once_flag once;
  static CublasApi api;
  std::call_once(once, [] { api = load(); });  // a throw leaves it to be tried again
  return api;
}

}  // namespace cohort::cuda
