#include "tools/bench_report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace cohort::tools {
namespace {

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double s = 0.0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

std::vector<double> as_double(const std::vector<uint64_t>& v) {
  return {v.begin(), v.end()};
}

nlohmann::ordered_json to_json(const BenchRecord& r) {
  return {{"model_filename", r.model_filename}, {"model_type", r.model_type},
          {"model_size", r.model_size}, {"model_n_params", r.model_n_params},
          {"backends", r.backend}, {"gpu_info", r.gpu_info}, {"n_gpu_layers", r.n_gpu_layers},
          {"n_batch", r.n_batch}, {"n_ubatch", r.n_ubatch},
          {"n_threads", r.n_threads}, {"split_mode", r.split_mode}, {"allreduce", r.allreduce},
          {"type_k", r.type_k}, {"type_v", r.type_v},
          {"n_prompt", r.n_prompt}, {"n_gen", r.n_gen}, {"n_seq", r.n_seq}, {"n_depth", r.n_depth}, {"test_time", r.test_time},
          {"avg_ns", static_cast<uint64_t>(r.avg_ns())},
          {"stddev_ns", static_cast<uint64_t>(r.stddev_ns())}, {"avg_ts", r.avg_ts()},
          {"stddev_ts", r.stddev_ts()}, {"samples_ns", r.samples_ns}, {"samples_ts", r.samples_ts()}};
}

std::string size_text(uint64_t bytes) {
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string params_text(uint64_t n) {
  return n >= 1000000000ull ? fmt::format("{:.2f} B", static_cast<double>(n) / 1e9)
                            : fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
}

// As llama-bench: a GPU run shows ngl where a CPU run shows threads; the
// split mode (and the transport of GPU ranks) shows when a run splits, the
// KV cache types when one is not the default.
void print_md(const std::vector<BenchRecord>& records) {
  auto any = [&records](auto pred) { return std::any_of(records.begin(), records.end(), pred); };
  const bool gpu = any([](const BenchRecord& r) { return r.n_gpu_layers > 0; });
  const bool split = any([](const BenchRecord& r) { return r.split_mode != "none"; });
  const bool kv = any([](const BenchRecord& r) { return r.type_k != "f16" || r.type_v != "f16"; });
  fmt::print("| model | size | params | backend | {} |{}{} n_batch | n_ubatch | test | t/s |\n", gpu ? "ngl" : "threads",
             split ? (gpu ? " sm | ar |" : " sm |") : "", kv ? " type_k | type_v |" : "");
  fmt::print("| --- | ---: | ---: | --- | ---: |{}{} ---: | ---: | ---: | ---: |\n",
             split ? (gpu ? " --- | --- |" : " --- |") : "", kv ? " --- | --- |" : "");
  for (const BenchRecord& r : records) {
    const std::string sm = !split ? "" : gpu ? fmt::format(" {} | {} |", r.split_mode, r.allreduce)
                                             : fmt::format(" {} |", r.split_mode);
    const std::string types = kv ? fmt::format(" {} | {} |", r.type_k, r.type_v) : "";
    fmt::print("| {} | {} | {} | {} | {} |{}{} {} | {} | {} | {:.2f} ± {:.2f} |\n", r.model_type,
               size_text(r.model_size), params_text(r.model_n_params), r.backend,
               gpu ? r.n_gpu_layers : r.n_threads, sm, types, r.n_batch, r.n_ubatch, r.test_name(), r.avg_ts(),
               r.stddev_ts());
  }
}

void print_csv(const std::vector<BenchRecord>& records) {
  fmt::print("model_filename,model_type,model_size,model_n_params,backends,n_batch,n_ubatch,"
             "n_threads,split_mode,allreduce,type_k,type_v,n_prompt,n_gen,test_time,avg_ns,stddev_ns,avg_ts,"
             "stddev_ts\n");
  for (const BenchRecord& r : records) {
    fmt::print("\"{}\",\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0f},{:.0f},{:.6f},{:.6f}\n",
               r.model_filename, r.model_type, r.model_size, r.model_n_params, r.backend,
               r.n_batch, r.n_ubatch, r.n_threads, r.split_mode, r.allreduce, r.type_k, r.type_v, r.n_prompt, r.n_gen,
               r.test_time, r.avg_ns(), r.stddev_ns(), r.avg_ts(), r.stddev_ts());
  }
}

}  // namespace

double BenchRecord::avg_ns() const { return mean(as_double(samples_ns)); }
double BenchRecord::stddev_ns() const { return stddev(as_double(samples_ns)); }

std::vector<double> BenchRecord::samples_ts() const {
  std::vector<double> ts;
  for (uint64_t ns : samples_ns) ts.push_back(1e9 * n_seq * (n_prompt + n_gen) / static_cast<double>(ns));
  return ts;
}

double BenchRecord::avg_ts() const { return mean(samples_ts()); }
double BenchRecord::stddev_ts() const { return stddev(samples_ts()); }

std::string BenchRecord::test_name() const {
  std::string name;
  if (n_seq > 1) {
    name = fmt::format("{}{}@{}", n_gen == 0 ? "pp" : "tg", n_gen == 0 ? n_prompt : n_gen, n_seq);
  } else if (n_gen == 0) {
    name = fmt::format("pp{}", n_prompt);
  } else if (n_prompt == 0) {
    name = fmt::format("tg{}", n_gen);
  } else {
    name = fmt::format("pp{}+tg{}", n_prompt, n_gen);
  }
  return n_depth > 0 ? fmt::format("{} @ d{}", name, n_depth) : name;
}

void print_bench(const std::vector<BenchRecord>& records, const std::string& format) {
  if (format == "md") {
    print_md(records);
  } else if (format == "csv") {
    print_csv(records);
  } else if (format == "json" || format == "jsonl") {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const BenchRecord& r : records) {
      if (format == "jsonl") fmt::print("{}\n", to_json(r).dump());
      all.push_back(to_json(r));
    }
    if (format == "json") fmt::print("{}\n", all.dump(2));
  } else {
    fail("-o: unknown output format '{}' (md, json, jsonl, csv)", format);
  }
}

}  // namespace cohort::tools
