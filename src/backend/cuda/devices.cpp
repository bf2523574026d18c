#include "backend/cuda/devices.h"

#include <array>

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_check.h"

namespace cohort::cuda {
namespace {

DeviceInfo query(int index) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.total_bytes = prop.totalGlobalMem;
  std::array<char, 32> bus{};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), index));
  info.pci_bus_id = bus.data();
  size_t free = 0, total = 0;
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  info.free_bytes = free;
  return info;
}

}  // namespace

DeviceList list_devices() {
  DeviceList list;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    list.none_reason = cudaGetErrorString(status);
    (void)cudaGetLastError();  // clear the sticky error for later calls
    return list;
  }
  if (count == 0) {
    list.none_reason = "no CUDA device is visible";
    return list;
  }
  // query() makes each device current (cudaMemGetInfo reads the current
  // one); the caller's current device is restored afterwards.
  int current = 0;
  CUDA_CHECK(cudaGetDevice(&current));
  for (int i = 0; i < count; ++i) list.devices.push_back(query(i));
  CUDA_CHECK(cudaSetDevice(current));
  list.peer.assign(static_cast<size_t>(count), std::vector<bool>(static_cast<size_t>(count), false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      int can = 0;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can, i, j));
      list.peer[static_cast<size_t>(i)][static_cast<size_t>(j)] = can != 0;
    }
  }
  return list;
}

}  // namespace cohort::cuda
