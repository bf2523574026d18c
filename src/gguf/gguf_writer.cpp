#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "common/error.h"
#include "gguf/gguf_file.h"

namespace cohort::gguf {
namespace {

class Output {
 public:
  explicit Output(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) fail("cannot create '{}': {}", path, std::strerror(errno));
  }
  ~Output() {
    if (f_) std::fclose(f_);
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void bytes(const void* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f_) != n) fail("write to '{}' failed", path_);
    pos_ += n;
  }
  template <typename T>
  void pod(T v) { bytes(&v, sizeof v); }
  void string(const std::string& s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(uint64_t align) {
    static constexpr uint8_t kZeros[256] = {};
    uint64_t n = (align - pos_ % align) % align;
    while (n > 0) {
      uint64_t k = n < sizeof kZeros ? n : sizeof kZeros;
      bytes(kZeros, k);
      n -= k;
    }
  }
  void close() {
    if (std::fclose(std::exchange(f_, nullptr)) != 0) fail("closing '{}' failed", path_);
  }

 private:
  std::string path_;
  FILE* f_;
  uint64_t pos_ = 0;
};

void write_value(Output& out, const Value& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out.string(x);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Array>>) {
          out.pod<uint32_t>(static_cast<uint32_t>(x->elem_type));
          out.pod<uint64_t>(x->items.size());
          for (const Value& item : x->items) write_value(out, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          out.pod<uint8_t>(x ? 1 : 0);
        } else {
          out.pod<T>(x);
        }
      },
      v.storage());
}

void check_array_types(const std::string& key, const Value& v) {
  const Array* a = v.as_array();
  if (!a) return;
  for (const Value& item : a->items) {
    if (item.type() != a->elem_type) {
      fail("metadata '{}': array of {} holds a {}", key, value_type_name(a->elem_type),
           value_type_name(item.type()));
    }
    check_array_types(key, item);
  }
}

}  // namespace

uint32_t GgufWriter::alignment() const {
  auto a = metadata_.get_int("general.alignment");
  return a ? static_cast<uint32_t>(*a) : kDefaultAlignment;
}

void GgufWriter::add_tensor(std::string name, std::vector<int64_t> shape, TensorType type,
                            Fill fill) {
  for (const Pending& p : tensors_) {
    if (p.name == name) fail("duplicate tensor name '{}'", name);
  }
  if (shape.empty() || shape.size() > kMaxDims) {
    fail("tensor '{}' has {} dimensions, expected 1 to {}", name, shape.size(), kMaxDims);
  }
  const TypeTraits& t = traits(type);
  if (shape[0] % t.block_size != 0) {
    fail("tensor '{}': row size {} is not a multiple of the {} block size {}", name, shape[0],
         t.name, t.block_size);
  }
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) fail("tensor '{}' has a dimension of size {}", name, d);
    n *= static_cast<uint64_t>(d);
  }
  uint64_t n_bytes = n / t.block_size * t.type_size;
  tensors_.push_back({std::move(name), std::move(shape), type, n_bytes, std::move(fill)});
}

void GgufWriter::add_tensor(std::string name, std::vector<int64_t> shape, TensorType type,
                            std::span<const uint8_t> data) {
  std::vector<uint8_t> copy(data.begin(), data.end());
  auto fill = [copy = std::move(copy), name](std::span<uint8_t> out) {
    if (out.size() != copy.size()) {
      fail("tensor '{}': {} bytes given, the shape needs {}", name, copy.size(), out.size());
    }
    std::memcpy(out.data(), copy.data(), copy.size());
  };
  add_tensor(std::move(name), std::move(shape), type, std::move(fill));
}

void GgufWriter::write(const std::string& path) const {
  const uint64_t align = alignment();
  Output out(path);
  out.pod<uint32_t>(kMagic);
  out.pod<uint32_t>(3);
  out.pod<uint64_t>(tensors_.size());
  out.pod<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_.entries()) {
    check_array_types(key, value);
    out.string(key);
    out.pod<uint32_t>(static_cast<uint32_t>(value.type()));
    write_value(out, value);
  }
  uint64_t offset = 0;
  for (const Pending& t : tensors_) {
    out.string(t.name);
    out.pod<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) out.pod<int64_t>(d);
    out.pod<uint32_t>(static_cast<uint32_t>(t.type));
    out.pod<uint64_t>(offset);
    offset += (t.n_bytes + align - 1) / align * align;
  }
  out.pad_to(align);
  std::vector<uint8_t> buffer;
  for (const Pending& t : tensors_) {
    buffer.assign(t.n_bytes, 0);
    t.fill(buffer);
    out.bytes(buffer.data(), buffer.size());
    out.pad_to(align);
  }
  out.close();
}

}  // namespace cohort::gguf
