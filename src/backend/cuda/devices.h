// The CUDA devices this process can use, and which pairs can reach each
// other's memory directly (peer access: what `--allreduce p2p` needs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cohort::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  int cc_major = 0;  // compute capability
  int cc_minor = 0;
  int sm_count = 0;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

struct DeviceList {
  std::vector<DeviceInfo> devices;
  // peer[i][j]: device i can access device j's memory (false on the diagonal).
  std::vector<std::vector<bool>> peer;
  // Why there are no devices (no driver, no GPU), empty when there are some.
  std::string none_reason;
};

// Queries every visible device. A machine without a GPU or driver gives an
// empty list with none_reason set, not an error.
DeviceList list_devices();

}  // namespace cohort::cuda
