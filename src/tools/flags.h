// llama.cpp spells some short flags with several letters after one dash
// (-ub, -np, -ngl, ...), which CLI11 does not accept as short names. Each is
// rewritten to its long form before parsing, so users type what they know.
#pragma once

#include <string>
#include <vector>

namespace cohort::tools {

// argv with llama.cpp's multi-letter short flags replaced by long ones.
std::vector<std::string> normalize_flags(int argc, char** argv);

// Settings that must be in place before CUDA starts, from the normalized
// arguments: with -sm tensor, CUDA_MODULE_LOADING=EAGER (unless the user set
// it). The ranks' reduction kernels (-ar p2p) wait for each other, and
// loading a kernel's module lazily, at its first launch, waits for the
// device to be idle: a rank that meets a kernel for the first time while a
// peer's reduction waits for it would wait for ever (NCCL documents the same
// hang for its kernels).
void prepare_environment(const std::vector<std::string>& args);

}  // namespace cohort::tools
