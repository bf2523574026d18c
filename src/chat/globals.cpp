#include "chat/globals.h"

#include <ctime>
#include <fmt/format.h>

#include "chat/eval_context.h"

namespace cohort::chat {
namespace {

// jinja2.sandbox.MAX_RANGE
constexpr size_t kMaxRange = 100000;

Value raise_exception(const CallArgs& args) {
  ArgReader a(args, "raise_exception", {"message"});
  fault(ErrorKind::Raised, a.get(0) ? to_str(*a.get(0)) : "");
}

Value range(const CallArgs& args) {
  if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3) {
    runtime_fault("range() takes 1 to 3 positional arguments");
  }
  for (const Value& v : args.positional) {
    if (!v.is_integral()) runtime_fault("range() arguments must be integers");
  }
  int64_t b[3] = {0, 0, 1};  // start, stop, step
  if (args.positional.size() == 1) {
    b[1] = args.positional[0].as_int();
  } else {
    for (size_t i = 0; i < args.positional.size(); ++i) b[i] = args.positional[i].as_int();
  }
  if (b[2] == 0) runtime_fault("range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t v = b[0]; b[2] > 0 ? v < b[1] : v > b[1]; v += b[2]) {
    if (out.size() >= kMaxRange) {
      runtime_fault("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    out.push_back(Value::integer(v));
    if ((b[2] > 0 && v > INT64_MAX - b[2]) || (b[2] < 0 && v < INT64_MIN - b[2])) break;
  }
  return Value::range(std::move(out), b[2] == 1 ? fmt::format("range({}, {})", b[0], b[1])
                                                : fmt::format("range({}, {}, {})", b[0], b[1], b[2]));
}

Value dict(const CallArgs& args) {
  if (!args.positional.empty()) fault(ErrorKind::Unsupported, "dict() with positional arguments is not supported");
  DictData d;
  for (const auto& [k, v] : args.keyword) d.set(Value::string(k), v);
  return Value::dict(std::move(d));
}

Value make_namespace(const CallArgs& args, std::vector<std::shared_ptr<ObjectData>>* objects) {
  if (args.positional.size() > 1) runtime_fault("namespace() takes at most one positional argument");
  auto ns = std::make_shared<ObjectData>();
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (!init.is_dict()) runtime_fault("namespace() argument must be a mapping");
    for (const auto& [k, v] : init.dict().entries()) ns->attrs.set(k, v);
  }
  for (const auto& [k, v] : args.keyword) ns->attrs.set(Value::string(k), v);
  objects->push_back(ns);
  return Value::object(std::move(ns));
}

// datetime.now().strftime(format), in local time as transformers does.
Value strftime_now(const CallArgs& args) {
  ArgReader a(args, "strftime_now", {"format"});
  const Value& f = a.required(0);
  if (!f.is_string()) runtime_fault("strftime_now() format must be a string");
  if (f.str().size() > 256) fault(ErrorKind::Unsupported, "strftime_now() format too long");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[4096];
  const size_t n = std::strftime(buf, sizeof(buf), f.str().c_str(), &tm);
  return Value::string(std::string(buf, n));
}

}  // namespace

std::vector<std::pair<std::string, Value>> builtin_globals(std::vector<std::shared_ptr<ObjectData>>* objects) {
  return {
      {"raise_exception", Value::function("raise_exception", raise_exception)},
      {"range", Value::function("range", range)},
      {"dict", Value::function("dict", dict)},
      {"namespace", Value::function("namespace", [objects](const CallArgs& a) { return make_namespace(a, objects); })},
      {"strftime_now", Value::function("strftime_now", strftime_now)},
  };
}

}  // namespace cohort::chat
