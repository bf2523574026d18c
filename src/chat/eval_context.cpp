#include "chat/eval_context.h"

#include <fmt/format.h>

namespace cohort::chat {

void check_value_size(size_t bytes) {
  if (bytes > kMaxValueBytes) {
    fault(ErrorKind::Limit, fmt::format("value of {} bytes exceeds the limit of {} bytes", bytes, kMaxValueBytes));
  }
}

void EvalContext::charge(size_t bytes) {
  work_bytes_ += bytes;
  if (work_bytes_ > limits_.max_work_bytes) {
    fault(ErrorKind::Limit, fmt::format("template builds more than {} bytes of values", limits_.max_work_bytes));
  }
}

void EvalContext::count_iteration() {
  if (++iterations_ > limits_.max_loop_iterations) {
    fault(ErrorKind::Limit, fmt::format("template runs more than {} loop iterations", limits_.max_loop_iterations));
  }
}

ArgReader::ArgReader(const CallArgs& args, std::string_view callee, std::initializer_list<const char*> params)
    : callee_(callee), names_(params.begin(), params.end()), values_(params.size(), nullptr) {
  if (args.positional.size() > names_.size()) {
    runtime_fault(fmt::format("{}() takes at most {} argument(s) ({} given)", callee_, names_.size(),
                              args.positional.size()));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) runtime_fault(fmt::format("{}() got an unexpected keyword argument '{}'", callee_, key));
    if (values_[i]) runtime_fault(fmt::format("{}() got multiple values for argument '{}'", callee_, key));
    values_[i] = &value;
  }
}

const Value& ArgReader::required(size_t i) const {
  if (!values_[i]) runtime_fault(fmt::format("{}() missing required argument '{}'", callee_, names_[i]));
  return *values_[i];
}

}  // namespace cohort::chat
