// Tensor element types of the GGUF format (ggml's `ggml_type` ids) and their
// block geometry. Every type a GGUF file may name is listed, so that any file
// can be validated and described; which of them can be computed on is decided
// by quant/ (quant::is_supported).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cohort::gguf {

enum class TensorType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
  IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28,
  IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct TypeTraits {
  std::string_view name;  // as ggml spells it: "q4_K", "bf16", ...
  uint32_t block_size;    // elements per block
  uint32_t type_size;     // bytes per block
};

// Traits of a known type id, or nullopt for an id no GGUF file may contain.
std::optional<TypeTraits> type_traits(uint32_t id);
// Traits of a known type (never fails).
const TypeTraits& traits(TensorType type);
std::string_view type_name(TensorType type);
// Looks a type up by its ggml name, case-insensitively ("q4_k", "Q8_0", "bf16").
std::optional<TensorType> type_from_name(std::string_view name);

// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(TensorType type, int64_t n) {
  const TypeTraits& t = traits(type);
  return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace cohort::gguf
