// GGUF v2/v3 reader.
//
// GgufFile validates a whole header before anything trusts it: magic, version,
// every length and count against the bytes that remain, nesting depth of
// arrays, tensor shapes (no overflow), types, alignment, and that every
// tensor's data lies inside the file without overlapping another. Any failure
// throws cohort::Error naming the field and the offending value; nothing is
// allocated from a header value that was not first checked against the size
// of the file.
//
// Tensor data is not copied: tensor_data() returns views into the mapping
// (or into the caller's buffer, for parse()).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mapped_file.h"
#include "gguf/tensor_type.h"
#include "gguf/value.h"

namespace cohort::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
inline constexpr uint32_t kMaxArrayDepth = 8;    // nested arrays deeper than this are refused

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
  TensorType type = TensorType::F32;
  uint64_t offset = 0;         // from the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;

  int64_t ne(size_t i) const { return i < shape.size() ? shape[i] : 1; }
  int64_t n_rows() const { return shape.empty() ? 1 : static_cast<int64_t>(n_elements) / shape[0]; }
};

class GgufFile {
 public:
  // Maps and validates the file. Throws cohort::Error naming the path and the fault.
  static GgufFile open(const std::string& path);
  // Validates bytes held by the caller, who keeps them alive as long as the
  // returned object. `name` is used in error messages.
  static GgufFile parse(std::span<const uint8_t> bytes, const std::string& name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute, in bytes
  uint64_t file_size() const { return bytes_.size(); }
  const Metadata& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  const TensorInfo* find_tensor(std::string_view name) const;
  std::span<const uint8_t> tensor_data(const TensorInfo& info) const;
  // The data section: every tensor's bytes lie inside it.
  std::span<const uint8_t> data_section() const { return bytes_.subspan(data_offset_); }

  // "general.architecture", or an error naming the file if it is missing.
  std::string architecture() const;

 private:
  GgufFile() = default;

  std::optional<MappedFile> mapping_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;

  friend class HeaderParser;
};

}  // namespace cohort::gguf
