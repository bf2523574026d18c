// llama.cpp spells some short flags with several letters after one dash
// (-ub, -np, -ngl, ...), which CLI11 does not accept as short names. Each is
// rewritten to its long form before parsing, so users type what they know.
#pragma once

#include <string>
#include <vector>

namespace cohort::tools {

// argv with llama.cpp's multi-letter short flags replaced by long ones.
std::vector<std::string> normalize_flags(int argc, char** argv);

}  // namespace cohort::tools
