// `cohort devices [--json]`: the CUDA devices this build can use, their
// memory, and which pairs have peer access (llama.cpp's --list-devices).
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tools/commands.h"

#if defined(COHORT_HAS_CUDA)
#include "backend/cuda/devices.h"
#endif

namespace cohort::tools {
namespace {

#if defined(COHORT_HAS_CUDA)

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

nlohmann::ordered_json to_json(const cuda::DeviceList& list) {
  nlohmann::ordered_json j;
  j["devices"] = nlohmann::ordered_json::array();
  for (const cuda::DeviceInfo& d : list.devices) {
    j["devices"].push_back({{"index", d.index},
                            {"name", d.name},
                            {"pci_bus_id", d.pci_bus_id},
                            {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                            {"sm_count", d.sm_count},
                            {"total_bytes", d.total_bytes},
                            {"free_bytes", d.free_bytes}});
  }
  j["peer_access"] = list.peer;
  if (!list.none_reason.empty()) j["none_reason"] = list.none_reason;
  return j;
}

void print_text(const cuda::DeviceList& list) {
  if (list.devices.empty()) {
    fmt::print("no CUDA devices: {}\n", list.none_reason);
    return;
  }
  fmt::print("{} CUDA device(s):\n", list.devices.size());
  for (const cuda::DeviceInfo& d : list.devices) {
    fmt::print("  {}: {} (compute {}.{}, {} SMs, {:.1f} GiB, {:.1f} GiB free, PCI {})\n", d.index,
               d.name, d.cc_major, d.cc_minor, d.sm_count, static_cast<double>(d.total_bytes) / kGiB,
               static_cast<double>(d.free_bytes) / kGiB, d.pci_bus_id);
  }
  for (size_t i = 0; i < list.peer.size(); ++i) {
    for (size_t j = i + 1; j < list.peer.size(); ++j) {
      fmt::print("  peer access {} <-> {}: {}\n", i, j,
                 list.peer[i][j] && list.peer[j][i] ? "yes" : "no");
    }
  }
}

#endif

}  // namespace

void register_devices(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("devices", "list the CUDA devices and their peer access");
  cmd->add_flag("--json", *json, "print JSON");
  cmd->callback([json] {
#if defined(COHORT_HAS_CUDA)
    const cuda::DeviceList list = cuda::list_devices();
    if (*json) {
      fmt::print("{}\n", to_json(list).dump(2));
    } else {
      print_text(list);
    }
#else
    (void)json;
    fail("devices: this cohort was built without CUDA (configure with -DCOHORT_CUDA=ON)");
#endif
  });
}

}  // namespace cohort::tools
