// The global functions templates can call, as transformers provides them:
// jinja2's range (bounded like its sandbox), dict and namespace, plus
// raise_exception and strftime_now.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace cohort::chat {

// (name, function) pairs. namespace() records every object it makes in
// `objects` (which must outlive the functions) so that the render can break
// reference cycles between them when it ends.
std::vector<std::pair<std::string, Value>> builtin_globals(std::vector<std::shared_ptr<ObjectData>>* objects);

}  // namespace cohort::chat
