#include "server/slot_state.h"

#include <algorithm>

namespace cohort::server {

SlotState::SlotState(std::shared_ptr<RequestHandle> h, GenerationRequest r,
                     sched::RequestId request_id, int n_vocab, int n_ctx,
                     tokenizer::Detokenizer d, engine::StopParams stop_params)
    : handle(std::move(h)),
      request(std::move(r)),
      id(request_id),
      stream(request.sampling, n_vocab, n_ctx, std::move(d), std::move(stop_params)) {
  stream.accept_prompt(request.prompt);  // penalties see the prompt too, as in llama-server
}

LatencyHistograms::LatencyHistograms()
    : bounds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
      ttft(bounds.size() + 1, 0),
      itl(bounds.size() + 1, 0) {}

namespace {
void add(std::vector<uint64_t>& counts, const std::vector<double>& bounds, double v) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  counts[i] += 1;
}
}  // namespace

void LatencyHistograms::add_ttft(double s) {
  add(ttft, bounds, s);
  ttft_sum += s;
}

void LatencyHistograms::add_itl(double s) {
  add(itl, bounds, s);
  itl_sum += s;
}

void LatencyHistograms::fill(ServiceStats& stats) const {
  stats.latency_buckets = bounds;
  // cumulative counts, as Prometheus buckets are
  stats.ttft_counts.assign(ttft.size(), 0);
  stats.itl_counts.assign(itl.size(), 0);
  uint64_t a = 0, b = 0;
  for (size_t i = 0; i < ttft.size(); ++i) {
    a += ttft[i];
    b += itl[i];
    stats.ttft_counts[i] = a;
    stats.itl_counts[i] = b;
  }
  stats.ttft_sum = ttft_sum;
  stats.itl_sum = itl_sum;
}

}  // namespace cohort::server
