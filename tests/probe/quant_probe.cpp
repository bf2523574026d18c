// quant_probe: raw-bytes front end to quant/ for tests against gguf-py.
//
//   quant_probe types                                  id name block_size type_size, one a line
//   quant_probe dequant TYPE [--isa scalar|avx2]       stdin blocks -> stdout float32
//   quant_probe dot TYPE N [--isa ...]                 stdin row bytes + N float32 -> "%.9g"
//   quant_probe quantize TYPE                          stdin float32 -> stdout blocks
//   quant_probe dequant-tensor GGUF NAME [--isa ...]   stdout float32 of one tensor
//   quant_probe bench TYPE ROWS COLS [--isa ...] [--reps R]
//                                                      single-thread matvec throughput
//   quant_probe act-quantize WTYPE [--isa ...]          stdin float32 -> stdout activation row
//                                                      (the type vec_dot pairs with WTYPE)
//   quant_probe vec-dot WTYPE N [--isa ...]            stdin row bytes + activation bytes -> "%.9g"
//   quant_probe vecdot-bench TYPE ROWS COLS [--tokens T] [--isa ...] [--reps R]
//                                                      single-thread W x over T tokens:
//                                                      F32-activation dot() per (row, token)
//                                                      vs quantized activations + vec_dot_tile
//
// Bad input prints one `error: ...` line on stderr and exits with status 1.
#include <algorithm>
#include <chrono>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "gguf/gguf_file.h"
#include "gguf/tensor_type.h"
#include "quant/quant.h"
#include "quant/vec_dot.h"

namespace {

using cohort::fail;
using cohort::gguf::TensorType;
namespace quant = cohort::quant;

struct Args {
  std::vector<std::string> positional;  // after the command name
  std::string isa;
  int64_t reps = 20;
  int64_t tokens = 1;
};

int64_t parse_int(const std::string& s, const char* what) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) fail("bad {} '{}'", what, s);
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--isa" || arg == "--reps" || arg == "--tokens") && i + 1 < argc) {
      if (arg == "--isa") a.isa = argv[++i];
      else if (arg == "--reps") a.reps = parse_int(argv[++i], "--reps");
      else a.tokens = std::max<int64_t>(1, parse_int(argv[++i], "--tokens"));
    } else if (arg.starts_with("--")) {
      fail("unknown or incomplete option '{}'", arg);
    } else {
      a.positional.emplace_back(arg);
    }
  }
  if (a.isa == "scalar") quant::set_isa(quant::Isa::scalar);
  else if (a.isa == "avx2") quant::set_isa(quant::Isa::avx2);
  else if (!a.isa.empty()) fail("unknown --isa '{}' (scalar or avx2)", a.isa);
  return a;
}

void need(const Args& a, size_t n, const char* usage) {
  if (a.positional.size() != n) fail("usage: quant_probe {}", usage);
}

TensorType parse_type(const std::string& name) {
  const auto type = cohort::gguf::type_from_name(name);
  if (!type) fail("unknown tensor type '{}'", name);
  return *type;
}

std::vector<uint8_t> read_stdin() {
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(1 << 16);
  size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), stdin)) > 0) {
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
  }
  if (std::ferror(stdin)) fail("reading stdin failed");
  return bytes;
}

void write_stdout(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, stdout) != n) fail("writing stdout failed");
  if (std::fflush(stdout) != 0) fail("writing stdout failed");
}

// memcpy that accepts the null data() of empty vectors.
void copy_bytes(void* dst, const void* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

void write_floats(const std::vector<float>& v) { write_stdout(v.data(), v.size() * sizeof(float)); }

int cmd_types() {
  for (uint32_t id = 0; id < 256; ++id) {
    if (const auto t = cohort::gguf::type_traits(id)) {
      std::printf("%u %.*s %u %u\n", id, static_cast<int>(t->name.size()), t->name.data(),
                  t->block_size, t->type_size);
    }
  }
  return 0;
}

int cmd_dequant(const Args& a) {
  need(a, 1, "dequant TYPE [--isa scalar|avx2]");
  const TensorType type = parse_type(a.positional[0]);
  const auto& traits = cohort::gguf::traits(type);
  const std::vector<uint8_t> in = read_stdin();
  if (in.size() % traits.type_size != 0) {
    fail("{} bytes of input is not a whole number of {}-byte {} blocks", in.size(),
         traits.type_size, traits.name);
  }
  std::vector<float> out(in.size() / traits.type_size * traits.block_size);
  quant::dequantize(type, in.data(), out.data(), static_cast<int64_t>(out.size()));
  write_floats(out);
  return 0;
}

int cmd_dot(const Args& a) {
  need(a, 2, "dot TYPE N [--isa scalar|avx2]");
  const TensorType type = parse_type(a.positional[0]);
  const int64_t n = parse_int(a.positional[1], "N");
  if (n % cohort::gguf::traits(type).block_size != 0) fail("N={} is not a multiple of the block size", n);
  const size_t rb = cohort::gguf::row_bytes(type, n);
  const std::vector<uint8_t> in = read_stdin();
  if (in.size() != rb + static_cast<size_t>(n) * sizeof(float)) {
    fail("expected {} bytes ({} row + {} float32), got {}", rb + static_cast<size_t>(n) * 4, rb, n,
         in.size());
  }
  std::vector<float> x(static_cast<size_t>(n));
  copy_bytes(x.data(), in.data() + rb, x.size() * sizeof(float));
  std::printf("%.9g\n", static_cast<double>(quant::dot(type, in.data(), x.data(), n)));
  return 0;
}

// stdin as float32 values, a whole number of `type`'s blocks.
std::vector<float> read_stdin_blocks(TensorType type) {
  const std::vector<uint8_t> in = read_stdin();
  if (in.size() % sizeof(float) != 0) fail("{} bytes of input is not a whole number of float32", in.size());
  std::vector<float> x(in.size() / sizeof(float));
  copy_bytes(x.data(), in.data(), in.size());
  const auto n = static_cast<int64_t>(x.size());
  if (n % cohort::gguf::traits(type).block_size != 0) fail("{} values is not a multiple of the block size", n);
  return x;
}

int cmd_quantize(const Args& a) {
  need(a, 1, "quantize TYPE");
  const TensorType type = parse_type(a.positional[0]);
  const std::vector<float> x = read_stdin_blocks(type);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> out(cohort::gguf::row_bytes(type, n));
  quant::quantize(type, x.data(), out.data(), n);
  write_stdout(out.data(), out.size());
  return 0;
}

int cmd_dequant_tensor(const Args& a) {
  need(a, 2, "dequant-tensor GGUF NAME [--isa scalar|avx2]");
  const auto file = cohort::gguf::GgufFile::open(a.positional[0]);
  const cohort::gguf::TensorInfo* t = file.find_tensor(a.positional[1]);
  if (t == nullptr) fail("{}: no tensor named '{}'", a.positional[0], a.positional[1]);
  std::vector<float> out(t->n_elements);
  quant::dequantize(t->type, file.tensor_data(*t).data(), out.data(), static_cast<int64_t>(t->n_elements));
  write_floats(out);
  return 0;
}

// Matrix-vector product y = W x, one dot() per row, on one thread; reports
// the bytes of W streamed per second.
int cmd_bench(const Args& a) {
  need(a, 3, "bench TYPE ROWS COLS [--isa scalar|avx2] [--reps R]");
  const TensorType type = parse_type(a.positional[0]);
  const int64_t rows = parse_int(a.positional[1], "ROWS");
  const int64_t cols = parse_int(a.positional[2], "COLS");
  const size_t rb = cohort::gguf::row_bytes(type, cols);
  std::vector<uint8_t> w(rb * static_cast<size_t>(rows));
  std::vector<float> row(static_cast<size_t>(cols)), x(static_cast<size_t>(cols)), y(static_cast<size_t>(rows));
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  double quantize_s = 0.0;  // encoding time alone, without the random numbers
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = normal(rng) * 0.02f;
    const auto q0 = std::chrono::steady_clock::now();
    quant::quantize(type, row.data(), w.data() + static_cast<size_t>(r) * rb, cols);
    quantize_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - q0).count();
  }
  auto matvec = [&] {
    for (int64_t r = 0; r < rows; ++r) {
      y[static_cast<size_t>(r)] = quant::dot(type, w.data() + static_cast<size_t>(r) * rb, x.data(), cols);
    }
  };
  matvec();  // warm caches and page in
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < a.reps; ++i) matvec();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                   static_cast<double>(std::max<int64_t>(a.reps, 1));
  const auto n_weights = static_cast<double>(rows * cols);
  std::printf("%s %s %lldx%lld: %.3f ms/matvec, %.2f GB/s of weights, %.2f Gweights/s; "
              "quantize %.1f ns/weight (y[0]=%g)\n",
              std::string(cohort::gguf::type_name(type)).c_str(),
              quant::active_isa() == quant::Isa::avx2 ? "avx2" : "scalar", static_cast<long long>(rows),
              static_cast<long long>(cols), s * 1e3, static_cast<double>(w.size()) / s / 1e9,
              n_weights / s / 1e9, quantize_s / n_weights * 1e9, static_cast<double>(y[0]));
  return 0;
}

int cmd_act_quantize(const Args& a) {
  need(a, 1, "act-quantize WTYPE [--isa scalar|avx2]");
  const TensorType type = parse_type(a.positional[0]);
  if (!quant::has_vec_dot(type)) fail("no integer dot product for {}", a.positional[0]);
  const std::vector<float> x = read_stdin_blocks(type);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> out(quant::activation_row_bytes(type, n));
  quant::quantize_activations(type, x.data(), out.data(), n);
  write_stdout(out.data(), out.size());
  return 0;
}

int cmd_vec_dot(const Args& a) {
  need(a, 2, "vec-dot WTYPE N [--isa scalar|avx2]");
  const TensorType type = parse_type(a.positional[0]);
  const int64_t n = parse_int(a.positional[1], "N");
  if (!quant::has_vec_dot(type)) fail("no integer dot product for {}", a.positional[0]);
  if (n % cohort::gguf::traits(type).block_size != 0) fail("N={} is not a multiple of the block size", n);
  const size_t rb = cohort::gguf::row_bytes(type, n), ab = quant::activation_row_bytes(type, n);
  const std::vector<uint8_t> in = read_stdin();
  if (in.size() != rb + ab) fail("expected {} bytes ({} row + {} activations), got {}", rb + ab, rb, ab, in.size());
  // Copies keep both rows 4-byte aligned (Q8_K scales are f32).
  std::vector<uint32_t> row((rb + 3) / 4), act((ab + 3) / 4);
  copy_bytes(row.data(), in.data(), rb);
  copy_bytes(act.data(), in.data() + rb, ab);
  std::printf("%.9g\n", static_cast<double>(quant::vec_dot(type, row.data(), act.data(), n)));
  return 0;
}

// Seconds per call of fn, the mean of `reps` calls after one warm-up call.
template <typename Fn>
double time_per_call(int64_t reps, Fn fn) {
  fn();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < reps; ++i) fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(std::max<int64_t>(reps, 1));
}

// y [T, ROWS] = x [T, COLS] W^T on one thread, both ways; reports the
// weights' bytes and the weight-token products (MACs) per second.
int cmd_vecdot_bench(const Args& a) {
  need(a, 3, "vecdot-bench TYPE ROWS COLS [--tokens T] [--isa scalar|avx2] [--reps R]");
  const TensorType type = parse_type(a.positional[0]);
  const int64_t rows = parse_int(a.positional[1], "ROWS");
  const int64_t cols = parse_int(a.positional[2], "COLS");
  const int64_t n_tok = a.tokens;
  if (!quant::has_vec_dot(type)) fail("no integer dot product for {}", a.positional[0]);
  const size_t rb = cohort::gguf::row_bytes(type, cols);
  const size_t ab = quant::activation_row_bytes(type, cols);
  std::vector<uint8_t> w(rb * static_cast<size_t>(rows));
  std::vector<uint8_t> act(ab * static_cast<size_t>(n_tok));
  std::vector<float> row(static_cast<size_t>(cols)), x(static_cast<size_t>(cols * n_tok));
  std::vector<float> y(static_cast<size_t>(rows * n_tok));
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = normal(rng) * 0.02f;
    quant::quantize(type, row.data(), w.data() + static_cast<size_t>(r) * rb, cols);
  }
  const double f32_s = time_per_call(a.reps, [&] {
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        y[static_cast<size_t>(t * rows + r)] =
            quant::dot(type, w.data() + static_cast<size_t>(r) * rb, x.data() + t * cols, cols);
      }
    }
  });
  const double quant_s = time_per_call(a.reps, [&] {
    for (int64_t t = 0; t < n_tok; ++t) {
      quant::quantize_activations(type, x.data() + t * cols, act.data() + static_cast<size_t>(t) * ab, cols);
    }
  });
  const double int_s = time_per_call(a.reps, [&] {
    quant::vec_dot_tile(type, w.data(), rb, rows, act.data(), ab, n_tok, cols, y.data(), rows);
  });
  const double macs = static_cast<double>(rows * cols * n_tok);
  const double bytes = static_cast<double>(w.size());
  std::printf("%s %s %lldx%lld x %lld tokens: dot %.3f ms (%.2f GB/s, %.2f GMAC/s) | "
              "vec_dot %.3f ms + quantize %.3f ms (%.2f GB/s, %.2f GMAC/s) | speed-up %.2fx\n",
              std::string(cohort::gguf::type_name(type)).c_str(),
              quant::active_isa() == quant::Isa::avx2 ? "avx2" : "scalar", static_cast<long long>(rows),
              static_cast<long long>(cols), static_cast<long long>(n_tok), f32_s * 1e3,
              bytes * static_cast<double>(n_tok) / f32_s / 1e9, macs / f32_s / 1e9, int_s * 1e3,
              quant_s * 1e3, bytes * static_cast<double>(n_tok) / (int_s + quant_s) / 1e9,
              macs / (int_s + quant_s) / 1e9, f32_s / (int_s + quant_s));
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) fail("usage: quant_probe types|dequant|dot|quantize|dequant-tensor|bench|act-quantize|vec-dot|vecdot-bench ...");
  const std::string_view cmd = argv[1];
  const Args a = parse_args(argc, argv);
  if (cmd == "types") return cmd_types();
  if (cmd == "dequant") return cmd_dequant(a);
  if (cmd == "dot") return cmd_dot(a);
  if (cmd == "quantize") return cmd_quantize(a);
  if (cmd == "dequant-tensor") return cmd_dequant_tensor(a);
  if (cmd == "bench") return cmd_bench(a);
  if (cmd == "act-quantize") return cmd_act_quantize(a);
  if (cmd == "vec-dot") return cmd_vec_dot(a);
  if (cmd == "vecdot-bench") return cmd_vecdot_bench(a);
  fail("unknown command '{}'", cmd);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
