#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/ops.h"
#include "common/error.h"
#include "quant/quant_testing.h"
#include "quant/vec_dot.h"

namespace cohort::cpu {
namespace matmul_fast_test {

using gguf::TensorType;
using quant::testing::random_blocks;
using quant::testing::random_normal;
using quant::testing::same_float;

const std::vector<TensorType> kTypes = {
    TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K,
    TensorType::Q6_K, TensorType::F16,  TensorType::BF16, TensorType::F32,
};

std::string name(TensorType t) { return std::string(gguf::type_name(t)); }

struct Matrix {
  std::vector<uint8_t> bytes;
  WeightView view;
};

Matrix random_matrix(TensorType type, int64_t n_out, int64_t n_in, std::mt19937& rng) {
  Matrix m;
  m.bytes = random_blocks(type, n_out * n_in / gguf::traits(type).block_size, rng);
  m.view = WeightView{type, m.bytes.data(), n_in, n_out, gguf::row_bytes(type, n_in)};
  return m;
}

std::vector<float> run_fast(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok) {
  std::vector<uint8_t> scratch(matmul_fast_scratch_bytes(w, n_tok));
  std::vector<float> y(static_cast<size_t>(n_tok * w.n_out), NAN);
  matmul_fast(pool, w, x, n_tok, y.data(), scratch);
  return y;
}

// Relative RMS difference to the F32 reference that activation rounding
// explains. For Gaussian x, rounding to steps of amax/127 errs by
// step/sqrt(12) per element, which the dot product carries over as a relative
// error of about amax / (127 sqrt(12) sigma): 0.5% for blocks of 32 (amax ~
// 2.2 sigma), 0.7% for blocks of 256 (amax ~ 3 sigma). The bounds leave room
// for the spread of a few dozen outputs. F16 and BF16 err by their half ulps,
// F32 only by summation order.
double bound(TensorType weight) {
  switch (quant::activation_type(weight)) {
    case TensorType::Q8_0:
    case TensorType::Q8_1: return 0.01;
    case TensorType::Q8_K: return 0.015;
    case TensorType::F16: return 5e-4;
    case TensorType::BF16: return 4e-3;
    default: return 1e-5;
  }
}

TEST(MatmulFast, MatchesReferenceMatmulWithinActivationRounding) {
  std::mt19937 rng(41);
  ThreadPool pool(2);
  const int64_t n_out = 37, n_in = 512;
  for (TensorType type : kTypes) {
    const Matrix m = random_matrix(type, n_out, n_in, rng);
    for (int64_t n_tok : {1, 3, 17, 64}) {
      const auto x = random_normal(static_cast<size_t>(n_tok * n_in), rng);
      std::vector<float> want(static_cast<size_t>(n_tok * n_out));
      matmul(pool, m.view, x.data(), n_tok, want.data());
      const auto got = run_fast(pool, m.view, x.data(), n_tok);
      const double err = quant::testing::relative_rms_error(got, want);
      EXPECT_TRUE(quant::testing::within(err, bound(type)))
          << name(type) << " n_tok=" << n_tok << " relative RMS error " << err;
      if (n_tok == 64) {
        std::printf("[ matmul   ] %-5s relative RMS error vs F32 reference %.2e (bound %.3g)\n",
                    name(type).c_str(), err, bound(type));
      }
    }
  }
}

// The product of (row, token) pairs in one order (quant::Order), straight
// from the tile kernels: the expectation for matmul_fast's tokens.
std::vector<float> tile_in_order(const WeightView& w, const float* x, int64_t n_tok, quant::Order order) {
  const size_t ab = quant::activation_row_bytes(w.type, w.n_in);
  std::vector<uint8_t> acts(ab * static_cast<size_t>(n_tok));
  for (int64_t t = 0; t < n_tok; ++t) {
    quant::quantize_activations(w.type, x + t * w.n_in, acts.data() + static_cast<size_t>(t) * ab, w.n_in);
  }
  std::vector<float> y(static_cast<size_t>(n_tok * w.n_out));
  quant::vec_dot_tile(w.type, w.data, w.row_bytes, w.n_out, acts.data(), ab, n_tok, w.n_in, y.data(),
                      w.n_out, order);
  return y;
}

// The product is the same bits whatever the thread count and however the
// tokens are grouped into calls (one call, one token per call, uneven
// splits), up to the order llama.cpp's kernels take for a batch: token i of
// a call of nt tokens has the bits of Order::batched if i <
// order_split(type, nt), else those of Order::single.
TEST(MatmulFast, IdenticalForAnyThreadCountAndTokenGrouping) {
  std::mt19937 rng(42);
  ThreadPool pool1(1), pool2(2), pool3(3);
  const int64_t n_out = 70, n_in = 768, n_tok = 67;
  for (TensorType type : kTypes) {
    const Matrix m = random_matrix(type, n_out, n_in, rng);
    const auto x = random_normal(static_cast<size_t>(n_tok * n_in), rng);
    const auto all = run_fast(pool1, m.view, x.data(), n_tok);
    for (ThreadPool* pool : {&pool2, &pool3}) {
      EXPECT_EQ(std::memcmp(run_fast(*pool, m.view, x.data(), n_tok).data(), all.data(),
                            all.size() * sizeof(float)),
                0)
          << name(type) << " threads=" << pool->n_threads();
    }
    if (type == TensorType::F32) continue;  // no quantized activations (and one order)
    const auto single = tile_in_order(m.view, x.data(), n_tok, quant::Order::single);
    const auto batched = tile_in_order(m.view, x.data(), n_tok, quant::Order::batched);
    for (int64_t split : {int64_t{1}, int64_t{5}, int64_t{30}, n_tok}) {
      for (int64_t t0 = 0; t0 < n_tok; t0 += split) {
        const int64_t nt = std::min(split, n_tok - t0);
        const int64_t n_batched = quant::order_split(type, nt);
        const auto part = run_fast(pool2, m.view, x.data() + t0 * n_in, nt);
        for (int64_t i = 0; i < nt * n_out; ++i) {
          const auto at = static_cast<size_t>(t0 * n_out + i);
          const float want = i / n_out < n_batched ? batched[at] : single[at];
          ASSERT_TRUE(same_float(part[static_cast<size_t>(i)], want))
              << name(type) << " split " << split << " token " << t0 + i / n_out << " row " << i % n_out;
        }
      }
    }
  }
}

TEST(MatmulFast, ScratchIsCheckedAndMayBeUnaligned) {
  std::mt19937 rng(43);
  ThreadPool pool(2);
  const Matrix m = random_matrix(TensorType::Q4_1, 8, 64, rng);
  const auto x = random_normal(3 * 64, rng);
  std::vector<float> y(3 * 8);
  const size_t need = matmul_fast_scratch_bytes(m.view, 3);
  std::vector<uint8_t> scratch(need + 1);
  EXPECT_THROW(matmul_fast(pool, m.view, x.data(), 3, y.data(), std::span(scratch).first(need - 1)), Error);
  matmul_fast(pool, m.view, x.data(), 3, y.data(), std::span(scratch).subspan(1));
  EXPECT_EQ(y, run_fast(pool, m.view, x.data(), 3));
  const Matrix unsupported{{}, WeightView{TensorType::Q5_1, scratch.data(), 32, 1, 24}};
  EXPECT_THROW(matmul_fast(pool, unsupported.view, x.data(), 1, y.data(), scratch), Error);
  EXPECT_EQ(matmul_fast_scratch_bytes(random_matrix(TensorType::F32, 2, 8, rng).view, 5), 0u);
}

// Timings, not a check; run with
//   cohort_tests --gtest_also_run_disabled_tests --gtest_filter='MatmulFastBench.*'
// Best of several runs (robust to a loaded machine) of matmul (the F32
// reference) and matmul_fast on the default model's shapes (SmolLM2-135M:
// Q4_1 layers, Q8_0 output head), 2 threads.
TEST(MatmulFastBench, DISABLED_DefaultModelShapes) {
  std::mt19937 rng(44);
  ThreadPool pool(2);
  struct Shape {
    TensorType type;
    int64_t n_in, n_out;
  };
  for (const Shape& s : {Shape{TensorType::Q4_1, 576, 576}, Shape{TensorType::Q4_1, 576, 1536},
                         Shape{TensorType::Q4_1, 1536, 576}, Shape{TensorType::Q8_0, 576, 49152}}) {
    const Matrix m = random_matrix(s.type, s.n_out, s.n_in, rng);
    for (int64_t n_tok : {1, 128}) {
      const auto x = random_normal(static_cast<size_t>(n_tok * s.n_in), rng);
      std::vector<float> y(static_cast<size_t>(n_tok * s.n_out));
      std::vector<uint8_t> scratch(matmul_fast_scratch_bytes(m.view, n_tok));
      const double macs = static_cast<double>(s.n_in * s.n_out * n_tok);
      const int reps = macs > 1e9 ? 3 : macs > 1e8 ? 10 : 200;
      auto best = [&](auto&& fn) {
        double t = 1e30;
        for (int i = 0; i < reps + 1; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          fn();
          const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (i > 0) t = std::min(t, dt);
        }
        return t;
      };
      const double ref = best([&] { matmul(pool, m.view, x.data(), n_tok, y.data()); });
      const double fast = best([&] { matmul_fast(pool, m.view, x.data(), n_tok, y.data(), scratch); });
      std::printf("[ bench    ] %-5s %5lld -> %-5lld n_tok=%-3lld 2 threads: matmul %8.3f ms, "
                  "matmul_fast %8.3f ms (%5.2fx, %6.1f GMAC/s, weights %5.1f GB/s)\n",
                  name(s.type).c_str(), static_cast<long long>(s.n_in), static_cast<long long>(s.n_out),
                  static_cast<long long>(n_tok), ref * 1e3, fast * 1e3, ref / fast, macs / fast / 1e9,
                  static_cast<double>(m.bytes.size()) / fast / 1e9);
    }
  }
}

}  // namespace matmul_fast_test
}  // namespace cohort::cpu
