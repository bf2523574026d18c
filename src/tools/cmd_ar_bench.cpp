// `cohort ar-bench [-dev cuda0,cuda1] [-ar nccl,host,p2p] [--sizes 8K,...,256M]
// [--graph on,off] [-o md|json]`: the latency and bus bandwidth of one
// all-reduce per transport, size and launch mode (backend/cuda/ar_bench.h
// says how it is measured). Without -dev: every GPU when there are several,
// else two ranks sharing cuda0 (which says nothing about links between
// GPUs, only about the kernels). A transport that cannot run a
// configuration (NCCL on a repeated GPU) gets a row
// that says why, so one run gives the whole table.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "comm/ar_routing.h"
#include "common/error.h"
#include "tools/commands.h"

#if defined(COHORT_HAS_CUDA)
#include "backend/backend.h"
#include "backend/cuda/ar_bench.h"
#include "backend/cuda/devices.h"
#endif

namespace cohort::tools {
namespace {

struct ArBenchFlags {
  std::vector<std::string> devices;
  std::vector<std::string> transports{"nccl", "host", "p2p"};
  std::vector<std::string> sizes{"8K", "64K", "512K", "4M", "32M"};
  std::vector<std::string> graph{"on", "off"};
  std::string output = "md";
};

std::string size_name(int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (1 << 10) && b % (1 << 10) == 0) return fmt::format("{}K", b >> 10);
  return fmt::format("{}", b);
}

#if defined(COHORT_HAS_CUDA)

std::vector<int> rank_devices(const std::vector<std::string>& names) {
  std::vector<int> devs;
  for (const std::string& d : names) {
    const backend::DeviceChoice c = backend::choose_device(d, -1);
    if (c.device != backend::Device::cuda) fail("ar-bench: -dev {}: every rank is a GPU (cuda<N>)", d);
    devs.push_back(c.index);
  }
  if (!devs.empty()) return devs;
  const size_t n = cuda::list_devices().devices.size();
  if (n == 0) fail("ar-bench: no CUDA device");
  if (n == 1) return {0, 0};
  for (size_t i = 0; i < n; ++i) devs.push_back(static_cast<int>(i));
  return devs;
}

void run(const ArBenchFlags& f) {
  if (f.output != "md" && f.output != "json") fail("ar-bench: -o {}: md or json", f.output);
  cuda::ArBenchOptions o;
  o.devices = rank_devices(f.devices);
  for (const std::string& s : f.sizes) o.sizes.push_back(comm::parse_byte_size("--sizes", s));
  std::string dev_list;
  std::vector<backend::DeviceChoice> where;
  for (int d : o.devices) {
    dev_list += (dev_list.empty() ? "" : ",") + fmt::format("cuda{}", d);
    where.push_back({backend::Device::cuda, d});
  }
  // The path each host/p2p row takes (comm/ar_routing.h); NCCL only where it can run.
  const bool gpu_repeats = backend::repeated_gpu(where) >= 0;  // NCCL runs one rank per GPU
  comm::ArRouting routing = comm::ar_routing_from_env();
  if (gpu_repeats) routing.nccl_min_bytes = -1;
  const auto path = [&](const std::string& t, int64_t bytes) {
    return t == "nccl" ? "nccl" : comm::ar_path_name(comm::ar_path(bytes, routing));
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  if (f.output == "md") {
    fmt::print("ranks: -dev {}\n\n| transport | size | path | graph | median µs | p99 µs | algbw GB/s | busbw GB/s |\n"
               "|---|---:|---|---|---:|---:|---:|---:|\n", dev_list);
  }
  for (const std::string& graph : f.graph) {
    if (graph != "on" && graph != "off") fail("ar-bench: --graph {}: on or off", graph);
    for (const std::string& t : f.transports) {
      o.transport = backend::resolve_transport(t, where);
      o.graph = graph == "on";
      std::string why;
      if (t != "nccl" && t != "host" && t != "p2p") fail("ar-bench: -ar {}: nccl, host or p2p", t);
      if (t == "nccl" && gpu_repeats) why = "NCCL runs one rank per GPU";
      std::vector<cuda::ArBenchRow> result;
      if (why.empty()) {
        try {
          result = cuda::run_ar_bench(o);
        } catch (const Error& e) {
          why = e.what();
        }
      }
      if (!why.empty()) {
        if (f.output == "md") fmt::print("| {} | | | {} | {} | | | |\n", t, graph, why);
        rows.push_back({{"transport", t}, {"graph", o.graph}, {"devices", dev_list}, {"skipped", why}});
        continue;
      }
      for (const cuda::ArBenchRow& r : result) {
        if (f.output == "md") {
          fmt::print("| {} | {} | {} | {} | {:.2f} | {:.2f} | {:.1f} | {:.1f} |\n", r.transport, size_name(r.bytes),
                     path(t, r.bytes), graph, r.median_us, r.p99_us, r.algbw_gbs, r.busbw_gbs);
        }
        rows.push_back({{"transport", r.transport}, {"graph", r.graph}, {"devices", dev_list},
                        {"n_ranks", r.n_ranks}, {"bytes", r.bytes}, {"path", path(t, r.bytes)},
                        {"median_us", r.median_us},
                        {"p99_us", r.p99_us}, {"algbw_gbs", r.algbw_gbs}, {"busbw_gbs", r.busbw_gbs},
                        {"n_samples", r.n_samples}, {"calls_per_sample", r.calls_per_sample}});
      }
    }
  }
  if (f.output == "json") fmt::print("{}\n", rows.dump(2));
}

#endif

}  // namespace

void register_ar_bench(CLI::App& app) {
  auto f = std::make_shared<ArBenchFlags>();
  CLI::App* cmd = app.add_subcommand("ar-bench", "measure the all-reduce transports (latency, bus bandwidth)");
  cmd->add_option("--device", f->devices, "-dev: one GPU per rank, may repeat (default: every GPU, or cuda0,cuda0)")
      ->delimiter(',');
  cmd->add_option("--allreduce", f->transports, "-ar: transports (list: nccl,host,p2p)")->delimiter(',');
  cmd->add_option("--sizes", f->sizes, "bytes per reduction (list, units K, M, G)")->delimiter(',');
  cmd->add_option("--graph", f->graph, "launch one call at a time (off), from a CUDA graph (on), or both")
      ->delimiter(',');
  cmd->add_option("-o,--output", f->output, "md or json");
  cmd->callback([f] {
#if defined(COHORT_HAS_CUDA)
    run(*f);
#else
    (void)size_name;
    fail("ar-bench: this cohort was built without CUDA (configure with -DCOHORT_CUDA=ON)");
#endif
  });
}

}  // namespace cohort::tools
