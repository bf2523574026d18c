#include "tools/sampling_flags.h"

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
  cmd->add_option("--device", o.device, "-dev: cpu or cuda<N> (default: the first GPU when one is visible)");
  cmd->add_option("--n-gpu-layers", o.n_gpu_layers, "-ngl: 0 computes on the CPU; any other value puts every layer on the GPU");
  cmd->add_flag("--exact", o.exact, "CPU reference path: F32 activations in every dot product");
}

}  // namespace cohort::tools
