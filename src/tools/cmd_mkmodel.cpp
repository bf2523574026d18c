// `cohort mkmodel --preset NAME [--arch FAMILY] --type TYPE [--vocab-from FILE]
// [--layers N] [--ctx-train N] -o OUT`:
// a GGUF with random weights for a named shape.
#include <chrono>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "model/presets.h"
#include "model/random_model.h"
#include "tools/commands.h"

namespace cohort::tools {

void register_mkmodel(CLI::App& app) {
  struct Options {
    std::string preset;
    std::string arch;
    std::string type = "f16";
    std::string vocab_from;
    std::string output;
    uint64_t seed = 42;
    int threads = 0;
    int64_t layers = 0;
    int64_t ctx_train = 0;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("mkmodel", "write a GGUF model with random weights");
  cmd->add_option("--preset", opt->preset,
                  fmt::format("model shape: {}", fmt::join(model::preset_names(), ", ")))
      ->required();
  cmd->add_option("--arch", opt->arch, "family: llama, qwen2, qwen3 (default: the preset's)");
  cmd->add_option("--type", opt->type, "type of the weight matrices: f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k");
  cmd->add_option("--vocab-from", opt->vocab_from, "copy the tokenizer of this GGUF file");
  cmd->add_option("-o,--output", opt->output, "output file")->required();
  cmd->add_option("-s,--seed", opt->seed, "random seed");
  cmd->add_option("-t,--threads", opt->threads, "threads (default: all)");
  cmd->add_option("--layers", opt->layers, "override the preset's layer count");
  cmd->add_option("--ctx-train", opt->ctx_train,
                  "override the preset's training context (the file's context_length; llama-server "
                  "caps a slot's context at it)");
  cmd->callback([opt] {
    model::RandomModelOptions o;
    o.hp = model::preset(opt->preset);
    o.preset_name = opt->preset;
    if (!opt->arch.empty()) o.hp.family = model::family_from_name(opt->arch);
    if (opt->layers < 0) fail("--layers must be positive, got {}", opt->layers);
    if (opt->layers > 0) o.hp.n_layer = opt->layers;
    if (opt->ctx_train < 0 || opt->ctx_train > (int64_t{1} << 24))
      fail("--ctx-train must be 1 to {}, got {}", int64_t{1} << 24, opt->ctx_train);
    if (opt->ctx_train > 0) o.hp.n_ctx_train = opt->ctx_train;
    auto type = gguf::type_from_name(opt->type);
    if (!type) fail("--type: unknown tensor type '{}'", opt->type);
    o.type = *type;
    o.seed = opt->seed;
    o.n_threads = opt->threads;
    o.vocab_from = opt->vocab_from;
    auto t0 = std::chrono::steady_clock::now();
    model::write_random_model(o, opt->output);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "mkmodel: wrote {} ({} {}, {}) in {:.2f} s\n", opt->output, opt->preset,
               model::family_name(o.hp.family), opt->type, s);
  });
}

}  // namespace cohort::tools
