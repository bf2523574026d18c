// The sampling flags of llama.cpp (--temp, --top-k, ...), shared by the
// commands that generate.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/decoder.h"
#include "engine/sampler.h"

namespace cohort::tools {

void add_sampling_flags(CLI::App* cmd, engine::SamplingParams& p);
// -c -b -ub -t --poll --exact
void add_decoder_flags(CLI::App* cmd, engine::DecoderOptions& o);

}  // namespace cohort::tools
