#include "tools/sampling_flags.h"

#include <exception>

#include "common/error.h"

namespace cohort::tools {

void add_sampling_flags(CLI::App* cmd, engine::SamplingParams& p) {
  cmd->add_option("--temp", p.temp, "temperature (<= 0: greedy)");
  cmd->add_option("--top-k", p.top_k, "top-k (0: off)");
  cmd->add_option("--top-p", p.top_p, "top-p (1: off)");
  cmd->add_option("--min-p", p.min_p, "min-p (0: off)");
  cmd->add_option("--repeat-penalty", p.repeat_penalty, "repetition penalty (1: off)");
  cmd->add_option("--repeat-last-n", p.repeat_last_n, "tokens the penalties look back on");
  cmd->add_option("--presence-penalty", p.presence_penalty, "presence penalty (0: off)");
  cmd->add_option("--frequency-penalty", p.frequency_penalty, "frequency penalty (0: off)");
  cmd->add_option("-s,--seed", p.seed, "random seed");
}

void add_decoder_flags(CLI::App* cmd, engine::DecoderOptions& o) {
  cmd->add_option("-c,--ctx-size", o.n_ctx, "KV cache capacity in tokens");
  cmd->add_option("-b,--batch-size", o.n_batch, "most tokens per batch");
  cmd->add_option("--ubatch-size", o.n_ubatch, "most tokens per forward (-ub)");
  cmd->add_option("-t,--threads", o.n_threads, "threads (default: all cores)");
  cmd->add_option("--poll", o.poll, "0..100: how long waiting threads spin before they sleep (0: not at all)");
  cmd->add_option("--device", o.device,
                  "-dev: cpu or cuda<N> (default: the first GPU when one is visible); with -sm tensor a "
                  "comma-separated list, one entry per rank (e.g. cpu,cpu)");
  cmd->add_option("--n-gpu-layers", o.n_gpu_layers, "-ngl: 0 computes on the CPU; any other value puts every layer on the GPU");
  cmd->add_flag("--exact", o.exact, "CPU reference path: F32 activations in every dot product");
  cmd->add_option("--cache-type-k", o.cache_type_k, "-ctk: the KV cache's type for K: f32, f16 (default), bf16, q8_0");
  cmd->add_option("--cache-type-v", o.cache_type_v, "-ctv: the KV cache's type for V: f32, f16 (default), bf16, q8_0");
  add_split_flags(cmd, o.split_mode, o.tensor_split);
  cmd->add_option("--allreduce", o.allreduce,
                  "-ar: how GPU ranks reduce: p2p (device memory, default; host where peer access is missing), "
                  "nccl (one rank per GPU) or host (through pinned host memory); COHORT_ALLREDUCE overrides");
}

void add_split_flags(CLI::App* cmd, std::string& split_mode, std::vector<float>& tensor_split) {
  cmd->add_option("--split-mode", split_mode, "-sm: none (one device) or tensor (tensor parallelism over the -dev list)");
  cmd->add_option_function<std::string>(
      "--tensor-split", [&tensor_split](const std::string& s) { tensor_split = parse_tensor_split(s); },
      "-ts: the share of each rank, e.g. 2,1,1 or 3/1 (default: even)");
}

std::vector<float> parse_tensor_split(const std::string& text) {
  std::vector<float> out;
  size_t at = 0;
  for (;;) {
    const size_t sep = text.find_first_of(",/", at);
    const std::string entry = text.substr(at, sep == std::string::npos ? std::string::npos : sep - at);
    size_t used = 0;
    float v = 0.0f;
    try {
      v = std::stof(entry, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (entry.empty() || used != entry.size()) fail("-ts '{}': '{}' is not a number", text, entry);
    out.push_back(v);
    if (sep == std::string::npos) return out;
    at = sep + 1;
  }
}

}  // namespace cohort::tools
