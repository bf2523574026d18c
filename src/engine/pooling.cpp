#include "engine/pooling.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "common/error.h"

namespace cohort::engine {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::none: return "none";
    case Pooling::mean: return "mean";
    case Pooling::cls: return "cls";
    case Pooling::last: return "last";
  }
  return "?";
}

Pooling parse_pooling(const std::string& name) {
  for (Pooling p : {Pooling::none, Pooling::mean, Pooling::cls, Pooling::last}) {
    if (name == pooling_name(p)) return p;
  }
  fail("--pooling {}: not one of none, mean, cls, last", name);
}

std::optional<Pooling> pooling_from_gguf(int64_t value) {
  if (value < 0 || value > static_cast<int64_t>(Pooling::last)) return std::nullopt;
  return static_cast<Pooling>(value);
}

bool pooling_reads_row(Pooling p, int row, int n_prompt) {
  switch (p) {
    case Pooling::cls: return row == 0;
    case Pooling::last: return row == n_prompt - 1;
    case Pooling::none:
    case Pooling::mean: return true;
  }
  return true;
}

std::vector<std::vector<float>> pool_rows(std::span<const float> rows, int n_rows, int n_embd, Pooling p) {
  assert(n_rows >= 1 && rows.size() == static_cast<size_t>(n_rows) * static_cast<size_t>(n_embd));
  const auto width = static_cast<size_t>(n_embd);
  const auto row = [&](int r) { return rows.subspan(static_cast<size_t>(r) * width, width); };
  std::vector<std::vector<float>> out;
  switch (p) {
    case Pooling::none:
      for (int r = 0; r < n_rows; ++r) out.emplace_back(row(r).begin(), row(r).end());
      break;
    case Pooling::mean: {
      std::vector<float> sum(static_cast<size_t>(n_embd), 0.0f);
      for (int r = 0; r < n_rows; ++r) {
        const std::span<const float> x = row(r);
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
      }
      const float scale = 1.0f / static_cast<float>(n_rows);
      for (float& s : sum) s *= scale;
      out.push_back(std::move(sum));
      break;
    }
    case Pooling::cls: out.emplace_back(row(0).begin(), row(0).end()); break;
    case Pooling::last: out.emplace_back(row(n_rows - 1).begin(), row(n_rows - 1).end()); break;
  }
  return out;
}

void normalize_embedding(std::span<float> v, int embd_normalize) {
  double sum = 0.0;
  switch (embd_normalize) {
    case -1: sum = 1.0; break;
    case 0:
      for (float x : v) sum = std::max(sum, static_cast<double>(std::fabs(x)));
      sum /= 32760.0;  // int16's range, as llama-server
      break;
    case 2:
      for (float x : v) sum += static_cast<double>(x) * static_cast<double>(x);
      sum = std::sqrt(sum);
      break;
    default:
      for (float x : v) sum += std::pow(std::fabs(static_cast<double>(x)), embd_normalize);
      sum = std::pow(sum, 1.0 / embd_normalize);
      break;
  }
  const float norm = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (float& x : v) x *= norm;
}

}  // namespace cohort::engine
