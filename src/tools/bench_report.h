// Records and output formats of `cohort bench`, named as llama-bench names
// them so that scripts written for one read the other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cohort::tools {

struct BenchRecord {
  std::string model_filename;
  std::string model_type;     // "llama 135M Q4_1"
  uint64_t model_size = 0;    // bytes of tensors
  uint64_t model_n_params = 0;
  std::string backend = "CPU";
  int n_gpu_layers = 0;
  std::string gpu_info;       // the GPU's name, empty on the CPU
  int n_batch = 0;
  int n_ubatch = 0;
  int n_threads = 0;
  std::string split_mode = "none";
  std::string allreduce = "none";
  std::string type_k = "f16";  // the KV cache's types (-ctk, -ctv)
  std::string type_v = "f16";
  int n_prompt = 0;
  int n_gen = 0;
  int n_seq = 1;              // sequences decoded together (--npl); rates are their sum
  int n_depth = 0;            // tokens in the cache before the test (-d), not timed
  std::string test_time;      // ISO 8601, UTC
  std::vector<uint64_t> samples_ns;

  double avg_ns() const;
  double stddev_ns() const;
  std::vector<double> samples_ts() const;  // tokens/s per sample
  double avg_ts() const;
  double stddev_ts() const;
  std::string test_name() const;           // "pp512", "tg128", "pp512+tg128", "tg128@8", "tg128 @ d4096"
};

// Prints records in llama-bench's formats: "md", "json", "jsonl" or "csv".
// Throws cohort::Error for another format name.
void print_bench(const std::vector<BenchRecord>& records, const std::string& format);

}  // namespace cohort::tools
