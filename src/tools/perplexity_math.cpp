#include "tools/perplexity_math.h"

#include <algorithm>
#include <cmath>

namespace cohort::tools {

void log_softmax(std::span<const float> logits, std::span<double> out) {
  double max = -INFINITY;
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double lse = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - lse;
}

double RunningStats::stderr_of_mean() const {
  if (n < 2) return 0.0;
  const double m = mean();
  const double var = sum2 / static_cast<double>(n) - m * m;
  return var > 0 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
}

PplEstimate estimate(const RunningStats& nll) {
  const double ppl = std::exp(nll.mean());
  return {ppl, ppl * nll.stderr_of_mean()};
}

double kl_divergence(std::span<const double> lp, std::span<const double> lq) {
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

}  // namespace cohort::tools
