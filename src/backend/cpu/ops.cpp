#include "backend/cpu/ops.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>

#include "quant/quant.h"

namespace cohort::cpu {

void rms_norm(ThreadPool& pool, const float* x, const float* weight, int64_t n_tok, int64_t n,
              float eps, float* y, Numerics mode) {
  pool.parallel_for(n_tok, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* xr = x + t * n;
      float* yr = y + t * n;
      double sum = 0.0;  // F64 sum of squares: the reference must not drift with n
      float scale;
      if (mode == Numerics::llama) {
        for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
        const auto mean = static_cast<float>(sum / static_cast<double>(n));
        scale = 1.0f / std::sqrt(mean + eps);
      } else {
        for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i]) * xr[i];
        scale = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
      }
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * weight[i];
    }
  });
}

void add_bias(float* x, const float* bias, int64_t n_tok, int64_t n) {
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t i = 0; i < n; ++i) x[t * n + i] += bias[i];
  }
}

void silu_mul(ThreadPool& pool, const float* gate, const float* up, int64_t n_tok, int64_t n,
              float* y, Numerics mode) {
  if (mode == Numerics::llama) {
    // Whole groups of kSumLanes take exp_poly, a row's tail the libm exp.
    const int64_t n_vec = n - n % kSumLanes;
    pool.parallel_for(n_tok, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t r = t * n;
        silu_mul_llama(gate + r, up + r, y + r, n_vec);
        for (int64_t i = r + n_vec; i < r + n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
      }
    });
    return;
  }
  pool.parallel_for(n_tok * n, [&](int64_t i0, int64_t i1, int) {
    for (int64_t i = i0; i < i1; ++i) {
      const float g = gate[i];
      y[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  }, 1024);
}

void add_in_place(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

namespace {

// ref: the YaRN paper (arXiv:2309.00071), as ggml applies it.
float yarn_corr_dim(int64_t n_rot, int64_t n_ctx_orig, float n_rotations, float base) {
  return static_cast<float>(n_rot) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rotations * 2.0f * static_cast<float>(M_PI))) /
         (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int64_t i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

void rope(const backend::RopeParams& p, Numerics numerics, float* x, const int32_t* positions,
          int64_t n_tok, int64_t n_heads, int64_t head_dim) {
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  float corr_low = 0.0f, corr_high = 0.0f;
  if (p.ext_factor != 0.0f) {
    corr_low = std::max(0.0f, std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base)));
    corr_high = std::min(static_cast<float>(p.n_rot - 1),
                         std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base)));
  }
  assert(p.n_rot <= kMaxRopeDims && p.n_rot % 2 == 0);
  std::array<float, kMaxRopeDims> cos_sin;  // per token: (cos, sin) of each pair
  for (int64_t t = 0; t < n_tok; ++t) {
    float theta = static_cast<float>(positions[t]);
    for (int64_t i0 = 0; i0 < p.n_rot; i0 += 2) {
      const float ff = p.freq_factors ? p.freq_factors[i0 / 2] : 1.0f;
      const float extrap = theta / ff;
      float angle = p.freq_scale * extrap;
      float mscale = p.attn_factor;
      if (p.ext_factor != 0.0f) {
        const float mix = yarn_ramp(corr_low, corr_high, i0) * p.ext_factor;
        angle = angle * (1.0f - mix) + extrap * mix;
        mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
      }
      cos_sin[static_cast<size_t>(i0)] = std::cos(angle) * mscale;
      cos_sin[static_cast<size_t>(i0) + 1] = std::sin(angle) * mscale;
      theta *= theta_scale;
    }
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * head_dim;
      for (int64_t i0 = 0; i0 < p.n_rot; i0 += 2) {
        const int64_t a = p.neox ? i0 / 2 : i0;
        const int64_t b = p.neox ? i0 / 2 + p.n_rot / 2 : i0 + 1;
        const float c = cos_sin[static_cast<size_t>(i0)], s = cos_sin[static_cast<size_t>(i0) + 1];
        const float x0 = v[a], x1 = v[b];
        if (numerics == Numerics::llama) {
          v[a] = std::fma(x0, c, -(x1 * s));
          v[b] = std::fma(x0, s, x1 * c);
        } else {
          v[a] = x0 * c - x1 * s;
          v[b] = x0 * s + x1 * c;
        }
      }
    }
  }
}

void softmax_in_place(float* x, int64_t n, Numerics mode) {
  if (mode == Numerics::llama) {
    softmax_llama(x, n);
    return;
  }
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void get_row(const WeightView& w, int64_t index, float* dst) {
  quant::dequantize(w.type, w.row(index), dst, w.n_in);
}

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y) {
  const int64_t n_in = w.n_in, n_out = w.n_out;
  pool.parallel_for(n_out, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = w.row(r);
      for (int64_t t = 0; t < n_tok; ++t) {
        y[t * n_out + r] = quant::dot(w.type, row, x + t * n_in, n_in);
      }
    }
  }, 16);
}

}  // namespace cohort::cpu
