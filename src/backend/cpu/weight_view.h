// A non-owning view of a 2-D weight matrix in its file type.
//
// Layout follows ggml: the matrix has `n_out` rows of `n_in` elements each
// (GGUF shape [n_in, n_out]); row r starts at data + r * row_bytes. A matmul
// computes y[t][r] = dot(row r, x[t]).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"

namespace cohort::cpu {

struct WeightView {
  gguf::TensorType type = gguf::TensorType::F32;
  const uint8_t* data = nullptr;  // view into the mapped model file (or a shard)
  int64_t n_in = 0;               // elements per row
  int64_t n_out = 0;              // rows
  size_t row_bytes = 0;

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  bool empty() const { return data == nullptr; }
};

}  // namespace cohort::cpu
