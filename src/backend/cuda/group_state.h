// State that the GPU ranks of one comm::CpuGroup share (the p2p peers'
// buffers, NCCL's unique id): the first rank to ask makes it, the others get
// the same object; it lives as long as a rank holds it.
#pragma once

#include <functional>
#include <memory>
#include <typeindex>

#include "comm/cpu_communicator.h"

namespace cohort::cuda {

std::shared_ptr<void> group_state(const comm::CpuGroup& group, std::type_index kind,
                                  const std::function<std::shared_ptr<void>()>& make);

// Thread safety: any rank thread, any time.
template <class T>
std::shared_ptr<T> group_state(const comm::CpuGroup& group, const std::function<std::shared_ptr<T>()>& make) {
  return std::static_pointer_cast<T>(group_state(group, typeid(T), [&make] { return std::shared_ptr<void>(make()); }));
}

}  // namespace cohort::cuda
