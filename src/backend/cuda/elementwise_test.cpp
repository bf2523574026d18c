#include "backend/cuda/elementwise.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/kernel_test_util.h"
#include "backend/cuda/matvec_q8.h"
#include "common/error.h"
#include "common/half.h"

namespace cohort::cuda {
namespace elementwise_test {

using testing::as_bf16;
using testing::within;

// Every output here is BF16: its rounding (RMS about 1.6e-3 relative) is
// the error; 5e-3 is three times that. F32 math steps add ~1e-6.
constexpr double kTol = 5e-3;

DeviceBuffer<uint16_t> upload(const std::vector<uint16_t>& bits) {
  DeviceBuffer<uint16_t> d(bits.size());
  d.upload(bits);
  return d;
}

void expect_close(const std::string& what, const std::vector<uint16_t>& got_bits, const std::vector<double>& want) {
  const std::vector<float> got = testing::bf16_values(got_bits);
  const double e = testing::relative_l2(got.data(), want.data(), want.size());
  testing::report(what, e, kTol);
  EXPECT_TRUE(within(e, kTol)) << what << ": " << e;
}

// xq (when not empty) holds the quantization the kernel wrote beside y:
// it must be the host quantizer's bytes of y as the kernel stored it.
void expect_quantized_as_host(const std::string& what, const std::vector<uint16_t>& y, int64_t n_tok, int64_t n,
                              const DeviceBuffer<uint8_t>& xq) {
  std::vector<uint8_t> want(q8_activation_bytes(n_tok, n));
  quantize_activations_host(y.data(), n_tok, n, want.data());
  EXPECT_TRUE(xq.download() == want) << what << ": the quantized output";
}

void check_rms_norm(int64_t n_tok, int64_t n, bool fused, bool quantize, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(n_tok * n), rng, 3.0f);
  const testing::Bf16Data r = testing::random_bf16(x.bits.size(), rng);
  std::vector<float> w(static_cast<size_t>(n));
  std::uniform_real_distribution<float> uni(0.5f, 1.5f);
  for (float& v : w) v = uni(rng);
  const float eps = 1e-5f;

  // The residual sum is exactly bf16(x + r) (one F32 add, one rounding).
  std::vector<uint16_t> sum_bits = x.bits;
  if (fused) {
    for (size_t i = 0; i < sum_bits.size(); ++i) sum_bits[i] = f32_to_bf16(x.values[i] + r.values[i]);
  }
  std::vector<double> want(sum_bits.size());
  for (int64_t t = 0; t < n_tok; ++t) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += std::pow(static_cast<double>(bf16_to_f32(sum_bits[t * n + i])), 2);
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) want[t * n + i] = bf16_to_f32(sum_bits[t * n + i]) * scale * w[i];
  }

  DeviceBuffer<uint16_t> dx = upload(x.bits), dr = upload(r.bits), dy(x.bits.size());
  DeviceBuffer<float> dw(w.size());
  dw.upload(w);
  testing::poison(dy);
  DeviceBuffer<uint8_t> xq(quantize ? q8_activation_bytes(n_tok, n) : 0);
  if (quantize) testing::poison(xq);
  rms_norm(as_bf16(dx), fused ? as_bf16(dr) : nullptr, dw.data(), n_tok, n, eps, as_bf16(dy), nullptr,
           quantize ? xq.data() : nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string what = "rms_norm " + std::to_string(n_tok) + "x" + std::to_string(n) +
                           (fused ? " +residual" : "") + (quantize ? " +q8" : "");
  expect_close(what, dy.download(), want);
  EXPECT_EQ(dx.download(), sum_bits) << what << ": the residual stream";
  if (quantize) expect_quantized_as_host(what, dy.download(), n_tok, n, xq);
}

TEST(CudaRmsNorm, MatchesTheF64Reference) {
  COHORT_REQUIRE_CUDA_DEVICE();
  uint32_t seed = 1;
  for (int64_t n : {8, 576, 2056, 4096, 8192, 2080}) {  // one vector, SmolLM, odd, llama3-8b, wide, 65 blocks
    for (int64_t n_tok : {1, 3, 8}) {
      for (bool quantize : {false, true}) {
        if (quantize && n % 32 != 0) continue;
        check_rms_norm(n_tok, n, false, quantize, seed++);
        check_rms_norm(n_tok, n, true, quantize, seed++);
      }
    }
  }
}

// F64 rope of one token's heads, pairing as the CPU's.
void rope_reference(const RopeConfig& c, const std::vector<double>& ff, std::vector<double>& v, int64_t pos,
                    int64_t n_heads, int64_t head_dim) {
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t p = 0; p < c.n_rot / 2; ++p) {
      const double theta = static_cast<double>(pos) * std::pow(static_cast<double>(c.freq_base),
                                                              -2.0 * static_cast<double>(p) / static_cast<double>(c.n_rot));
      const double angle = c.freq_scale * theta / ff[static_cast<size_t>(p)];
      const int64_t a = c.neox ? p : 2 * p, b = c.neox ? p + c.n_rot / 2 : 2 * p + 1;
      double* x = v.data() + h * head_dim;
      const double x0 = x[a], x1 = x[b];
      x[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
      x[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
    }
  }
}

void check_rope(bool neox, bool factors, int64_t n_tok, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                int64_t token_stride, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(n_tok * token_stride), rng);
  std::vector<int32_t> pos(static_cast<size_t>(n_tok));
  std::uniform_int_distribution<int32_t> pd(0, 4095);
  for (int32_t& p : pos) p = pd(rng);
  pos[0] = 0;
  std::vector<float> ff(static_cast<size_t>(n_rot / 2), 1.0f);
  if (factors) {
    std::uniform_real_distribution<float> fd(1.0f, 8.0f);
    for (float& f : ff) f = fd(rng);
  }
  RopeConfig c;
  c.n_rot = n_rot;
  c.freq_base = 500000.0f;
  c.neox = neox;
  DeviceBuffer<float> dff(ff.size());
  dff.upload(ff);
  if (factors) c.freq_factors = dff.data();

  std::vector<double> want;  // the heads of every token; the rest of each row is unchanged
  std::vector<double> ffd(ff.begin(), ff.end());
  for (int64_t t = 0; t < n_tok; ++t) {
    std::vector<double> v(x.values.begin() + t * token_stride, x.values.begin() + (t + 1) * token_stride);
    rope_reference(c, ffd, v, pos[static_cast<size_t>(t)], n_heads, head_dim);
    want.insert(want.end(), v.begin(), v.end());
  }
  DeviceBuffer<uint16_t> dx = upload(x.bits);
  DeviceBuffer<int32_t> dpos(pos.size());
  dpos.upload(pos);
  rope(c, as_bf16(dx), token_stride, dpos.data(), n_tok, n_heads, head_dim, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  expect_close(std::string("rope ") + (neox ? "neox" : "llama") + (factors ? " freq_factors" : "") + " " +
                   std::to_string(n_tok) + "x" + std::to_string(n_heads) + "x" + std::to_string(head_dim) +
                   " n_rot " + std::to_string(n_rot),
               dx.download(), want);
}

TEST(CudaRope, MatchesTheF64ReferenceForBothPairings) {
  COHORT_REQUIRE_CUDA_DEVICE();
  uint32_t seed = 100;
  for (bool neox : {false, true}) {
    check_rope(neox, false, 5, 32, 128, 128, 32 * 128, seed++);    // llama3-8b q
    check_rope(neox, true, 8, 8, 128, 128, 48 * 128, seed++);      // k inside a fused QKV row
    check_rope(neox, false, 3, 9, 64, 32, 9 * 64, seed++);         // partial rotation
  }
}

TEST(CudaSiluMulAndAdd, MatchTheF64Reference) {
  COHORT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(5);
  for (int64_t n : {8, 14336, 8 * 14336 + 8, 3 * 14336 + 32}) {
    const testing::Bf16Data g = testing::random_bf16(static_cast<size_t>(n), rng, 4.0f);
    const testing::Bf16Data u = testing::random_bf16(static_cast<size_t>(n), rng);
    std::vector<double> want_silu(g.values.size()), want_add(g.values.size());
    for (size_t i = 0; i < want_silu.size(); ++i) {
      const double gv = g.values[i];
      want_silu[i] = gv / (1.0 + std::exp(-gv)) * u.values[i];
      want_add[i] = gv + u.values[i];
    }
    DeviceBuffer<uint16_t> dg = upload(g.bits), du = upload(u.bits), dy(g.bits.size());
    testing::poison(dy);
    silu_mul(as_bf16(dg), as_bf16(du), as_bf16(dy), n, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    expect_close("silu_mul " + std::to_string(n), dy.download(), want_silu);
    if (n % 32 == 0) {  // also quantized, as rows of 32 (any row length gives the same bytes)
      const std::vector<uint16_t> y = dy.download();
      DeviceBuffer<uint8_t> xq(q8_activation_bytes(n / 32, 32));
      testing::poison(dy);
      testing::poison(xq);
      silu_mul(as_bf16(dg), as_bf16(du), as_bf16(dy), n, nullptr, xq.data());
      CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(dy.download(), y) << "silu_mul " << n << " +q8";
      expect_quantized_as_host("silu_mul " + std::to_string(n) + " +q8", y, n / 32, 32, xq);
    }
    testing::poison(dy);
    add(as_bf16(dg), as_bf16(du), as_bf16(dy), n, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    expect_close("add " + std::to_string(n), dy.download(), want_add);
  }
}

TEST(CudaElementwise, RejectsBadShapesAndAlignment) {
  auto* p = reinterpret_cast<__nv_bfloat16*>(uintptr_t{256});
  const auto* w = reinterpret_cast<const float*>(uintptr_t{256});
  EXPECT_THROW(rms_norm(p, nullptr, w, 1, 12, 1e-5f, p, nullptr), Error);
  EXPECT_THROW(rms_norm(p + 1, nullptr, w, 1, 16, 1e-5f, p, nullptr), Error);
  EXPECT_THROW(rms_norm(p, nullptr, nullptr, 1, 16, 1e-5f, p, nullptr), Error);
  EXPECT_THROW(silu_mul(p, p, p, 12, nullptr), Error);
  EXPECT_THROW(silu_mul(p, p, p, 40, nullptr, p), Error);  // quantized rows need whole 32-blocks
  EXPECT_THROW(rms_norm(p, nullptr, w, 1, 40, 1e-5f, p, nullptr, p), Error);
  EXPECT_THROW(add(p, p + 4, p, 16, nullptr), Error);
  RopeConfig c;
  c.n_rot = 130;
  EXPECT_THROW(rope(c, p, 128, nullptr, 1, 1, 128, nullptr), Error);
  c.n_rot = 127;
  EXPECT_THROW(rope(c, p, 128, nullptr, 1, 1, 128, nullptr), Error);
  c.n_rot = 128;
  EXPECT_THROW(rope(c, p, 64, nullptr, 1, 1, 128, nullptr), Error);
}

}  // namespace elementwise_test
}  // namespace cohort::cuda
