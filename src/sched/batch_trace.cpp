#include "sched/batch_trace.h"

#include <iterator>
#include <span>

#include <fmt/format.h>

namespace cohort::sched {
namespace {

void append_ids(std::string& s, const char* key, std::span<const SlotRef> refs) {
  fmt::format_to(std::back_inserter(s), ",\"{}\":[", key);
  for (size_t i = 0; i < refs.size(); ++i) {
    fmt::format_to(std::back_inserter(s), "{}{}", i ? "," : "", refs[i].id);
  }
  s += ']';
}

void append_rows(std::string& s, std::span<const PlanRow> rows) {
  s += ",\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PlanRow& r = rows[i];
    fmt::format_to(std::back_inserter(s),
                   "{}{{\"slot\":{},\"id\":{},\"kind\":\"{}\",\"n\":{},\"pos\":{},\"last\":{}}}",
                   i ? "," : "", r.slot, r.id, kind_name(r.kind), r.n_tokens, r.pos,
                   r.last_chunk ? "true" : "false");
  }
  s += ']';
}

void append_admitted(std::string& s, std::span<const Admission> admitted) {
  s += ",\"admitted\":[";
  for (size_t i = 0; i < admitted.size(); ++i) {
    const Admission& a = admitted[i];
    fmt::format_to(std::back_inserter(s), "{}{{\"slot\":{},\"id\":{},\"cached\":{}}}",
                   i ? "," : "", a.slot, a.id, a.n_cached);
  }
  s += ']';
}

void append_ended(std::string& s, std::span<const Ending> ended) {
  s += ",\"ended\":[";
  for (size_t i = 0; i < ended.size(); ++i) {
    const Ending& e = ended[i];
    fmt::format_to(std::back_inserter(s), "{}{{\"slot\":{},\"id\":{},\"reason\":\"{}\"}}",
                   i ? "," : "", e.slot, e.id, reason_name(e.reason));
  }
  s += ']';
}

}  // namespace

std::string format_trace_line(const BatchPlan& plan, const SchedulerCounters& counters) {
  std::string s;
  fmt::format_to(std::back_inserter(s), "{{\"step\":{},\"phase\":\"{}\"", plan.step,
                 phase_name(plan.phase));
  append_rows(s, plan.rows);
  append_ids(s, "first_tokens", plan.first_tokens);
  append_ids(s, "keep_logits", plan.keep_logits);
  append_admitted(s, plan.admitted);
  append_ended(s, plan.ended);
  append_ids(s, "parked", plan.parked);
  append_ids(s, "unparked", plan.unparked);
  if (!plan.shifted.empty()) append_ids(s, "shifted", plan.shifted);
  fmt::format_to(std::back_inserter(s),
                 ",\"queued\":{},\"processing\":{},\"parked_n\":{},\"blocked\":{},\"cohort\":{}}}",
                 counters.n_queued, counters.n_processing, counters.n_parked, counters.n_blocked,
                 counters.cohort_size);
  return s;
}

void BatchTrace::record(const BatchPlan& plan, const SchedulerCounters& counters) {
  if (!plan.has_work() && plan.admitted.empty() && plan.ended.empty()) return;
  out_ << format_trace_line(plan, counters) << '\n';
}

}  // namespace cohort::sched
