// Writes a GGUF model with random weights and correct metadata for a family
// and shape, in llama.cpp's tensor naming and layout (`cohort mkmodel`).
//
// Weights are uniform with standard deviation 1/sqrt(fan_in) (norm weights
// near 1), which keeps activations of order one through any number of layers.
// The values depend only on the seed, the tensor and the row: not on the
// number of threads.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/tensor_type.h"
#include "model/hparams.h"

namespace cohort::model {

struct RandomModelOptions {
  HParams hp;
  std::string preset_name;
  gguf::TensorType type = gguf::TensorType::F16;  // type of the matrices
  uint64_t seed = 42;
  int n_threads = 0;        // 0: all hardware threads
  std::string vocab_from;   // GGUF whose tokenizer to copy; empty: synthetic
};

// Throws cohort::Error for an unsupported type or an I/O failure.
void write_random_model(const RandomModelOptions& options, const std::string& path);

}  // namespace cohort::model
