// Tensors as they cross the backend seam: a typed, shaped view of memory on
// one device, and an owning buffer that a backend allocates.
//
// Every tensor the forward pass touches is 2-D: n_rows rows of n_cols
// elements of one element type (gguf::TensorType: activations in the
// backend's activation type, F32 or BF16, or a weight's file type), row r
// starting row_bytes after row r - 1. For a weight matrix a row is an
// output (GGUF shape [n_cols, n_rows]); for an activation a row is a token.
// A view never owns: TensorView (writable) and ConstTensorView (read-only)
// are plain data, copied freely, valid while the memory they point into
// lives. Tensor owns its memory (move-only, freed by the deleter of the
// backend that allocated it) and hands out views.
//
// Thread safety: plain data; views of disjoint rows may be written at once.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "gguf/tensor_type.h"

namespace cohort::backend {

enum class Device { cpu, cuda };

// Bytes per element of an activation type (F32, or BF16 on a GPU); 0 for
// any other type.
inline size_t activation_bytes(gguf::TensorType t) {
  return t == gguf::TensorType::F32 ? 4 : t == gguf::TensorType::BF16 ? 2 : 0;
}

const char* device_name(Device d);

template <typename Byte>
struct BasicTensorView {
  Byte* data = nullptr;
  gguf::TensorType type = gguf::TensorType::F32;
  Device device = Device::cpu;
  int64_t n_rows = 0;
  int64_t n_cols = 0;    // elements per row
  size_t row_bytes = 0;  // bytes from one row to the next

  // A writable view converts to a read-only one, not the other way.
  operator BasicTensorView<const Byte>() const {
    return {data, type, device, n_rows, n_cols, row_bytes};
  }

  bool empty() const { return data == nullptr; }
  Byte* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }

  // Rows [first, first + n). REQUIRES: 0 <= first, first + n <= n_rows.
  BasicTensorView rows(int64_t first, int64_t n) const {
    assert(first >= 0 && n >= 0 && first + n <= n_rows);
    return {row(first), type, device, n, n_cols, row_bytes};
  }

  // The same elements as [n_rows', n_cols'] rows.
  // REQUIRES: an activation type (F32 or BF16), rows contiguous,
  // n_rows' * n_cols' == n_rows * n_cols.
  BasicTensorView reshape(int64_t rows, int64_t cols) const {
    const size_t elem = activation_bytes(type);
    assert(elem > 0 && row_bytes == static_cast<size_t>(n_cols) * elem);
    assert(rows * cols == n_rows * n_cols);
    return {data, type, device, rows, cols, static_cast<size_t>(cols) * elem};
  }

  // The elements as F32. REQUIRES: type F32 (assert).
  auto f32() const {
    assert(type == gguf::TensorType::F32);
    using F = std::conditional_t<std::is_const_v<Byte>, const float, float>;
    return reinterpret_cast<F*>(data);
  }
};

using TensorView = BasicTensorView<uint8_t>;
using ConstTensorView = BasicTensorView<const uint8_t>;

// A contiguous F32 view [n_rows, n_cols] of host memory (norm weights,
// biases, logits buffers that live on the host).
inline ConstTensorView host_f32(std::span<const float> v, int64_t n_rows, int64_t n_cols) {
  assert(static_cast<int64_t>(v.size()) >= n_rows * n_cols);
  return {reinterpret_cast<const uint8_t*>(v.data()), gguf::TensorType::F32, Device::cpu, n_rows,
          n_cols, static_cast<size_t>(n_cols) * sizeof(float)};
}
inline TensorView host_f32(std::span<float> v, int64_t n_rows, int64_t n_cols) {
  assert(static_cast<int64_t>(v.size()) >= n_rows * n_cols);
  return {reinterpret_cast<uint8_t*>(v.data()), gguf::TensorType::F32, Device::cpu, n_rows, n_cols,
          static_cast<size_t>(n_cols) * sizeof(float)};
}

// Frees a Tensor's memory with the function of the backend that allocated it.
struct TensorDeleter {
  void (*free)(void*) = nullptr;
  void operator()(uint8_t* p) const {
    if (free != nullptr) free(p);
  }
};

// Memory a backend allocated, with the function that frees it.
class Tensor {
 public:
  using Free = void (*)(void*);

  Tensor() = default;
  // Takes ownership of `data`, freed with `free`. `shape` describes it.
  Tensor(uint8_t* data, Free free, TensorView shape) : buf_(data, TensorDeleter{free}), view_(shape) {
    view_.data = data;
  }

  TensorView view() { return view_; }
  ConstTensorView view() const { return view_; }
  int64_t n_rows() const { return view_.n_rows; }
  int64_t n_cols() const { return view_.n_cols; }
  size_t n_bytes() const { return static_cast<size_t>(view_.n_rows) * view_.row_bytes; }

 private:
  std::unique_ptr<uint8_t, TensorDeleter> buf_;
  TensorView view_;
};

}  // namespace cohort::backend
