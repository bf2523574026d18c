// Named model shapes for `cohort mkmodel`: real published shapes (so that
// benchmarks on random weights move the same bytes as the real model) and a
// tiny one for tests.
#pragma once

#include <string>
#include <vector>

#include "model/hparams.h"

namespace cohort::model {

// Throws cohort::Error listing the preset names for an unknown one.
HParams preset(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace cohort::model
