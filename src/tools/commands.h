// Subcommands of the `cohort` binary. Each registers itself on the app and
// sets a callback that runs it; errors propagate as cohort::Error and are
// printed by main() as one `error:` line.
#pragma once

#include <CLI/CLI.hpp>

namespace cohort::tools {

void register_info(CLI::App& app);
void register_chat_template(CLI::App& app);
void register_mkmodel(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_grammar_check(CLI::App& app);
void register_detokenize(CLI::App& app);
void register_logits(CLI::App& app);
void register_bench(CLI::App& app);
void register_run(CLI::App& app);
void register_serve(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_bench_serve(CLI::App& app);
void register_devices(CLI::App& app);
void register_ar_bench(CLI::App& app);

}  // namespace cohort::tools
