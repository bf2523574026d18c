#include "backend/cuda/group_state.h"

#include <map>
#include <mutex>
#include <utility>

namespace cohort::cuda {

std::shared_ptr<void> group_state(const comm::CpuGroup& group, std::type_index kind,
                                  const std::function<std::shared_ptr<void>()>& make) {
  static std::mutex mu;
  static std::map<std::pair<const comm::CpuGroup*, std::type_index>, std::weak_ptr<void>> states;
  std::lock_guard lock(mu);
  std::erase_if(states, [](const auto& entry) { return entry.second.expired(); });  // groups gone
  std::weak_ptr<void>& slot = states[{&group, kind}];
  std::shared_ptr<void> s = slot.lock();
  if (!s) {
    s = make();
    slot = s;
  }
  return s;
}

}  // namespace cohort::cuda
