// The `cohort` binary: one executable, one subcommand per job.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "tools/commands.h"
#include "tools/flags.h"

int main(int argc, char** argv) {
  CLI::App app{"cohort: an LLM inference server with phase-exclusive scheduling"};
  app.require_subcommand(1);
  cohort::tools::register_info(app);
  cohort::tools::register_chat_template(app);
  cohort::tools::register_mkmodel(app);
  cohort::tools::register_tokenize(app);
  cohort::tools::register_detokenize(app);
  cohort::tools::register_grammar_check(app);
  cohort::tools::register_logits(app);
  cohort::tools::register_bench(app);
  cohort::tools::register_run(app);
  cohort::tools::register_serve(app);
  cohort::tools::register_perplexity(app);
  cohort::tools::register_bench_serve(app);
  cohort::tools::register_devices(app);
  cohort::tools::register_ar_bench(app);
  try {
    const std::vector<std::string> args = cohort::tools::normalize_flags(argc, argv);
    std::vector<const char*> normalized;
    for (const std::string& a : args) normalized.push_back(a.c_str());
    app.parse(argc, normalized.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const cohort::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  }
  return 0;
}
