#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/error.h"

namespace cohort::gguf {

// Reads the header of a GGUF file from a byte span with bounds checks. Every
// failure names the file, the field and the offset at which it was read.
class HeaderParser {
 public:
  HeaderParser(std::span<const uint8_t> bytes, const std::string& name)
      : bytes_(bytes), name_(name) {}

  void parse(GgufFile& out);

 private:
  uint64_t remaining() const { return bytes_.size() - pos_; }

  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> format, Args&&... args) const {
    fail("{}: {} (at byte {})", name_, fmt::format(format, std::forward<Args>(args)...), pos_);
  }

  // Names a field for error messages without formatting anything unless an
  // error happens (the vocabulary alone has hundreds of thousands of values).
  struct Field {
    std::string_view what;
    std::string_view key = {};
  };

  void need(uint64_t n, Field field) const {
    if (n > remaining()) {
      if (field.key.empty()) error("truncated: {} needs {} bytes, {} remain", field.what, n, remaining());
      error("truncated: {} '{}' needs {} bytes, {} remain", field.what, field.key, n, remaining());
    }
  }

  template <typename T>
  T read(Field what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(Field what);
  ValueType read_value_type(Field what);
  Value read_value(ValueType type, const std::string& key, uint32_t depth);
  Array read_array(const std::string& key, uint32_t depth);
  void read_metadata(GgufFile& out, uint64_t n_kv);
  void read_tensor_infos(GgufFile& out, uint64_t n_tensors);
  TensorInfo read_tensor_info();
  void place_data(GgufFile& out);

  std::span<const uint8_t> bytes_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

std::string HeaderParser::read_string(Field what) {
  auto len = read<uint64_t>(what);
  need(len, what);
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return s;
}

ValueType HeaderParser::read_value_type(Field what) {
  auto t = read<uint32_t>(what);
  if (t >= kValueTypeCount) error("{} '{}' is an unknown value type: {}", what.what, what.key, t);
  return static_cast<ValueType>(t);
}

Array HeaderParser::read_array(const std::string& key, uint32_t depth) {
  if (depth >= kMaxArrayDepth) {
    error("metadata '{}': arrays nested deeper than {}", key, kMaxArrayDepth);
  }
  Array a;
  a.elem_type = read_value_type({"element type of array", key});
  auto n = read<uint64_t>({"length of array", key});
  // Every element occupies at least min_encoded_size bytes: check before reserving.
  uint64_t min_each = min_encoded_size(a.elem_type);
  if (n > remaining() / min_each) {
    error("metadata '{}': array of {} {} elements exceeds the {} bytes that remain", key, n,
          value_type_name(a.elem_type), remaining());
  }
  a.items.reserve(n);
  for (uint64_t i = 0; i < n; ++i) a.items.push_back(read_value(a.elem_type, key, depth + 1));
  return a;
}

Value HeaderParser::read_value(ValueType type, const std::string& key, uint32_t depth) {
  const Field what{"value of metadata", key};
  switch (type) {
    case ValueType::UINT8: return Value(read<uint8_t>(what));
    case ValueType::INT8: return Value(read<int8_t>(what));
    case ValueType::UINT16: return Value(read<uint16_t>(what));
    case ValueType::INT16: return Value(read<int16_t>(what));
    case ValueType::UINT32: return Value(read<uint32_t>(what));
    case ValueType::INT32: return Value(read<int32_t>(what));
    case ValueType::FLOAT32: return Value(read<float>(what));
    case ValueType::UINT64: return Value(read<uint64_t>(what));
    case ValueType::INT64: return Value(read<int64_t>(what));
    case ValueType::FLOAT64: return Value(read<double>(what));
    case ValueType::BOOL: {
      auto b = read<uint8_t>(what);
      if (b > 1) error("metadata '{}': bool has byte value {}", key, b);
      return Value(b == 1);
    }
    case ValueType::STRING: return Value(read_string(what));
    case ValueType::ARRAY: return Value(read_array(key, depth));
  }
  error("metadata '{}': unknown value type {}", key, static_cast<uint32_t>(type));
}

void HeaderParser::read_metadata(GgufFile& out, uint64_t n_kv) {
  constexpr uint64_t kMinKvBytes = 8 + 4 + 1;  // key length, type, smallest value
  if (n_kv > remaining() / kMinKvBytes) {
    error("metadata count {} exceeds what the {} remaining bytes can hold", n_kv, remaining());
  }
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = read_string({"key of a metadata entry"});
    ValueType type = read_value_type({"type of metadata", key});
    Value value = read_value(type, key, 0);
    if (!out.metadata_.insert(key, std::move(value))) error("duplicate metadata key '{}'", key);
  }
  if (const Value* a = out.metadata_.find("general.alignment")) {
    auto align = a->type() == ValueType::UINT32 ? a->as_int() : std::nullopt;
    if (!align) {
      error("general.alignment has type {}, expected uint32", value_type_name(a->type()));
    }
    if (*align == 0 || (*align & (*align - 1)) != 0) {
      error("general.alignment is {}, expected a non-zero power of two", *align);
    }
    out.alignment_ = static_cast<uint32_t>(*align);
  }
}

TensorInfo HeaderParser::read_tensor_info() {
  TensorInfo t;
  t.name = read_string({"name of a tensor"});
  auto n_dims = read<uint32_t>({"dimension count of tensor", t.name});
  if (n_dims == 0 || n_dims > kMaxDims) {
    error("tensor '{}' has {} dimensions, expected 1 to {}", t.name, n_dims, kMaxDims);
  }
  uint64_t n = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    auto ne = read<int64_t>({"a dimension of tensor", t.name});
    if (ne <= 0) error("tensor '{}' has dimension {} of size {}", t.name, d, ne);
    if (static_cast<uint64_t>(ne) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n) {
      error("tensor '{}': element count overflows at dimension {} ({})", t.name, d, ne);
    }
    n *= static_cast<uint64_t>(ne);
    t.shape.push_back(ne);
  }
  t.n_elements = n;
  auto type_id = read<uint32_t>({"type of tensor", t.name});
  auto tt = type_traits(type_id);
  if (!tt) error("tensor '{}' has unknown type id {}", t.name, type_id);
  t.type = static_cast<TensorType>(type_id);
  if (t.shape[0] % tt->block_size != 0) {
    error("tensor '{}': row size {} is not a multiple of the {} block size {}", t.name, t.shape[0],
          tt->name, tt->block_size);
  }
  // n / block_size * type_size cannot overflow: type_size <= 292 and n < 2^63.
  t.n_bytes = n / tt->block_size * tt->type_size;
  t.offset = read<uint64_t>({"data offset of tensor", t.name});
  return t;
}

void HeaderParser::read_tensor_infos(GgufFile& out, uint64_t n_tensors) {
  constexpr uint64_t kMinTensorBytes = 8 + 4 + 8 + 4 + 8;  // name len, n_dims, one dim, type, offset
  if (n_tensors > remaining() / kMinTensorBytes) {
    error("tensor count {} exceeds what the {} remaining bytes can hold", n_tensors, remaining());
  }
  out.tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t = read_tensor_info();
    if (!out.tensor_index_.emplace(t.name, out.tensors_.size()).second) {
      error("duplicate tensor name '{}'", t.name);
    }
    out.tensors_.push_back(std::move(t));
  }
}

void HeaderParser::place_data(GgufFile& out) {
  const uint64_t align = out.alignment_;
  uint64_t data = (pos_ + align - 1) / align * align;
  out.data_offset_ = data;
  if (out.tensors_.empty()) return;
  if (data > bytes_.size()) {
    error("truncated: data section would start at byte {} but the file has {} bytes", data,
          bytes_.size());
  }
  const uint64_t data_size = bytes_.size() - data;
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(out.tensors_.size());
  for (const TensorInfo& t : out.tensors_) {
    if (t.offset % align != 0) {
      error("tensor '{}' data offset {} is not a multiple of the alignment {}", t.name, t.offset,
            align);
    }
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      error("tensor '{}' data [{}, +{}) lies outside the data section of {} bytes (file truncated?)",
            t.name, t.offset, t.n_bytes, data_size);
    }
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    if (prev.offset + prev.n_bytes > by_offset[i]->offset) {
      error("tensor '{}' data overlaps tensor '{}'", by_offset[i]->name, prev.name);
    }
  }
}

void HeaderParser::parse(GgufFile& out) {
  auto magic = read<uint32_t>({"magic"});
  if (magic != kMagic) {
    error("not a GGUF file: magic is 0x{:08x}, expected 0x{:08x} (\"GGUF\")", magic, kMagic);
  }
  auto version = read<uint32_t>({"version"});
  if (version == 0x02000000u || version == 0x03000000u) {
    error("big-endian GGUF files are not supported");
  }
  if (version != 2 && version != 3) {
    error("unsupported GGUF version {} (supported: 2, 3)", version);
  }
  out.version_ = version;
  auto n_tensors = read<uint64_t>({"tensor count"});
  auto n_kv = read<uint64_t>({"metadata count"});
  read_metadata(out, n_kv);
  read_tensor_infos(out, n_tensors);
  place_data(out);
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, const std::string& name) {
  GgufFile f;
  f.bytes_ = bytes;
  f.name_ = name;
  HeaderParser(bytes, f.name_).parse(f);
  return f;
}

GgufFile GgufFile::open(const std::string& path) {
  MappedFile mapping(path);
  GgufFile f = parse(mapping.bytes(), path);
  f.mapping_.emplace(std::move(mapping));  // the mapping's address does not change on move
  return f;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const TensorInfo& info) const {
  return bytes_.subspan(data_offset_ + info.offset, info.n_bytes);
}

std::string GgufFile::architecture() const {
  auto arch = metadata_.get_string("general.architecture");
  if (!arch) fail("{}: metadata 'general.architecture' is missing", name_);
  return *arch;
}

}  // namespace cohort::gguf
