// `general.file_type`: the overall quantization of a model file, as llama.cpp
// names it (its llama_ftype enum).
#pragma once

#include <cstdint>
#include <string>

namespace cohort::gguf {

// "Q4_K_M", "BF16", ...; "unknown (N)" for ids llama.cpp does not define.
std::string file_type_name(int64_t id);

}  // namespace cohort::gguf
