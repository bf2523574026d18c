// A read-only memory mapping of a whole file (RAII; move-only).
//
// Model weights are used straight from the mapping: loading a model copies
// nothing, and pages are read on first touch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace cohort {

class MappedFile {
 public:
  // Maps `path` read-only. Throws cohort::Error naming the path on failure.
  // An empty file maps to an empty span.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cohort
