// The arithmetic of llama-perplexity: negative log-likelihoods of the second
// half of each chunk, the final estimate with its uncertainty, and the KL
// divergence against saved log-probabilities.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cohort::tools {

// log_softmax(logits) [n] in double, written to out [n].
void log_softmax(std::span<const float> logits, std::span<double> out);

struct RunningStats {
  double sum = 0, sum2 = 0;
  int64_t n = 0;
  void add(double x) {
    sum += x;
    sum2 += x * x;
    ++n;
  }
  double mean() const { return n ? sum / static_cast<double>(n) : 0.0; }
  // Standard error of the mean (0 for fewer than two values).
  double stderr_of_mean() const;
};

// llama-perplexity's estimate: PPL = exp(mean NLL), uncertainty
// PPL * stderr(NLL).
struct PplEstimate {
  double ppl;
  double uncertainty;
};
PplEstimate estimate(const RunningStats& nll);

// KL(p || q) for log-probabilities lp (base) and lq (this run).
double kl_divergence(std::span<const double> lp, std::span<const double> lq);

}  // namespace cohort::tools
