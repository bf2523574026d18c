// make_backend: the one place that knows which backends exist.
#include "backend/backend.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "backend/cpu/cpu_backend.h"
#if COHORT_HAS_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/devices.h"
#endif
#include "common/error.h"

namespace cohort::backend {

const char* device_name(Device d) {
  switch (d) {
    case Device::cpu: return "cpu";
    case Device::cuda: return "cuda";
  }
  return "?";
}

namespace {

void free_host(void* p) { std::free(p); }

bool gpu_visible() {
#if COHORT_HAS_CUDA
  return !cuda::list_devices().devices.empty();
#else
  return false;
#endif
}

}  // namespace

Tensor Backend::alloc_host(int64_t n_rows, int64_t n_cols) {
  const size_t row_bytes = static_cast<size_t>(n_cols) * sizeof(float);
  const size_t n_bytes = static_cast<size_t>(n_rows) * row_bytes;
  void* p = n_bytes == 0 ? nullptr : std::calloc(n_bytes, 1);
  if (n_bytes != 0 && p == nullptr) fail("cannot allocate {} MiB of host outputs", n_bytes >> 20);
  return Tensor(static_cast<uint8_t*>(p), free_host, {nullptr, gguf::TensorType::F32, Device::cpu, n_rows, n_cols, row_bytes});
}

std::unique_ptr<comm::Communicator> Backend::communicator(comm::CpuGroup& group, int rank) {
  return std::make_unique<comm::CpuCommunicator>(group, rank);
}

std::string describe(const MemoryUse& m) {
  return fmt::format("on {}: weights {:.2f} GB, KV cache {:.2f} GB ({} tokens, k {}, v {}), workspace {:.2f} GB",
                     m.device, static_cast<double>(m.weights) / 1e9, static_cast<double>(m.kv) / 1e9, m.kv_tokens,
                     m.kv_type_k, m.kv_type_v, static_cast<double>(m.workspace) / 1e9);
}

void describe_kv(const kv::KvCacheShape& shape, MemoryUse& m) {
  m.kv_tokens = int64_t{shape.n_blocks} * shape.block_size;
  m.kv_type_k = gguf::type_name(shape.type_k);
  m.kv_type_v = gguf::type_name(shape.type_v);
}

DeviceChoice choose_device(const std::string& dev, int n_gpu_layers) {
  if (n_gpu_layers == 0 || dev == "cpu") return {Device::cpu, 0};
  if (dev.empty()) return gpu_visible() ? DeviceChoice{Device::cuda, 0} : DeviceChoice{Device::cpu, 0};
  if (dev.starts_with("cuda")) {
    const std::string n = dev.substr(4);
    if (n.empty()) return {Device::cuda, 0};
    if (n.size() <= 3 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return {Device::cuda, std::stoi(n)};
    }
  }
  fail("-dev: unknown device '{}' (cpu, cuda0, cuda1, ...; `cohort devices` lists them)", dev);
}

int repeated_gpu(const std::vector<DeviceChoice>& devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (devices[i].device == Device::cuda && devices[j].device == Device::cuda &&
          devices[i].index == devices[j].index) {
        return devices[i].index;
      }
    }
  }
  return -1;
}

std::string resolve_transport(const std::string& requested, const std::vector<DeviceChoice>& devices) {
  const bool gpus =
      std::any_of(devices.begin(), devices.end(), [](const DeviceChoice& d) { return d.device == Device::cuda; });
  if (requested != "p2p" || !gpus) return requested;  // CPU ranks have one transport
  std::string why;
  const char* disable = std::getenv("COHORT_DISABLE_P2P");
  if (disable != nullptr && std::string(disable) == "1") why = "COHORT_DISABLE_P2P=1";
#if COHORT_HAS_CUDA
  if (why.empty()) {
    const cuda::DeviceList list = cuda::list_devices();
    for (const DeviceChoice& a : devices) {
      for (const DeviceChoice& b : devices) {
        if (a.device != Device::cuda || b.device != Device::cuda || a.index == b.index) continue;
        const auto n = static_cast<int>(list.peer.size());
        if (a.index >= n || b.index >= n || !list.peer[a.index][b.index]) {
          why = fmt::format("cuda{} cannot reach cuda{} (no peer access)", a.index, b.index);
        }
      }
    }
  }
#endif
  if (why.empty()) return requested;
  fmt::print(stderr, "warning: -ar p2p: {}; reducing through the host (-ar host) instead\n", why);
  return "host";
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options, const BackendLimits& limits) {
  if (limits.n_max_tok < 1 || limits.n_max_ctx < 1 || limits.max_row < 1 || limits.head_dim < 1) {
    fail("backend: impossible limits ({} tokens, {} positions, rows of {}, heads of {})",
         limits.n_max_tok, limits.n_max_ctx, limits.max_row, limits.head_dim);
  }
  switch (options.device) {
    case Device::cpu: return std::make_unique<cpu::CpuBackend>(options, limits);
    case Device::cuda:
#if COHORT_HAS_CUDA
      return std::make_unique<cuda::CudaBackend>(options, limits);
#else
      break;
#endif
  }
  fail("device '{}' has no forward backend in this build (available: cpu)", device_name(options.device));
}

}  // namespace cohort::backend
