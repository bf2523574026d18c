#include "quant/vec_dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/quant_testing.h"

namespace cohort::quant {
namespace vec_dot_test {

using namespace testing;

const std::vector<TensorType> kWeightTypes = {
    TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K,
    TensorType::Q6_K, TensorType::F16,  TensorType::BF16, TensorType::F32,
};

std::string name(TensorType t) { return std::string(gguf::type_name(t)); }

std::vector<uint8_t> quantized(TensorType weight, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> out(activation_row_bytes(weight, n));
  quantize_activations(weight, x.data(), out.data(), n);
  return out;
}

// The values an activation row stands for (the Q8_1 sums s are not values).
std::vector<double> act_values(TensorType act, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<double> v(n);
  if (act == TensorType::Q8_1) {
    const auto* b = reinterpret_cast<const BlockQ8_1*>(bytes.data());
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(f16_to_f32(b[i / 32].d)) * b[i / 32].qs[i % 32];
  } else if (act == TensorType::Q8_K) {
    const auto* b = reinterpret_cast<const BlockQ8_K*>(bytes.data());
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(b[i / 256].d) * b[i / 256].qs[i % 256];
  } else {
    std::vector<float> f(n);
    IsaGuard guard;
    set_isa(Isa::scalar);
    dequantize(act, bytes.data(), f.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) v[i] = f[i];
  }
  return v;
}

struct Reference {
  double value;  // in float64
  double scale;  // sum |w_i a_i|: the size of any F32 summation's rounding error
};

// The dot product of the dequantized weights with the dequantized
// activations, in float64. For Q4_1 the offset term uses the stored f16 sums
// s of Q8_1 (sum_b m_b * s_b), which is what the format defines.
Reference reference(TensorType weight, const std::vector<uint8_t>& row, const std::vector<uint8_t>& act,
                    size_t n) {
  std::vector<float> w(n);
  {
    IsaGuard guard;
    set_isa(Isa::scalar);
    dequantize(weight, row.data(), w.data(), static_cast<int64_t>(n));
  }
  const std::vector<double> a = act_values(activation_type(weight), act, n);
  Reference ref{0.0, 0.0};
  if (weight == TensorType::Q4_1) {
    const auto* wb = reinterpret_cast<const BlockQ4_1*>(row.data());
    const auto* ab = reinterpret_cast<const BlockQ8_1*>(act.data());
    for (size_t b = 0; b < n / 32; ++b) {
      const double m = f16_to_f32(wb[b].m), s = f16_to_f32(ab[b].s);
      for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
        const double scaled = (w[i] - m) * a[i];  // d * q * a
        ref.value += scaled;
        ref.scale += std::fabs(scaled);
      }
      ref.value += m * s;
      ref.scale += std::fabs(m * s);
    }
    return ref;
  }
  for (size_t i = 0; i < n; ++i) {
    ref.value += w[i] * a[i];
    ref.scale += std::fabs(w[i] * a[i]);
  }
  return ref;
}

// Integer sums are exact; what remains is F32 rounding of a few operations
// per block and lane: about 10 float ulps (1.2e-7 each) of the scale.
constexpr double kTolerance = 1e-6;

// In both orders (Order).
TEST(VecDot, MatchesFloat64DotOfDequantizedOperands) {
  IsaGuard guard;
  std::mt19937 rng(31);
  for (TensorType type : kWeightTypes) {
    const int64_t bs = gguf::traits(type).block_size;
    std::vector<int64_t> counts = {1, 3, 9, 4096 / bs < 16 ? 16 : 4096 / bs};
    if (bs == 1) counts.insert(counts.end(), {5, 31, 33, 100});
    double worst = 0.0;
    for (int64_t n_blocks : counts) {
      const auto n = static_cast<size_t>(n_blocks * bs);
      const auto row = random_blocks(type, n_blocks, rng);
      const auto x = random_normal(n, rng);
      for (Isa isa : runnable_isas()) {
        set_isa(isa);
        const auto act = quantized(type, x);
        const Reference ref = reference(type, row, act, n);
        for (Order order : {Order::single, Order::batched}) {
          float got = 0.0f;
          vec_dot_tile(type, row.data(), 0, 1, act.data(), 0, 1, static_cast<int64_t>(n), &got, 1, order);
          const double err = std::fabs(got - ref.value) / ref.scale;
          EXPECT_TRUE(within(err, kTolerance)) << name(type) << " " << isa_name(isa) << " n=" << n
                                               << " order " << static_cast<int>(order) << " got " << got
                                               << " want " << ref.value;
          worst = std::fmax(worst, err);
        }
      }
    }
    std::printf("[ vec_dot  ] %-5s worst error %.2e of sum |w a|\n", name(type).c_str(), worst);
  }
}

TEST(VecDot, ScalarAndAvx2AreBitIdentical) {
  if (best_isa() != Isa::avx2) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  IsaGuard guard;
  std::mt19937 rng(32);
  for (TensorType type : kWeightTypes) {
    const int64_t bs = gguf::traits(type).block_size;
    for (int64_t n : std::vector<int64_t>{bs, 8 * bs, 4096 + (bs == 1 ? 7 : 0)}) {
      const auto row = random_blocks(type, n / bs, rng);
      const auto x = random_normal(static_cast<size_t>(n), rng, 3.0f);
      set_isa(Isa::scalar);
      const auto act_s = quantized(type, x);
      const float dot_s = vec_dot(type, row.data(), act_s.data(), n);
      set_isa(Isa::avx2);
      const auto act_v = quantized(type, x);
      const float dot_v = vec_dot(type, row.data(), act_s.data(), n);
      EXPECT_EQ(act_s, act_v) << name(type) << " n=" << n << ": activation bytes differ";
      EXPECT_TRUE(same_float(dot_s, dot_v)) << name(type) << " n=" << n << " scalar " << dot_s
                                            << " avx2 " << dot_v;
    }
  }
}

// Every tile shape (the edges of the micro-tiles included) gives each
// (row, activation) pair the bits of a lone vec_dot() (of a lone 1 x 1 tile
// in Order::batched), and the scalar and AVX2 tiles agree in both orders.
TEST(VecDot, TileEqualsPairwiseDots) {
  IsaGuard guard;
  std::mt19937 rng(33);
  for (TensorType type : kWeightTypes) {
    const int64_t bs = gguf::traits(type).block_size;
    // 19 blocks of 32: two groups of 8 and a partial one (the matvec path
    // gathers scales 8 blocks at a time).
    const int64_t n = bs == 1 ? 100 : bs == 32 ? 19 * 32 : 512;
    const size_t rb = gguf::row_bytes(type, n), ab = activation_row_bytes(type, n);
    const int64_t n_rows = 9, n_acts = 70;  // 70 > the 64 activations of one group
    const auto rows = random_blocks(type, n_rows * n / bs, rng);
    const auto x = random_normal(static_cast<size_t>(n_acts * n), rng);
    std::vector<float> previous[2];  // per order: the full tile of the previous ISA
    for (Isa isa : runnable_isas()) {
      set_isa(isa);
      std::vector<uint8_t> acts(ab * n_acts);
      for (int64_t t = 0; t < n_acts; ++t) quantize_activations(type, x.data() + t * n, acts.data() + t * ab, n);
      for (Order order : {Order::single, Order::batched}) {
        const char* order_name = order == Order::single ? "single" : "batched";
        for (int64_t nr : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, n_rows}) {
          for (int64_t na : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{7}, n_acts}) {
            std::vector<float> y(static_cast<size_t>(na * nr), -1.0f);
            vec_dot_tile(type, rows.data(), rb, nr, acts.data(), ab, na, n, y.data(), nr, order);
            for (int64_t t = 0; t < na; ++t) {
              for (int64_t r = 0; r < nr; ++r) {
                float want = 0.0f;
                vec_dot_tile(type, rows.data() + r * rb, rb, 1, acts.data() + t * ab, ab, 1, n, &want, 1, order);
                if (order == Order::single) {
                  ASSERT_TRUE(same_float(want, vec_dot(type, rows.data() + r * rb, acts.data() + t * ab, n)));
                }
                ASSERT_TRUE(same_float(y[t * nr + r], want))
                    << name(type) << " " << isa_name(isa) << " " << order_name << " tile " << nr << "x" << na
                    << " pair (" << r << ", " << t << "): " << y[t * nr + r] << " vs " << want;
              }
            }
            if (nr == n_rows && na == n_acts) {
              std::vector<float>& prev = previous[order == Order::batched];
              if (!prev.empty()) {
                for (size_t i = 0; i < y.size(); ++i) {
                  ASSERT_TRUE(same_float(y[i], prev[i])) << name(type) << " " << order_name << " ISAs differ at " << i;
                }
              }
              prev = y;
            }
          }
        }
      }
    }
  }
}

// Rows longer than one chunk of scales (512 blocks) are walked in pieces.
TEST(VecDot, LongRowsMatchTheReference) {
  IsaGuard guard;
  std::mt19937 rng(34);
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_0}) {
    const int64_t n = 32 * 1100;
    const size_t rb = gguf::row_bytes(type, n), ab = activation_row_bytes(type, n);
    const auto rows = random_blocks(type, 3 * n / 32, rng);
    const auto x = random_normal(static_cast<size_t>(5 * n), rng);
    std::vector<float> ys;
    for (Isa isa : runnable_isas()) {
      set_isa(isa);
      std::vector<uint8_t> acts(ab * 5);
      for (int64_t t = 0; t < 5; ++t) quantize_activations(type, x.data() + t * n, acts.data() + t * ab, n);
      std::vector<float> y(15);
      vec_dot_tile(type, rows.data(), rb, 3, acts.data(), ab, 5, n, y.data(), 3);
      for (int64_t t = 0; t < 5; ++t) {
        for (int64_t r = 0; r < 3; ++r) {
          const std::vector<uint8_t> row(rows.begin() + r * rb, rows.begin() + (r + 1) * rb);
          const std::vector<uint8_t> act(acts.begin() + t * ab, acts.begin() + (t + 1) * ab);
          const Reference ref = reference(type, row, act, static_cast<size_t>(n));
          EXPECT_TRUE(within(std::fabs(y[t * 3 + r] - ref.value) / ref.scale, kTolerance))
              << name(type) << " " << isa_name(isa);
        }
      }
      if (!ys.empty()) {
        for (size_t i = 0; i < y.size(); ++i) EXPECT_TRUE(same_float(y[i], ys[i])) << name(type) << " " << i;
      }
      ys = y;
    }
  }
}

TEST(ActivationQuantization, PairsLikeGgml) {
  EXPECT_EQ(activation_type(TensorType::Q4_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q4_1), TensorType::Q8_1);
  EXPECT_EQ(activation_type(TensorType::Q8_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q4_K), TensorType::Q8_K);
  EXPECT_EQ(activation_type(TensorType::Q5_K), TensorType::Q8_K);
  EXPECT_EQ(activation_type(TensorType::Q6_K), TensorType::Q8_K);
  EXPECT_EQ(activation_type(TensorType::F16), TensorType::F16);
  EXPECT_EQ(activation_type(TensorType::BF16), TensorType::BF16);
  EXPECT_EQ(activation_type(TensorType::F32), TensorType::F32);
  EXPECT_EQ(activation_row_bytes(TensorType::Q4_1, 64), 72u);
  EXPECT_EQ(activation_row_bytes(TensorType::Q6_K, 512), 584u);
  EXPECT_EQ(sizeof(BlockQ8_1), gguf::traits(TensorType::Q8_1).type_size);
  EXPECT_EQ(sizeof(BlockQ8_K), gguf::traits(TensorType::Q8_K).type_size);
}

// Each element is off by at most half a step of the rounding (amax / 127 / 2)
// plus what storing the scale as f16 costs (|q| times the scale's rounding);
// the sums s and bsums describe the stored bytes.
TEST(ActivationQuantization, RoundTripErrorIsBoundedAndSumsAreConsistent) {
  IsaGuard guard;
  std::mt19937 rng(35);
  const size_t n = 1024;
  const auto x = random_normal(n, rng, 2.0f);
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    for (TensorType weight : {TensorType::Q8_0, TensorType::Q4_1, TensorType::Q4_K}) {
      const TensorType act = activation_type(weight);
      const auto bytes = quantized(weight, x);
      const std::vector<double> v = act_values(act, bytes, n);
      const size_t bs = gguf::traits(act).block_size;
      double err2 = 0.0, x2 = 0.0;
      for (size_t b = 0; b < n / bs; ++b) {
        double amax = 0.0;
        for (size_t i = b * bs; i < (b + 1) * bs; ++i) amax = std::fmax(amax, std::fabs(x[i]));
        double stored_d = 0.0;
        if (act == TensorType::Q8_K) stored_d = reinterpret_cast<const BlockQ8_K*>(bytes.data())[b].d;
        else stored_d = f16_to_f32(*reinterpret_cast<const uint16_t*>(bytes.data() + b * gguf::traits(act).type_size));
        const double d = amax / 127.0;
        for (size_t i = b * bs; i < (b + 1) * bs; ++i) {
          const double bound = 0.5 * d * (1 + 1e-6) + 127.0 * std::fabs(stored_d - d);
          EXPECT_LE(std::fabs(v[i] - x[i]), bound) << name(act) << " " << isa_name(isa) << " i=" << i;
          err2 += (v[i] - x[i]) * (v[i] - x[i]);
          x2 += static_cast<double>(x[i]) * x[i];
        }
      }
      // Gaussian data: about 0.5% relative RMS error (steps of amax/127 ~ 3 sigma / 127).
      EXPECT_LT(std::sqrt(err2 / x2), 0.01) << name(act);
      if (act == TensorType::Q8_1) {
        const auto* b = reinterpret_cast<const BlockQ8_1*>(bytes.data());
        for (size_t i = 0; i < n / 32; ++i) {
          int sum = 0;
          float amax = 0.0f;
          for (int8_t q : b[i].qs) sum += q;
          for (size_t k = 32 * i; k < 32 * i + 32; ++k) amax = std::fmax(amax, std::fabs(x[k]));
          EXPECT_EQ(b[i].s, f32_to_f16(amax / 127.0f * static_cast<float>(sum))) << "block " << i;
        }
      }
      if (act == TensorType::Q8_K) {
        const auto* b = reinterpret_cast<const BlockQ8_K*>(bytes.data());
        for (size_t i = 0; i < n / 256; ++i) {
          for (int j = 0; j < 16; ++j) {
            int sum = 0;
            for (int k = 0; k < 16; ++k) sum += b[i].qs[16 * j + k];
            EXPECT_EQ(b[i].bsums[j], sum);
          }
        }
      }
    }
  }
}

TEST(ActivationQuantization, FloatFormatsRoundAsHalfConversions) {
  IsaGuard guard;
  std::mt19937 rng(36);
  auto x = random_normal(37, rng, 100.0f);
  x[3] = 1e-6f;  // an f16 subnormal
  x[4] = 7e4f;   // beyond the f16 range: inf
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    const auto h = quantized(TensorType::F16, x);
    const auto bf = quantized(TensorType::BF16, x);
    for (size_t i = 0; i < x.size(); ++i) {
      uint16_t a = 0, b = 0;
      std::memcpy(&a, h.data() + 2 * i, 2);
      std::memcpy(&b, bf.data() + 2 * i, 2);
      EXPECT_EQ(a, f32_to_f16(x[i])) << isa_name(isa) << " " << x[i];
      EXPECT_EQ(b, f32_to_bf16(x[i])) << isa_name(isa) << " " << x[i];
    }
  }
}

TEST(ActivationQuantization, ZeroAndTinyBlocksEncodeAsZeros) {
  IsaGuard guard;
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    for (float v : {0.0f, 1e-35f, -1e-38f}) {
      const std::vector<float> x(256, v);
      for (TensorType weight : {TensorType::Q8_0, TensorType::Q4_1, TensorType::Q6_K}) {
        const auto bytes = quantized(weight, x);
        for (uint8_t byte : bytes) EXPECT_EQ(byte, 0) << name(weight) << " " << v << " " << isa_name(isa);
      }
    }
  }
}

TEST(VecDot, RejectsUnsupportedTypesAndPartialBlocks) {
  std::vector<uint8_t> row(1024);
  std::vector<float> x(256);
  EXPECT_FALSE(has_vec_dot(TensorType::Q5_1));
  EXPECT_THROW(activation_type(TensorType::Q5_1), Error);
  EXPECT_THROW(vec_dot(TensorType::Q5_1, row.data(), row.data(), 32), Error);
  EXPECT_THROW(vec_dot(TensorType::Q4_K, row.data(), row.data(), 64), Error);
  EXPECT_THROW(quantize_activations(TensorType::Q4_0, x.data(), row.data(), 48), Error);
  EXPECT_EQ(vec_dot(TensorType::Q4_0, row.data(), row.data(), 0), 0.0f);
}

}  // namespace vec_dot_test
}  // namespace cohort::quant
