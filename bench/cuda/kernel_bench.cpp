// Times the CUDA compute kernels with CUDA events and prints one JSON object
// per line on stdout:
//   {"op":"copy", ...}     the device-to-device cudaMemcpyAsync ceiling, GB/s
//                          of bytes read plus written
//   {"op":"matvec", ...}   every weight type on the llama3-8b shapes, n_tok
//                          1 and 8: GB/s of weight bytes and the fraction of
//                          the copy ceiling
//   {"op":"matvec_q8", ...} the same for the int8-activation kernels
//                          (matvec_q8.h), activations already quantized
//   {"op":"mmq", ...}      the int8 tensor-core matmul (mmq.h) at 1-32
//                          tokens, its activations read directly ("mmq")
//                          and staged ("mmq_staged"), the BF16 matmul of
//                          dequantized weights (mmd.h, "mmd") at 2-64, against
//                          dequantization + cuBLAS (gemm.h) at 16-64, the
//                          same shapes and types
//   {"op":"bf16_batch", ...} BF16 weights at 1-64 tokens: the matvec (to
//                          8) and cuBLAS, the same shapes
//   {"op":"parts", ...}    the q, k and v projections of llama3-8b (4096,
//                          1024, 1024 rows of 4096), and gate and up (14336
//                          rows each), a launch each and as one
//                          (matvec_parts / matvec_q8_parts), n_tok 1 and 8
//   {"op":"quantize_activations", ...}  their quantizer, n_in 4096 and 14336
//   {"op":"gemm", ...}     the prefill matmul (gemm.h): the BF16 cuBLAS
//                          ceiling on a square 8192 product, then each type
//                          on llama3-8b FFN shapes at 512 tokens (dequantization
//                          included), TFLOP/s
//   {"op":"rms_norm" | "rope" | "silu_mul" | "attention", ...}
//   {"op":"prefill_attention", ...}  one causal prompt: TFLOP/s counting
//                          4 * n_head * head_dim flops per (query, key) pair
// COHORT_KERNEL_BENCH=op,op,... runs only those groups (matvec, matvec_q8,
// mmq, bf16_batch, mmd_split, parts, quantize, gemm, elementwise, attention,
// prefill_attention).
// Each figure is the median over kSamples samples of kLaunches back-to-back
// launches, after a warm-up. Inputs rotate over copies whose total exceeds
// the L2 cache, so weights and KV come from device memory, not L2; weight
// bytes are a constant pattern (the timing does not depend on the values).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/devices.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/matvec.h"
#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/mmd.h"
#include "backend/cuda/mmq.h"
#include "backend/cuda/prefill_attention.h"
#include "common/error.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda {
namespace {

constexpr int kSamples = 25;
constexpr int kLaunches = 10;
constexpr size_t kRotateBytes = size_t{1} << 30;  // > 16x the H200's 60 MB L2

// Owned device bytes (the bench allocates a few GB and frees them per case).
class Bytes {
 public:
  explicit Bytes(size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(n, 16))); }
  ~Bytes() { (void)cudaFree(p_); }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  template <typename T>
  T* as() const { return static_cast<T*>(p_); }
  size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_;
};

// Median seconds per launch of `run(i)`, i counting launches from 0.
double time_launches(const std::function<void(int)>& run) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  int i = 0;
  for (int w = 0; w < 3 * kLaunches; ++w) run(i++);
  std::vector<float> ms;
  for (int s = 0; s < kSamples; ++s) {
    CUDA_CHECK(cudaEventRecord(start, nullptr));
    for (int k = 0; k < kLaunches; ++k) run(i++);
    CUDA_CHECK(cudaEventRecord(stop, nullptr));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return static_cast<double>(ms[ms.size() / 2]) / 1e3 / kLaunches;
}

int copies_for(size_t bytes) { return static_cast<int>(std::clamp<size_t>(kRotateBytes / std::max<size_t>(bytes, 1), 2, 256)); }

// Copies of one [n_out, n_in] matrix of `type` side by side, more than the
// L2 holds, with finite scales and values; launch i reads copy i % copies.
struct RotatedWeights {
  RotatedWeights(gguf::TensorType type, int64_t n_in, int64_t n_out)
      : bytes(gguf::row_bytes(type, n_in) * static_cast<size_t>(n_out)),
        copies(copies_for(bytes)),
        stride((bytes + 255) / 256 * 256),
        w(stride * static_cast<size_t>(copies)) {
    CUDA_CHECK(cudaMemset(w.as<void>(), 0x3C, w.size()));
  }
  const char* at(int i) const { return w.as<char>() + stride * static_cast<size_t>(i % copies); }
  size_t bytes;
  int copies;
  size_t stride;
  Bytes w;
};

double copy_ceiling() {
  const size_t n = kRotateBytes / 2;
  Bytes a(n), b(n);
  CUDA_CHECK(cudaMemset(a.as<void>(), 1, n));
  const double s = time_launches([&](int) { CUDA_CHECK(cudaMemcpyAsync(b.as<void>(), a.as<void>(), n, cudaMemcpyDeviceToDevice, nullptr)); });
  const double gbps = 2.0 * static_cast<double>(n) / s / 1e9;
  std::printf("{\"op\":\"copy\",\"bytes\":%zu,\"us\":%.2f,\"gbps\":%.1f}\n", n, s * 1e6, gbps);
  return gbps;
}

void bench_matvec(gguf::TensorType type, int64_t n_in, int64_t n_out, double ceiling) {
  const RotatedWeights rw(type, n_in, n_out);
  const size_t w_bytes = rw.bytes;
  Bytes x(8 * static_cast<size_t>(n_in) * 2), y(8 * static_cast<size_t>(n_out) * 4);
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  for (int64_t n_tok : {1, 8}) {
    const double s = time_launches([&](int i) {
      matvec(type, rw.at(i), x.as<__nv_bfloat16>(), y.as<void>(), OutType::bf16, n_tok, n_in, n_out, nullptr);
    });
    const double gbps = static_cast<double>(w_bytes) / s / 1e9;
    std::printf("{\"op\":\"matvec\",\"type\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,\"n_tok\":%lld,\"weight_bytes\":%zu,"
                "\"us\":%.2f,\"gbps\":%.1f,\"fraction_of_copy\":%.3f}\n",
                std::string(gguf::type_name(type)).c_str(), static_cast<long long>(n_in), static_cast<long long>(n_out),
                static_cast<long long>(n_tok), w_bytes, s * 1e6, gbps, gbps / ceiling);
  }
}

// As bench_matvec with matvec_q8 on activations quantized beforehand, x
// read from each block's shared copy (the kernel the forward uses) and from
// device memory (the other kernel), in the same run.
void bench_matvec_q8(gguf::TensorType type, int64_t n_in, int64_t n_out, double ceiling) {
  const RotatedWeights rw(type, n_in, n_out);
  const size_t w_bytes = rw.bytes;
  Bytes x(8 * static_cast<size_t>(n_in) * 2), y(8 * static_cast<size_t>(n_out) * 4);
  Bytes xq(q8_activation_bytes(8, n_in));
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  for (const Q8XSource source : {Q8XSource::shared_where_it_fits, Q8XSource::global}) {
    for (int64_t n_tok : {1, 2, 4, 6, 8}) {
      quantize_activations(x.as<__nv_bfloat16>(), n_tok, n_in, xq.as<void>(), nullptr);
      const double s = time_launches([&](int i) {
        matvec_q8(type, rw.at(i), xq.as<void>(), y.as<void>(),
                  OutType::bf16, n_tok, n_in, n_out, nullptr, source);
      });
      const double gbps = static_cast<double>(w_bytes) / s / 1e9;
      std::printf("{\"op\":\"matvec_q8\",\"x\":\"%s\",\"type\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,"
                  "\"n_tok\":%lld,\"weight_bytes\":%zu,\"us\":%.2f,\"gbps\":%.1f,\"fraction_of_copy\":%.3f}\n",
                  source == Q8XSource::global ? "global" : "shared", std::string(gguf::type_name(type)).c_str(),
                  static_cast<long long>(n_in), static_cast<long long>(n_out), static_cast<long long>(n_tok), w_bytes,
                  s * 1e6, gbps, gbps / ceiling);
    }
  }
}

// mmq on activations quantized beforehand, and the prefill path (gemm.h:
// dequantization to BF16, then cuBLAS) from 16 tokens: weight GB/s.
void bench_mmq(gguf::TensorType type, int64_t n_in, int64_t n_out, double ceiling) {
  const RotatedWeights rw(type, n_in, n_out);
  const size_t w_bytes = rw.bytes;
  Bytes x(64 * static_cast<size_t>(n_in) * 2), y(64 * static_cast<size_t>(n_out) * 4);
  Bytes xq(q8_activation_bytes(64, n_in));
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  Gemm gemm(nullptr, std::min<int64_t>(n_out * n_in, int64_t{64} << 20));
  const auto report = [&](const char* kernel, int64_t n_tok, double s) {
    const double gbps = static_cast<double>(w_bytes) / s / 1e9;
    std::printf("{\"op\":\"mmq\",\"kernel\":\"%s\",\"type\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,"
                "\"n_tok\":%lld,\"weight_bytes\":%zu,\"us\":%.2f,\"gbps\":%.1f,\"fraction_of_copy\":%.3f}\n",
                kernel, std::string(gguf::type_name(type)).c_str(), static_cast<long long>(n_in),
                static_cast<long long>(n_out), static_cast<long long>(n_tok), w_bytes, s * 1e6, gbps, gbps / ceiling);
  };
  for (int64_t n_tok : {1, 2, 4, 8, 16, 32, 64}) {
    quantize_activations(x.as<__nv_bfloat16>(), n_tok, n_in, xq.as<void>(), nullptr);
    const MmqStaging staging = mmq_staging();
    for (const MmqStaging s : {MmqStaging::never, MmqStaging::always}) {  // read directly ("mmq"), then staged
      if (n_tok > kMmqMaxTokens) break;  // one pass only
      set_mmq_staging(s);
      report(s == MmqStaging::always ? "mmq_staged" : "mmq", n_tok, time_launches([&](int i) {
               mmq(type, rw.at(i), xq.as<void>(), y.as<void>(),
                   OutType::bf16, n_tok, n_in, n_out, nullptr);
             }));
    }
    set_mmq_staging(staging);
    if (n_tok >= 2 && can_mmd(type, n_in)) {
      report("mmd", n_tok, time_launches([&](int i) {
               mmd(type, rw.at(i), x.as<__nv_bfloat16>(), y.as<void>(),
                   OutType::bf16, n_tok, n_in, n_out, nullptr);
             }));
    }
    if (n_tok < 16) continue;
    report("gemm", n_tok, time_launches([&](int i) {
             gemm.run(type, rw.at(i), n_out, n_in,
                      x.as<__nv_bfloat16>(), n_tok, y.as<void>(), OutType::bf16);
           }));
  }
}

// BF16 weights at 1-64 tokens: the F32-decoding matvec (to 8) and cuBLAS
// reading them in place (gemm.h, from 2), the choice of
// kGemmMinTokensBf16: weight GB/s.
void bench_bf16_batch(int64_t n_in, int64_t n_out, double ceiling) {
  constexpr gguf::TensorType kType = gguf::TensorType::BF16;
  const RotatedWeights rw(kType, n_in, n_out);
  Bytes x(64 * static_cast<size_t>(n_in) * 2), y(64 * static_cast<size_t>(n_out) * 4);
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  Gemm gemm(nullptr, n_in);
  const auto report = [&](const char* kernel, int64_t n_tok, double s) {
    const double gbps = static_cast<double>(rw.bytes) / s / 1e9;
    std::printf("{\"op\":\"bf16_batch\",\"kernel\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,\"n_tok\":%lld,"
                "\"us\":%.2f,\"gbps\":%.1f,\"fraction_of_copy\":%.3f}\n",
                kernel, static_cast<long long>(n_in), static_cast<long long>(n_out), static_cast<long long>(n_tok),
                s * 1e6, gbps, gbps / ceiling);
  };
  const auto* xb = x.as<__nv_bfloat16>();
  for (int64_t n_tok : {1, 2, 4, 8, 16, 32, 64}) {
    if (n_tok <= 8) {
      report("matvec", n_tok, time_launches([&](int i) {
               matvec(kType, rw.at(i), xb, y.as<void>(), OutType::bf16, n_tok, n_in, n_out, nullptr);
             }));
    }
    if (n_tok == 1) continue;
    report("gemm", n_tok, time_launches([&](int i) {
             gemm.run(kType, rw.at(i), n_out, n_in, xb, n_tok, y.as<void>(), OutType::bf16);
           }));
  }
}

// mmd at each cluster split, with the clusters the device holds at once
// for it ("resident_clusters") against the launch's ("clusters").
void bench_mmd_split(gguf::TensorType type, int64_t n_in, int64_t n_out) {
  const RotatedWeights rw(type, n_in, n_out);
  const size_t w_bytes = rw.bytes;
  Bytes x(64 * static_cast<size_t>(n_in) * 2), y(64 * static_cast<size_t>(n_out) * 4);
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  for (int64_t n_tok : {8, 32, 64}) {
    for (int split = 1; split <= 8; ++split) {
      set_mmd_split(split);
      const double s = time_launches([&](int i) {
        mmd(type, rw.at(i), x.as<__nv_bfloat16>(), y.as<void>(),
            OutType::bf16, n_tok, n_in, n_out, nullptr);
      });
      std::printf("{\"op\":\"mmd_split\",\"type\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,\"n_tok\":%lld,"
                  "\"split\":%d,\"clusters\":%lld,\"resident_clusters\":%d,\"us\":%.2f,\"gbps\":%.1f}\n",
                  std::string(gguf::type_name(type)).c_str(), static_cast<long long>(n_in),
                  static_cast<long long>(n_out), static_cast<long long>(n_tok), split,
                  static_cast<long long>((n_out + 127) / 128), mmd_resident_clusters(type, n_tok, split), s * 1e6,
                  static_cast<double>(w_bytes) / s / 1e9);
    }
  }
  set_mmd_split(0);
}

// Matrices of 4096 columns with these rows (llama3-8b's q, k, v or gate,
// up), a launch each against one launch.
void bench_parts(const char* name, gguf::TensorType type, const std::vector<int64_t>& rows, double ceiling) {
  const int64_t n_in = 4096;
  int64_t all_rows = 0;
  for (int64_t r : rows) all_rows += r;
  const size_t row = gguf::row_bytes(type, n_in);
  const size_t w_bytes = row * static_cast<size_t>(all_rows);
  const int copies = copies_for(w_bytes);
  const size_t stride = (w_bytes + 255) / 256 * 256;
  Bytes w(stride * static_cast<size_t>(copies)), x(8 * static_cast<size_t>(n_in) * 2);
  Bytes y(8 * static_cast<size_t>(all_rows) * 2), xq(q8_activation_bytes(8, n_in));
  CUDA_CHECK(cudaMemset(w.as<void>(), 0x3C, w.size()));
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  const bool q8 = can_matvec_q8(type);
  for (int64_t n_tok : {1, 8}) {
    if (q8) quantize_activations(x.as<__nv_bfloat16>(), n_tok, n_in, xq.as<void>(), nullptr);
    // The parts of launch i: matrix p at copy i's offset, y side by side.
    auto parts_of = [&](int i) {
      std::vector<MatvecPart> parts;
      size_t w_off = stride * static_cast<size_t>(i % copies), y_off = 0;
      for (int64_t n_out : rows) {
        parts.push_back({w.as<char>() + w_off, y.as<char>() + y_off, n_out});
        w_off += row * static_cast<size_t>(n_out);
        y_off += static_cast<size_t>(8 * n_out) * 2;
      }
      return parts;
    };
    auto run = [&](std::span<const MatvecPart> parts) {
      if (q8) {
        matvec_q8_parts(type, parts, xq.as<void>(), OutType::bf16, n_tok, n_in, nullptr);
      } else {
        matvec_parts(type, parts, x.as<__nv_bfloat16>(), OutType::bf16, n_tok, n_in, nullptr);
      }
    };
    const double apart = time_launches([&](int i) {
      for (const MatvecPart& p : parts_of(i)) run({&p, 1});
    });
    const double joint = time_launches([&](int i) { run(parts_of(i)); });
    std::printf("{\"op\":\"parts\",\"name\":\"%s\",\"type\":\"%s\",\"n_tok\":%lld,\"weight_bytes\":%zu,"
                "\"launch_each_us\":%.2f,\"one_launch_us\":%.2f,\"fraction_of_copy\":%.3f}\n",
                name, std::string(gguf::type_name(type)).c_str(), static_cast<long long>(n_tok), w_bytes, apart * 1e6,
                joint * 1e6, static_cast<double>(w_bytes) / joint / 1e9 / ceiling);
  }
}

void bench_quantize_activations(int64_t n_in) {
  Bytes x(8 * static_cast<size_t>(n_in) * 2), xq(q8_activation_bytes(8, n_in));
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  for (int64_t n_tok : {1, 8}) {
    const double s = time_launches(
        [&](int) { quantize_activations(x.as<__nv_bfloat16>(), n_tok, n_in, xq.as<void>(), nullptr); });
    std::printf("{\"op\":\"quantize_activations\",\"n_in\":%lld,\"n_tok\":%lld,\"us\":%.2f}\n",
                static_cast<long long>(n_in), static_cast<long long>(n_tok), s * 1e6);
  }
}

void bench_gemm(gguf::TensorType type, int64_t n_out, int64_t n_in, int64_t n_tok) {
  const size_t w_bytes = gguf::row_bytes(type, n_in) * static_cast<size_t>(n_out);
  Bytes w(w_bytes), x(static_cast<size_t>(n_tok * n_in) * 2), y(static_cast<size_t>(n_tok * n_out) * 2);
  CUDA_CHECK(cudaMemset(w.as<void>(), 0x3C, w.size()));
  CUDA_CHECK(cudaMemset(x.as<void>(), 0x3C, x.size()));
  Gemm gemm(nullptr, std::min<int64_t>(n_out * n_in, int64_t{64} << 20));
  const double s = time_launches([&](int) {
    gemm.run(type, w.as<void>(), n_out, n_in, x.as<__nv_bfloat16>(), n_tok, y.as<void>(), OutType::bf16);
  });
  const double tflops = 2.0 * static_cast<double>(n_out * n_in) * static_cast<double>(n_tok) / s / 1e12;
  std::printf("{\"op\":\"gemm\",\"type\":\"%s\",\"n_out\":%lld,\"n_in\":%lld,\"n_tok\":%lld,\"us\":%.2f,"
              "\"tflops\":%.1f}\n",
              std::string(gguf::type_name(type)).c_str(), static_cast<long long>(n_out), static_cast<long long>(n_in),
              static_cast<long long>(n_tok), s * 1e6, tflops);
}

void bench_elementwise() {
  const int64_t n = 4096, heads = 32, d = 128, ff = 14336;
  Bytes x(8 * n * 2), r(8 * n * 2), y(8 * n * 2), w(n * 4), q(8 * heads * d * 2), pos(8 * 4);
  Bytes g(8 * ff * 2), u(8 * ff * 2), o(8 * ff * 2);
  for (Bytes* b : {&x, &r, &w, &q, &g, &u}) CUDA_CHECK(cudaMemset(b->as<void>(), 0x3C, b->size()));
  CUDA_CHECK(cudaMemset(pos.as<void>(), 0, pos.size()));
  for (int64_t n_tok : {1, 8}) {
    double s = time_launches([&](int) {
      rms_norm(x.as<__nv_bfloat16>(), r.as<__nv_bfloat16>(), w.as<float>(), n_tok, n, 1e-5f, y.as<__nv_bfloat16>(), nullptr);
    });
    std::printf("{\"op\":\"rms_norm\",\"fused_residual\":true,\"n\":%lld,\"n_tok\":%lld,\"us\":%.2f}\n",
                static_cast<long long>(n), static_cast<long long>(n_tok), s * 1e6);
    RopeConfig c;
    c.n_rot = d;
    c.freq_base = 500000.0f;
    s = time_launches([&](int) {
      rope(c, q.as<__nv_bfloat16>(), heads * d, pos.as<int32_t>(), n_tok, heads, d, nullptr);
    });
    std::printf("{\"op\":\"rope\",\"n_heads\":%lld,\"head_dim\":%lld,\"n_tok\":%lld,\"us\":%.2f}\n",
                static_cast<long long>(heads), static_cast<long long>(d), static_cast<long long>(n_tok), s * 1e6);
    s = time_launches([&](int) {
      silu_mul(g.as<__nv_bfloat16>(), u.as<__nv_bfloat16>(), o.as<__nv_bfloat16>(), n_tok * ff, nullptr);
    });
    std::printf("{\"op\":\"silu_mul\",\"n\":%lld,\"n_tok\":%lld,\"us\":%.2f}\n", static_cast<long long>(ff),
                static_cast<long long>(n_tok), s * 1e6);
  }
}

// llama3-8b heads: 32 query heads, 8 KV heads, head_dim 128.
void bench_attention(int64_t n_seq, int64_t ctx, double ceiling) {
  const int64_t n_head = 32, n_kv = 8, d = 128;
  const int64_t blocks_per_seq = ctx / kKvBlockSize;
  const size_t kv_bytes = static_cast<size_t>(n_seq * ctx * n_kv * d) * 2 * 2;  // K and V, F16
  const int copies = copies_for(kv_bytes);
  const int64_t n_blocks = blocks_per_seq * n_seq * copies;
  const size_t cache_bytes = static_cast<size_t>(n_blocks * kKvBlockSize * n_kv * d) * 2;
  Bytes k(cache_bytes), v(cache_bytes), q(static_cast<size_t>(n_seq * n_head * d) * 2), out(q.size());
  CUDA_CHECK(cudaMemset(k.as<void>(), 0x3C, cache_bytes));
  CUDA_CHECK(cudaMemset(v.as<void>(), 0x3C, cache_bytes));
  CUDA_CHECK(cudaMemset(q.as<void>(), 0x3C, q.size()));
  // Copy c's tables: the blocks of every sequence, interleaved across sequences.
  std::vector<int32_t> tables(static_cast<size_t>(copies * n_seq * blocks_per_seq));
  for (int c = 0; c < copies; ++c) {
    for (int64_t s = 0; s < n_seq; ++s) {
      for (int64_t b = 0; b < blocks_per_seq; ++b) {
        tables[static_cast<size_t>((c * n_seq + s) * blocks_per_seq + b)] =
            static_cast<int32_t>(c * n_seq * blocks_per_seq + b * n_seq + s);
      }
    }
  }
  Bytes dt(tables.size() * 4), lens(static_cast<size_t>(n_seq) * 4);
  CUDA_CHECK(cudaMemcpy(dt.as<void>(), tables.data(), dt.size(), cudaMemcpyHostToDevice));
  const std::vector<int32_t> ctx_lens(static_cast<size_t>(n_seq), static_cast<int32_t>(ctx));
  CUDA_CHECK(cudaMemcpy(lens.as<void>(), ctx_lens.data(), lens.size(), cudaMemcpyHostToDevice));
  Bytes work(decode_attention_workspace_bytes(n_seq, n_head, d, ctx));
  const KvCacheView cache{k.as<__half>(), v.as<__half>(), n_blocks, n_kv, d};
  const double s = time_launches([&](int i) {
    decode_attention(cache, q.as<__nv_bfloat16>(), dt.as<int32_t>() + (i % copies) * n_seq * blocks_per_seq,
                     blocks_per_seq, lens.as<int32_t>(), n_seq, n_head, ctx, 0.088388f, work.as<void>(),
                     out.as<__nv_bfloat16>(), nullptr);
  });
  const double gbps = static_cast<double>(kv_bytes) / s / 1e9;
  std::printf("{\"op\":\"attention\",\"n_seq\":%lld,\"ctx\":%lld,\"n_head\":%lld,\"n_head_kv\":%lld,\"head_dim\":%lld,"
              "\"kv_bytes\":%zu,\"us\":%.2f,\"gbps\":%.1f,\"fraction_of_copy\":%.3f}\n",
              static_cast<long long>(n_seq), static_cast<long long>(ctx), static_cast<long long>(n_head),
              static_cast<long long>(n_kv), static_cast<long long>(d), kv_bytes, s * 1e6, gbps, gbps / ceiling);
}

// One causal prompt of n_tok tokens at positions 0.., llama3-8b heads. The
// work is compute-bound (each K/V row is read once per query tile and head),
// so one cache serves every launch.
void bench_prefill_attention(int64_t n_tok) {
  const int64_t n_head = 32, n_kv = 8, d = 128;
  const int64_t n_blocks = n_tok / kKvBlockSize;
  const size_t cache_bytes = static_cast<size_t>(n_blocks * kKvBlockSize * n_kv * d) * 2;
  Bytes k(cache_bytes), v(cache_bytes), q(static_cast<size_t>(n_tok * n_head * d) * 2), out(q.size());
  CUDA_CHECK(cudaMemset(k.as<void>(), 0x3C, cache_bytes));
  CUDA_CHECK(cudaMemset(v.as<void>(), 0x3C, cache_bytes));
  CUDA_CHECK(cudaMemset(q.as<void>(), 0x3C, q.size()));
  std::vector<int32_t> table(static_cast<size_t>(n_blocks)), positions(static_cast<size_t>(n_tok));
  for (int64_t b = 0; b < n_blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(n_blocks - 1 - b);
  for (int64_t t = 0; t < n_tok; ++t) positions[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  const std::vector<int32_t> seq_index(positions.size(), 0);
  std::vector<PrefillTile> tiles;
  plan_prefill_tiles(positions, seq_index, tiles);
  Bytes dt(table.size() * 4), dtiles(tiles.size() * sizeof(PrefillTile));
  CUDA_CHECK(cudaMemcpy(dt.as<void>(), table.data(), dt.size(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dtiles.as<void>(), tiles.data(), dtiles.size(), cudaMemcpyHostToDevice));
  const KvCacheView cache{k.as<__half>(), v.as<__half>(), n_blocks, n_kv, d};
  const double s = time_launches([&](int) {
    prefill_attention(cache, q.as<__nv_bfloat16>(), dtiles.as<PrefillTile>(), static_cast<int64_t>(tiles.size()),
                      dt.as<int32_t>(), n_blocks, n_head, 0.088388f, out.as<__nv_bfloat16>(), nullptr);
  });
  const double pairs = static_cast<double>(n_tok) * static_cast<double>(n_tok + 1) / 2.0;
  const double tflops = 4.0 * static_cast<double>(n_head * d) * pairs / s / 1e12;
  std::printf("{\"op\":\"prefill_attention\",\"n_tok\":%lld,\"n_head\":%lld,\"n_head_kv\":%lld,\"head_dim\":%lld,"
              "\"us\":%.2f,\"tflops\":%.1f}\n",
              static_cast<long long>(n_tok), static_cast<long long>(n_head), static_cast<long long>(n_kv),
              static_cast<long long>(d), s * 1e6, tflops);
}

// Whether the group `op` is to run (COHORT_KERNEL_BENCH, or every group).
bool wanted(const char* op) {
  const char* only = std::getenv("COHORT_KERNEL_BENCH");
  if (only == nullptr || *only == 0) return true;
  const std::string list = std::string(",") + only + ",";
  return list.find(std::string(",") + op + ",") != std::string::npos;
}

int run() {
  const DeviceList devices = list_devices();
  if (devices.devices.empty()) {
    std::fprintf(stderr, "error: cuda_kernel_bench: no CUDA device (%s)\n", devices.none_reason.c_str());
    return 1;
  }
  const DeviceInfo& dev = devices.devices[0];
  std::printf("{\"op\":\"device\",\"name\":\"%s\",\"cc\":\"%d.%d\",\"sm_count\":%d}\n", dev.name.c_str(), dev.cc_major,
              dev.cc_minor, dev.sm_count);
  const double ceiling = copy_ceiling();
  using gguf::TensorType;
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
                          TensorType::Q4_1, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    if (!wanted("matvec")) break;
    bench_matvec(type, 4096, 4096, ceiling);
    bench_matvec(type, 4096, 14336, ceiling);
    bench_matvec(type, 14336, 4096, ceiling);
  }
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q4_K, TensorType::Q5_K,
                          TensorType::Q6_K}) {
    if (!wanted("matvec_q8")) break;
    bench_matvec_q8(type, 4096, 4096, ceiling);
    bench_matvec_q8(type, 4096, 14336, ceiling);
    bench_matvec_q8(type, 14336, 4096, ceiling);
  }
  for (TensorType type : {TensorType::Q4_K, TensorType::Q8_0, TensorType::Q6_K, TensorType::Q4_0}) {
    if (!wanted("mmq")) break;
    bench_mmq(type, 4096, 4096, ceiling);
    bench_mmq(type, 4096, 14336, ceiling);
    bench_mmq(type, 14336, 4096, ceiling);
  }
  for (const auto& [n_in, n_out] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 14336}, {14336, 4096}}) {
    if (!wanted("bf16_batch")) break;
    bench_bf16_batch(n_in, n_out, ceiling);
  }
  for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K}) {
    if (!wanted("mmd_split")) break;
    bench_mmd_split(type, 4096, 4096);
    bench_mmd_split(type, 4096, 14336);
    bench_mmd_split(type, 14336, 4096);
    bench_mmd_split(type, 4096, 128256);
  }
  for (TensorType type : {TensorType::BF16, TensorType::Q8_0, TensorType::Q4_K}) {
    if (!wanted("parts")) break;
    bench_parts("qkv", type, {4096, 1024, 1024}, ceiling);
    bench_parts("gate_up", type, {14336, 14336}, ceiling);
  }
  if (wanted("quantize")) {
    for (int64_t n_in : {4096, 14336}) bench_quantize_activations(n_in);
  }
  if (wanted("gemm")) {
    bench_gemm(TensorType::BF16, 8192, 8192, 8192);
    for (TensorType type : {TensorType::BF16, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
      bench_gemm(type, 14336, 4096, 512);
      bench_gemm(type, 4096, 14336, 512);
    }
  }
  if (wanted("elementwise")) bench_elementwise();
  if (wanted("attention")) {
    for (int64_t n_seq : {1, 8}) {
      for (int64_t ctx : {128, 1024, 8192, 32768}) bench_attention(n_seq, ctx, ceiling);
    }
  }
  if (wanted("prefill_attention")) {
    for (int64_t n_tok : {512, 4096}) bench_prefill_attention(n_tok);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace cohort::cuda

int main() {
  try {
    return cohort::cuda::run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: cuda_kernel_bench: %s\n", e.what());
    return 1;
  }
}
