// `cohort bench`: prompt-processing and generation throughput, as llama-bench
// measures them (-p 512 -n 128 -r 5; several values per flag give several
// rows; one warm-up run per configuration is not counted). -d N runs each
// test after N tokens already in the cache (prefilled before the clock
// starts), as llama-bench's -d: decode speed at a long context.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "backend/backend.h"
#if COHORT_HAS_CUDA
#include "backend/cuda/devices.h"
#endif
#include "common/error.h"
#include "engine/decoder.h"
#include "gguf/file_type.h"
#include "kv/block_pool.h"
#include "model/model.h"
#include "tools/bench_report.h"
#include "tools/sampling_flags.h"
#include "tools/commands.h"

namespace cohort::tools {
namespace {

struct BenchOptions {
  std::string model;
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<int> n_depth{0};  // -d
  std::vector<std::string> pg;
  std::vector<int> threads{0};
  std::vector<int> n_batch{2048};
  std::vector<int> n_ubatch{512};
  int repetitions = 5;
  std::vector<int> n_parallel;  // --npl: batched decoding of this many sequences (llama-batched-bench)
  std::string device;     // -dev
  int n_gpu_layers = -1;  // -ngl
  std::string split_mode = "none";  // -sm
  std::vector<float> tensor_split;  // -ts
  std::vector<std::string> allreduce{"p2p"};  // -ar: one configuration per transport
  std::vector<std::string> cache_type_k{"f16"};  // -ctk, -ctv: one configuration per pair
  std::vector<std::string> cache_type_v{"f16"};
  int poll = kDefaultPoll;
  std::string output = "md";
  bool exact = false;
};

struct Test {
  int n_prompt;
  int n_gen;
  int n_depth = 0;
};

// Positions [pos, end) of sequence 0 in chunks of n_batch, the logits of
// the last one wanted where `want_last`.
void prefill(engine::Decoder& dec, int pos, int end, bool want_last, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> token(0, dec.n_vocab() - 1);
  engine::Batch batch;
  while (pos < end) {
    batch.clear();
    const int n = std::min(dec.options().n_batch, end - pos);
    for (int i = 0; i < n; ++i, ++pos) batch.add(token(rng), pos, 0, want_last && pos == end - 1);
    dec.decode(batch);
  }
}

// One timed run: the prompt in chunks of n_batch (logits for the last token
// only), then n_gen single-token steps, after n_depth untimed tokens.
uint64_t run_once(engine::Decoder& dec, const Test& t, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> token(0, dec.n_vocab() - 1);
  dec.free_sequence(0);
  dec.reserve(0, t.n_depth + t.n_prompt + t.n_gen);
  prefill(dec, 0, t.n_depth, false, rng);
  engine::Batch batch;
  const auto start = std::chrono::steady_clock::now();
  prefill(dec, t.n_depth, t.n_depth + t.n_prompt, true, rng);
  int pos = t.n_depth + t.n_prompt;
  for (int i = 0; i < t.n_gen; ++i, ++pos) {
    batch.clear();
    batch.add(token(rng), pos, 0, true);
    dec.decode(batch);
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - start);
  return static_cast<uint64_t>(ns.count());
}

// Batched decoding, as llama-batched-bench measures it: n_seq prompts of
// n_prompt tokens prefilled together (in chunks of n_batch tokens), then
// n_gen steps of one token for every sequence. Returns the nanoseconds of
// the two phases.
std::pair<uint64_t, uint64_t> run_batched(engine::Decoder& dec, int n_seq, const Test& t, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> token(0, dec.n_vocab() - 1);
  for (int s = 0; s < n_seq; ++s) {
    dec.free_sequence(s);
    dec.reserve(s, t.n_prompt + t.n_gen);
  }
  engine::Batch batch;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < n_seq; ++s) {
    for (int pos = 0; pos < t.n_prompt; ++pos) {
      if (batch.n_tokens() == dec.options().n_batch) {
        dec.decode(batch);
        batch.clear();
      }
      batch.add(token(rng), pos, s, pos == t.n_prompt - 1);
    }
  }
  if (batch.n_tokens() > 0) dec.decode(batch);
  const auto prefilled = std::chrono::steady_clock::now();
  for (int i = 0; i < t.n_gen; ++i) {
    batch.clear();
    for (int s = 0; s < n_seq; ++s) batch.add(token(rng), t.n_prompt + i, s, true);
    dec.decode(batch);
  }
  const auto end = std::chrono::steady_clock::now();
  const auto ns = [](auto d) { return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); };
  return {ns(prefilled - start), ns(end - prefilled)};
}

std::vector<Test> tests_of(const BenchOptions& o) {
  std::vector<Test> tests;
  for (int d : o.n_depth) {
    if (d < 0) fail("-d must list depths of at least 0 tokens, got {}", d);
    for (int p : o.n_prompt) {
      if (p > 0) tests.push_back({p, 0, d});
    }
    for (int n : o.n_gen) {
      if (n > 0) tests.push_back({0, n, d});
    }
    for (const std::string& s : o.pg) {
      int p = 0, n = 0;
      if (std::sscanf(s.c_str(), "%d,%d", &p, &n) != 2 || p < 0 || n < 0) {
        fail("-pg: expected PROMPT,GEN (for example 512,128), got '{}'", s);
      }
      tests.push_back({p, n, d});
    }
  }
  return tests;
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

BenchRecord base_record(const model::Model& m, const std::string& path) {
  BenchRecord r;
  r.model_filename = path;
  const gguf::GgufFile& f = m.file();
  for (const gguf::TensorInfo& t : f.tensors()) {
    r.model_size += t.n_bytes;
    r.model_n_params += t.n_elements;
  }
  auto ftype = f.metadata().get_int("general.file_type");
  r.model_type = fmt::format("{} {:.0f}M {}", f.architecture(),
                             static_cast<double>(r.model_n_params) / 1e6,
                             ftype ? gguf::file_type_name(*ftype) : "?");
  return r;
}

std::string gpu_name(int index) {
#if COHORT_HAS_CUDA
  const cuda::DeviceList list = cuda::list_devices();
  if (index < static_cast<int>(list.devices.size())) return list.devices[static_cast<size_t>(index)].name;
#endif
  return fmt::format("cuda{}", index);
}

// The fields every record of one configuration shares.
BenchRecord configuration_record(const model::Model& model, const BenchOptions& o,
                                 const engine::DecoderOptions& d) {
  BenchRecord r = base_record(model, o.model);
  r.n_batch = d.n_batch;
  r.n_ubatch = d.n_ubatch;
  r.n_threads = d.n_threads > 0 ? d.n_threads : static_cast<int>(std::thread::hardware_concurrency());
  r.split_mode = d.split_mode;
  if (d.split_mode == "tensor") r.allreduce = d.transport();
  r.type_k = d.cache_type_k;
  r.type_v = d.cache_type_v;
  const backend::DeviceChoice where = d.device_of(d.devices().front());
  if (where.device == backend::Device::cuda) {
    r.backend = "CUDA";
    r.n_gpu_layers = static_cast<int>(model.hparams().n_layer);
    r.gpu_info = gpu_name(where.index);
  }
  return r;
}

// A record of test t, starting now.
BenchRecord record_of(BenchRecord r, const Test& t) {
  r.n_prompt = t.n_prompt;
  r.n_gen = t.n_gen;
  r.n_depth = t.n_depth;
  r.test_time = now_iso8601();
  return r;
}

// The batched rows of one configuration: for each --npl value, the prompt
// phase (pp, all sequences' tokens) and the generation phase (tg, the
// aggregate rate over the sequences), each timed over -r runs.
void run_parallel(engine::Decoder& dec, const BenchOptions& o, const BenchRecord& base, const Test& t,
                  std::vector<BenchRecord>& records, std::mt19937& rng) {
  for (int n_seq : o.n_parallel) {
    BenchRecord pp = record_of(base, {t.n_prompt, 0}), tg = record_of(base, {0, t.n_gen});
    pp.n_seq = tg.n_seq = n_seq;
    run_batched(dec, n_seq, t, rng);  // warm-up
    for (int i = 0; i < o.repetitions; ++i) {
      const auto [pp_ns, tg_ns] = run_batched(dec, n_seq, t, rng);
      pp.samples_ns.push_back(pp_ns);
      tg.samples_ns.push_back(tg_ns);
    }
    if (o.output == "md") fmt::print(stderr, "bench: {} done\n", tg.test_name());
    if (t.n_prompt > 0) records.push_back(std::move(pp));
    if (t.n_gen > 0) records.push_back(std::move(tg));
  }
  for (int s = 0; s < *std::max_element(o.n_parallel.begin(), o.n_parallel.end()); ++s) dec.free_sequence(s);
}

// One decoder serves every test of a configuration (a GPU uploads the
// weights once), its context sized for the longest test.
void run_configuration(const model::Model& model, const BenchOptions& o, engine::DecoderOptions d,
                       const std::vector<Test>& tests, std::vector<BenchRecord>& records, std::mt19937& rng) {
  const Test batched{o.n_prompt.empty() ? 0 : o.n_prompt.front(), o.n_gen.empty() ? 0 : o.n_gen.front()};
  for (const Test& t : tests) d.n_ctx = std::max(d.n_ctx, t.n_depth + t.n_prompt + t.n_gen + 16);
  for (int n_seq : o.n_parallel) {
    const int per_seq = (batched.n_prompt + batched.n_gen + kv::kDefaultBlockSize - 1) / kv::kDefaultBlockSize;
    d.n_ctx = std::max(d.n_ctx, n_seq * per_seq * kv::kDefaultBlockSize);
  }
  engine::Decoder dec(model, d);
  const BenchRecord base = configuration_record(model, o, d);
  if (!o.n_parallel.empty()) {
    run_parallel(dec, o, base, batched, records, rng);
    return;
  }
  for (const Test& t : tests) {
    BenchRecord r = record_of(base, t);
    run_once(dec, t, rng);  // warm-up
    for (int i = 0; i < o.repetitions; ++i) r.samples_ns.push_back(run_once(dec, t, rng));
    if (o.output == "md") fmt::print(stderr, "bench: {} done\n", r.test_name());
    records.push_back(std::move(r));
  }
}

// What one decoder is made with besides -t and -b: a -ub value, an -ar
// transport (only under -sm tensor), and a -ctk/-ctv pair.
struct Configuration {
  int n_ubatch;
  std::string allreduce, type_k, type_v;
};

std::vector<Configuration> configurations(const BenchOptions& o) {
  std::vector<Configuration> out;
  const std::vector<std::string> ars = o.split_mode == "tensor" ? o.allreduce : std::vector<std::string>{"host"};
  for (int nub : o.n_ubatch) {
    for (const std::string& ar : ars) {
      for (const std::string& tk : o.cache_type_k) {
        for (const std::string& tv : o.cache_type_v) out.push_back({nub, ar, tk, tv});
      }
    }
  }
  return out;
}

void run_bench(const BenchOptions& o) {
  if (o.repetitions < 1) fail("-r must be at least 1, got {}", o.repetitions);
  if (!o.n_parallel.empty() && (o.n_depth.size() != 1 || o.n_depth.front() != 0)) {
    fail("-d applies to single-sequence tests; --npl runs its sequences from an empty cache");
  }
  for (int n : o.n_parallel) {
    if (n < 1) fail("--npl must list sequence counts of at least 1, got {}", n);
  }
  const std::vector<Test> tests = tests_of(o);
  auto model = model::Model::load(o.model);
  std::vector<BenchRecord> records;
  std::mt19937 rng(1234);
  for (int threads : o.threads) {
    for (int nb : o.n_batch) {
      for (const Configuration& c : configurations(o)) {
        engine::DecoderOptions d;
        d.allreduce = c.allreduce;
        d.cache_type_k = c.type_k;
        d.cache_type_v = c.type_v;
        d.n_ctx = 16;
        d.n_batch = nb;
        d.n_ubatch = c.n_ubatch;
        d.n_threads = threads;
        d.poll = o.poll;
        d.exact = o.exact;
        d.device = o.device;
        d.n_gpu_layers = o.n_gpu_layers;
        d.split_mode = o.split_mode;
        d.tensor_split = o.tensor_split;
        run_configuration(*model, o, d, tests, records, rng);
      }
    }
  }
  print_bench(records, o.output);
}

}  // namespace

void register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "prompt and generation throughput (llama-bench)");
  cmd->add_option("-m,--model", o->model, "GGUF file")->required();
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens (comma-separated list)")->delimiter(',');
  cmd->add_option("-n,--n-gen", o->n_gen, "generated tokens (list)")->delimiter(',');
  cmd->add_option("-d,--n-depth", o->n_depth, "tokens already in the cache before each test (list)")->delimiter(',');
  cmd->add_option("--pg", o->pg, "prompt then generation: PROMPT,GEN (repeatable)");
  cmd->add_option("--npl", o->n_parallel,
                  "batched decoding of this many sequences (list), each with the first -p prompt and -n tokens; "
                  "tg rows give the aggregate rate (llama-batched-bench's S_TG)")
      ->delimiter(',');
  cmd->add_option("-t,--threads", o->threads, "threads (list)")->delimiter(',');
  cmd->add_option("-b,--batch-size", o->n_batch, "batch size (list)")->delimiter(',');
  cmd->add_option("--ubatch-size", o->n_ubatch, "micro-batch size (list)")->delimiter(',');
  cmd->add_option("-r,--repetitions", o->repetitions, "timed runs per test");
  cmd->add_option("--poll", o->poll, "0..100: how long waiting threads spin before they sleep");
  cmd->add_option("-o,--output", o->output, "md, json, jsonl or csv");
  cmd->add_flag("--exact", o->exact, "CPU reference path (F32 activations)");
  cmd->add_option("--device", o->device,
                  "-dev: cpu or cuda<N> (default: the first GPU when one is visible); with -sm tensor one "
                  "entry per rank (e.g. cpu,cpu)");
  cmd->add_option("--n-gpu-layers", o->n_gpu_layers, "-ngl: 0 computes on the CPU; any other value puts every layer on the GPU");
  add_split_flags(cmd, o->split_mode, o->tensor_split);
  cmd->add_option("--allreduce", o->allreduce, "-ar: GPU ranks' transports to measure (list: nccl,host,p2p)")->delimiter(',');
  cmd->add_option("--cache-type-k", o->cache_type_k, "-ctk: KV cache types for K (list: f32,f16,bf16,q8_0)")->delimiter(',');
  cmd->add_option("--cache-type-v", o->cache_type_v, "-ctv: KV cache types for V (list)")->delimiter(',');
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace cohort::tools
