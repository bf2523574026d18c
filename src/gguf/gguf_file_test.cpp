// Reader and writer: round trips of every value type, and one test per
// validation rule (each must fail with a message naming the fault).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace cohort::gguf {
namespace gguf_file_test {

// Builds GGUF bytes by hand, so that tests can write what no writer would.
class Bytes {
 public:
  template <typename T>
  Bytes& pod(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof v);
    return *this;
  }
  Bytes& str(const std::string& s) {
    pod<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return pod<uint32_t>(kMagic).pod<uint32_t>(version).pod(n_tensors).pod(n_kv);
  }
  Bytes& kv_u32(const std::string& key, uint32_t v) {
    return str(key).pod<uint32_t>(static_cast<uint32_t>(ValueType::UINT32)).pod(v);
  }
  Bytes& tensor(const std::string& name, std::vector<int64_t> shape, uint32_t type,
                uint64_t offset) {
    str(name).pod<uint32_t>(static_cast<uint32_t>(shape.size()));
    for (int64_t d : shape) pod(d);
    return pod(type).pod(offset);
  }
  Bytes& pad(size_t align) {
    while (b_.size() % align != 0) b_.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  const std::vector<uint8_t>& get() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile::parse(bytes, "test.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_PARSE_ERROR(bytes, substring)                  \
  do {                                                        \
    std::string msg_ = parse_error(bytes);                    \
    EXPECT_NE(msg_.find(substring), std::string::npos) << "message: '" << msg_ << "'"; \
  } while (0)

// A valid file with one F32 tensor of 8 elements (32 bytes of data, which
// end the file).
Bytes one_tensor_file(uint64_t offset = 0, uint32_t type = 0, std::vector<int64_t> shape = {8}) {
  Bytes b;
  b.header(1, 1).kv_u32("general.alignment", 32).tensor("w", shape, type, offset).pad(32).zeros(32);
  return b;
}

// Unique per process: the release and sanitizer test runs may run at once.
std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()));
}

TEST(GgufFile, ValidMinimalFileParses) {
  GgufFile f = GgufFile::parse(one_tensor_file().get(), "t");
  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].n_bytes, 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.tensor_data(f.tensors()[0]).size(), 32u);
}

TEST(GgufFile, RejectsBadMagic) {
  Bytes b;
  b.pod<uint32_t>(0x12345678).pod<uint32_t>(3).pod<uint64_t>(0).pod<uint64_t>(0);
  EXPECT_PARSE_ERROR(b.get(), "not a GGUF file");
}

TEST(GgufFile, RejectsUnsupportedVersions) {
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 1).get(), "unsupported GGUF version 1");
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 4).get(), "unsupported GGUF version 4");
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 0x03000000).get(), "big-endian");
}

TEST(GgufFile, AcceptsVersion2) {
  EXPECT_EQ(GgufFile::parse(Bytes().header(0, 0, 2).get(), "t").version(), 2u);
}

TEST(GgufFile, EveryTruncationIsAnError) {
  const std::vector<uint8_t> full = one_tensor_file().get();
  // Cutting inside the header or the tensor data must fail; the full file parses.
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(parse_error(cut).empty()) << "prefix of " << n << " bytes parsed";
  }
  EXPECT_TRUE(parse_error(full).empty());
}

TEST(GgufFile, RejectsCountsLargerThanTheFile) {
  EXPECT_PARSE_ERROR(Bytes().header(0, std::numeric_limits<uint64_t>::max()).get(),
                     "metadata count");
  EXPECT_PARSE_ERROR(Bytes().header(1ull << 60, 0).get(), "tensor count");
}

TEST(GgufFile, RejectsHugeStringAndArrayLengths) {
  Bytes s;
  s.header(0, 1).pod<uint64_t>(1ull << 62).zeros(16);
  EXPECT_PARSE_ERROR(s.get(), "truncated: key of a metadata entry needs 4611686018427387904 bytes");
  Bytes a;
  a.header(0, 1).str("k").pod<uint32_t>(9).pod<uint32_t>(4).pod<uint64_t>(1ull << 61).zeros(16);
  EXPECT_PARSE_ERROR(a.get(), "array of 2305843009213693952 uint32 elements exceeds");
}

TEST(GgufFile, RejectsUnknownValueType) {
  Bytes b;
  b.header(0, 1).str("k").pod<uint32_t>(13).pod<uint32_t>(0);
  EXPECT_PARSE_ERROR(b.get(), "unknown value type");
}

TEST(GgufFile, RejectsDeeplyNestedArrays) {
  Bytes b;
  b.header(0, 1).str("deep").pod<uint32_t>(9);
  for (int i = 0; i < 100; ++i) b.pod<uint32_t>(9).pod<uint64_t>(1);
  EXPECT_PARSE_ERROR(b.get(), "nested deeper");
}

TEST(GgufFile, RejectsBadBool) {
  Bytes b;
  b.header(0, 1).str("flag").pod<uint32_t>(7).pod<uint8_t>(2);
  EXPECT_PARSE_ERROR(b.get(), "bool has byte value 2");
}

TEST(GgufFile, RejectsDuplicateKeysAndTensors) {
  Bytes k;
  k.header(0, 2).kv_u32("a", 1).kv_u32("a", 2);
  EXPECT_PARSE_ERROR(k.get(), "duplicate metadata key 'a'");
  Bytes t;
  t.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad(32).zeros(64);
  EXPECT_PARSE_ERROR(t.get(), "duplicate tensor name 'w'");
}

TEST(GgufFile, RejectsBadAlignment) {
  EXPECT_PARSE_ERROR(Bytes().header(0, 1).kv_u32("general.alignment", 0).get(), "power of two");
  EXPECT_PARSE_ERROR(Bytes().header(0, 1).kv_u32("general.alignment", 48).get(), "power of two");
  Bytes wrong_type;
  wrong_type.header(0, 1).str("general.alignment").pod<uint32_t>(10).pod<uint64_t>(32);
  EXPECT_PARSE_ERROR(wrong_type.get(), "expected uint32");
}

TEST(GgufFile, RejectsBadTensorShapes) {
  EXPECT_PARSE_ERROR(one_tensor_file(0, 0, {}).get(), "0 dimensions");
  EXPECT_PARSE_ERROR(one_tensor_file(0, 0, {1, 1, 1, 1, 1}).get(), "5 dimensions");
  EXPECT_PARSE_ERROR(one_tensor_file(0, 0, {-8}).get(), "size -8");
  EXPECT_PARSE_ERROR(one_tensor_file(0, 0, {0}).get(), "size 0");
  EXPECT_PARSE_ERROR(one_tensor_file(0, 0, {1ll << 40, 1ll << 40}).get(), "overflows");
  EXPECT_PARSE_ERROR(one_tensor_file(0, 8, {33}).get(), "not a multiple of the q8_0 block size 32");
}

TEST(GgufFile, RejectsUnknownTensorType) {
  EXPECT_PARSE_ERROR(one_tensor_file(0, 4).get(), "unknown type id 4");
  EXPECT_PARSE_ERROR(one_tensor_file(0, 1000).get(), "unknown type id 1000");
}

TEST(GgufFile, RejectsDataOutOfBoundsMisalignedOrOverlapping) {
  EXPECT_PARSE_ERROR(one_tensor_file(64).get(), "outside the data section");
  EXPECT_PARSE_ERROR(one_tensor_file(std::numeric_limits<uint64_t>::max() - 31).get(), "outside");
  EXPECT_PARSE_ERROR(one_tensor_file(4).get(), "not a multiple of the alignment");
  Bytes overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad(32).zeros(128);
  EXPECT_PARSE_ERROR(overlap.get(), "overlaps");
}

TEST(GgufFile, ErrorsNameTheFile) {
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 9).get(), "test.gguf");
}

TEST(GgufFile, OpenReportsMissingFile) {
  try {
    GgufFile::open("/nonexistent/model.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
}

TEST(GgufWriter, RoundTripsEveryValueTypeAndTensors) {
  GgufWriter w;
  Metadata& md = w.metadata();
  md.set("u8", Value(uint8_t{200}));
  md.set("i8", Value(int8_t{-100}));
  md.set("u16", Value(uint16_t{60000}));
  md.set("i16", Value(int16_t{-30000}));
  md.set("u32", Value(uint32_t{4000000000u}));
  md.set("i32", Value(int32_t{-2000000000}));
  md.set("f32", Value(1.5f));
  md.set("bool", Value(true));
  md.set("str", Value("héllo\nworld"));
  md.set("u64", Value(uint64_t{1} << 63));
  md.set("i64", Value(int64_t{-(int64_t{1} << 62)}));
  md.set("f64", Value(-2.25));
  Array inner{ValueType::INT32, {Value(int32_t{1}), Value(int32_t{2})}};
  Array nested{ValueType::ARRAY, {Value(inner), Value(Array{ValueType::INT32, {}})}};
  md.set("nested", Value(nested));
  md.set("strings", Value(Array{ValueType::STRING, {Value("a"), Value("")}}));
  std::vector<uint8_t> data(4 * 8);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  w.add_tensor("a", {8}, TensorType::F32, data);
  w.add_tensor("b", {4, 2}, TensorType::F16, std::span(data).first(16));
  auto path = temp_path("roundtrip.gguf");
  w.write(path.string());

  GgufFile f = GgufFile::open(path.string());
  EXPECT_EQ(f.metadata().size(), md.size());
  for (const auto& [key, value] : md.entries()) {
    const Value* got = f.metadata().find(key);
    ASSERT_NE(got, nullptr) << key;
    EXPECT_TRUE(*got == value) << key;
  }
  ASSERT_EQ(f.tensors().size(), 2u);
  auto a = f.tensor_data(*f.find_tensor("a"));
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin()));
  EXPECT_EQ(f.find_tensor("b")->shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(f.find_tensor("b")->n_bytes, 16u);
  std::filesystem::remove(path);
}

TEST(GgufWriter, RejectsBadTensors) {
  GgufWriter w;
  std::vector<uint8_t> data(64);
  w.add_tensor("a", {8}, TensorType::F32, std::span(data).first(32));
  EXPECT_THROW(w.add_tensor("a", {8}, TensorType::F32, std::span(data).first(32)), Error);
  EXPECT_THROW(w.add_tensor("q", {33}, TensorType::Q8_0, std::span(data)), Error);
  EXPECT_THROW(w.add_tensor("z", {0}, TensorType::F32, std::span(data)), Error);
}

TEST(Metadata, TypedGettersNameTheKey) {
  Metadata md;
  md.set("n", Value(uint32_t{7}));
  md.set("s", Value("x"));
  EXPECT_EQ(md.get_int("n"), 7);
  EXPECT_EQ(md.get_float("n"), 7.0);
  EXPECT_FALSE(md.get_int("missing").has_value());
  try {
    md.get_int("s");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'s'"), std::string::npos);
  }
}

}  // namespace gguf_file_test
}  // namespace cohort::gguf
