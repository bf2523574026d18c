// Loads a model file and starts an EngineLoop on it: the GenerationService
// that `cohort serve` runs. The returned object owns the model and its
// tokenizer; destroying it stops the engine thread first.
#pragma once

#include <memory>
#include <string>

#include "server/engine_loop.h"
#include "server/generation.h"

namespace cohort::server {

// Throws cohort::Error naming the file or option at fault.
std::unique_ptr<GenerationService> start_engine(const std::string& model_path,
                                                const EngineOptions& options);

}  // namespace cohort::server
