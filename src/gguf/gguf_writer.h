// GGUF v3 writer.
//
// Metadata and tensor descriptions are collected first; write() then emits the
// header and streams each tensor's data, asking a fill callback for it one
// tensor at a time, so that multi-gigabyte models never sit in memory whole.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"
#include "gguf/value.h"

namespace cohort::gguf {

class GgufWriter {
 public:
  // Fills exactly the tensor's byte count.
  using Fill = std::function<void(std::span<uint8_t> out)>;

  Metadata& metadata() { return metadata_; }

  // shape in ggml order (shape[0] contiguous). Throws cohort::Error for a
  // duplicate name or a row size that is not a multiple of the block size.
  void add_tensor(std::string name, std::vector<int64_t> shape, TensorType type, Fill fill);
  // Convenience: copies `data` (which must have the tensor's byte count).
  void add_tensor(std::string name, std::vector<int64_t> shape, TensorType type,
                  std::span<const uint8_t> data);

  // Writes the file; throws cohort::Error naming the path on I/O failure.
  void write(const std::string& path) const;

  uint32_t alignment() const;

 private:
  struct Pending {
    std::string name;
    std::vector<int64_t> shape;
    TensorType type;
    uint64_t n_bytes;
    Fill fill;
  };
  Metadata metadata_;
  std::vector<Pending> tensors_;
};

}  // namespace cohort::gguf
