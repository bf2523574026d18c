#include "tools/serve_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cohort::tools {
namespace {

constexpr double kMs = 1e3;

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

double percentile(const std::vector<double>& sorted, double p) {
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.n = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
  s.p50 = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  s.max = values.back();
  return s;
}

double covered_time(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, begin = 0, end = 0;
  bool open = false;
  for (const auto& [b, e] : intervals) {
    if (!(e > b)) continue;
    if (open && b <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) total += end - begin;
    begin = b, end = e, open = true;
  }
  if (open) total += end - begin;
  return total;
}

ServeStats compute_stats(const std::vector<RequestTimeline>& requests) {
  ServeStats s;
  s.n_requests = static_cast<int>(requests.size());
  std::vector<double> ttft, tpot, itl, e2e, queue;
  std::vector<std::pair<double, double>> pp_spans, tg_spans;
  double first_send = INFINITY, last_end = -INFINITY;
  int64_t pp_tokens = 0, tg_tokens = 0;
  for (const RequestTimeline& r : requests) {
    first_send = std::min(first_send, r.send_s);
    last_end = std::max(last_end, r.end_s);
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    ++s.completed;
    const int n_gen = r.generated_tokens();
    const int n_prompt = std::max(r.prompt_tokens, 0);
    const int n_cached = std::max(r.cached_tokens, 0);
    s.input_tokens += n_prompt;
    s.cached_tokens += n_cached;
    s.output_tokens += n_gen;
    pp_tokens += n_prompt - n_cached;
    tg_tokens += std::max(n_gen - 1, 0);
    const double first = r.chunk_s.front(), last = r.chunk_s.back();
    ttft.push_back((first - r.send_s) * kMs);
    e2e.push_back((r.end_s - r.send_s) * kMs);
    if (n_gen > 1) tpot.push_back((last - first) * kMs / (n_gen - 1));
    for (size_t i = 1; i < r.chunk_s.size(); ++i) itl.push_back((r.chunk_s[i] - r.chunk_s[i - 1]) * kMs);
    if (r.server_queue_ms >= 0) queue.push_back(r.server_queue_ms);
    pp_spans.emplace_back(r.send_s, first);
    tg_spans.emplace_back(first, last);
  }
  if (!requests.empty()) s.makespan_s = std::max(0.0, last_end - first_send);
  s.request_throughput = ratio(s.completed, s.makespan_s);
  s.input_tok_s = ratio(static_cast<double>(s.input_tokens), s.makespan_s);
  s.output_tok_s = ratio(static_cast<double>(s.output_tokens), s.makespan_s);
  s.pp_busy_s = covered_time(std::move(pp_spans));
  s.tg_busy_s = covered_time(std::move(tg_spans));
  s.pp_tok_s = ratio(static_cast<double>(pp_tokens), s.pp_busy_s);
  s.tg_tok_s = ratio(static_cast<double>(tg_tokens), s.tg_busy_s);
  s.ttft_ms = summarize(std::move(ttft));
  s.tpot_ms = summarize(std::move(tpot));
  s.itl_ms = summarize(std::move(itl));
  s.e2e_ms = summarize(std::move(e2e));
  if (!queue.empty()) s.queue_ms = summarize(std::move(queue));
  return s;
}

}  // namespace cohort::tools
