// The sampling flags of llama.cpp (--temp, --top-k, ...), shared by the
// commands that generate.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/decoder.h"
#include "engine/sampler.h"

namespace cohort::tools {

void add_sampling_flags(CLI::App* cmd, engine::SamplingParams& p);
// -c -b -ub -t --poll --exact -dev -ngl -sm -ts
void add_decoder_flags(CLI::App* cmd, engine::DecoderOptions& o);
// -sm/--split-mode and -ts/--tensor-split (as llama.cpp: proportions
// separated by ',' or '/').
void add_split_flags(CLI::App* cmd, std::string& split_mode, std::vector<float>& tensor_split);
// The -ts proportions of `text`. Throws cohort::Error naming an entry that is
// not a number.
std::vector<float> parse_tensor_split(const std::string& text);

}  // namespace cohort::tools
