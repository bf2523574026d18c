// What the evaluator shares with operators, filters, tests and methods while
// one template renders: the limits and the work done so far, and a reader for
// call arguments.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat/template_error.h"
#include "chat/value.h"

namespace cohort::chat {

// Bounds on one render. A template is untrusted input: these keep a render
// finite in time, memory and stack whatever the template does.
struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;      // rendered text
  uint64_t max_loop_iterations = 1'000'000;        // for-loop iterations, all loops together
  int max_depth = 500;                             // nested evaluation: expressions, blocks, macro calls
  uint64_t max_work_bytes = uint64_t{1} << 30;     // bytes of strings and lists built, all together
};

// No single string or list may be larger than this (a list counts 32 bytes an item).
inline constexpr size_t kMaxValueBytes = size_t{64} << 20;

// Faults (Limit) if a value of `bytes` may not be built.
void check_value_size(size_t bytes);

class EvalContext {
 public:
  explicit EvalContext(const RenderLimits& limits) : limits_(limits) {}

  const RenderLimits& limits() const { return limits_; }
  // Counts `bytes` of work; faults (Limit) past max_work_bytes.
  void charge(size_t bytes);
  // Counts one loop iteration; faults (Limit) past max_loop_iterations.
  void count_iteration();

 private:
  const RenderLimits& limits_;
  uint64_t work_bytes_ = 0;
  uint64_t iterations_ = 0;
};

// Binds call arguments to declared parameter names, as Python does:
// positional first, then keywords; unknown keywords and surplus positionals fault.
class ArgReader {
 public:
  ArgReader(const CallArgs& args, std::string_view callee, std::initializer_list<const char*> params);

  // The i-th declared parameter, or nullptr when not given.
  const Value* get(size_t i) const { return values_[i]; }
  Value get_or(size_t i, Value fallback) const { return values_[i] ? *values_[i] : std::move(fallback); }
  // Faults when the i-th parameter is missing.
  const Value& required(size_t i) const;

 private:
  std::string callee_;
  std::vector<std::string> names_;
  std::vector<const Value*> values_;
};

}  // namespace cohort::chat
