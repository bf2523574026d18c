// `cohort perplexity -m FILE -f TEXT -c N`: llama-perplexity's measurement.
// The text is tokenized once and cut into chunks of N tokens; each chunk is
// evaluated from an empty cache and the second half of its positions is
// scored. --save-logits F keeps this run's log-probabilities of the scored
// positions; --kl-divergence-base F --kl-divergence compares a later run
// (another file type of the same model) with them.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "common/text_file.h"
#include "tools/commands.h"
#include "tools/logits_file.h"
#include "tools/model_session.h"
#include "tools/perplexity_math.h"
#include "tools/sampling_flags.h"

namespace cohort::tools {
namespace {

struct PplOptions {
  std::string model, text_file, save_logits, kld_base;
  bool kld = false;
  int n_chunks = -1;
  engine::DecoderOptions dec;
};


struct KldStats {
  RunningStats kld;
  RunningStats same_top;  // 1 where the top tokens agree
};

void run(const PplOptions& o) {
  if (o.kld && o.kld_base.empty()) fail("--kl-divergence needs --kl-divergence-base FILE");
  const int n_ctx = o.dec.n_ctx;
  if (n_ctx < 4) fail("-c must be at least 4 for perplexity, got {}", n_ctx);
  engine::DecoderOptions dec = o.dec;
  dec.n_batch = std::min(dec.n_batch, n_ctx);
  ModelSession s(o.model, dec);
  const std::vector<int32_t> tokens = s.tokenizer.encode(read_text_file(o.text_file), true, false);
  // As llama-perplexity: where the vocabulary adds BOS, each chunk starts with it.
  const std::vector<int32_t> probe = s.tokenizer.encode("", true, false);
  const bool add_bos = !probe.empty() && probe[0] == s.tokenizer.bos();
  int n_chunks = static_cast<int>(tokens.size()) / n_ctx;
  if (o.n_chunks > 0) n_chunks = std::min(n_chunks, o.n_chunks);
  if (n_chunks < 1) {
    fail("{}: {} tokens, at least {} (-c) are needed for one chunk", o.text_file, tokens.size(), n_ctx);
  }
  const int first = n_ctx / 2;
  const size_t n_vocab = static_cast<size_t>(s.decoder.n_vocab());
  std::unique_ptr<LogitsWriter> writer;
  std::unique_ptr<LogitsReader> base;
  if (!o.save_logits.empty()) writer = std::make_unique<LogitsWriter>(o.save_logits, n_ctx, n_vocab, n_chunks, tokens);
  if (o.kld) base = std::make_unique<LogitsReader>(o.kld_base, n_ctx, n_vocab, n_chunks, tokens);
  fmt::print(stderr, "perplexity: {} tokens, {} chunks of {}\n", tokens.size(), n_chunks, n_ctx);

  RunningStats nll;
  KldStats kl;
  std::vector<double> lp(n_vocab), lbase(n_vocab);
  engine::Batch batch;
  for (int c = 0; c < n_chunks; ++c) {
    s.decoder.free_sequence(0);
    s.decoder.reserve(0, n_ctx);
    const size_t start = static_cast<size_t>(c) * static_cast<size_t>(n_ctx);
    std::vector<float> chunk_logits;
    for (int pos = 0; pos < n_ctx;) {
      batch.clear();
      for (int n = 0; n < dec.n_batch && pos < n_ctx; ++n, ++pos) {
        const int32_t t = pos == 0 && add_bos ? s.tokenizer.bos() : tokens[start + static_cast<size_t>(pos)];
        batch.add(t, pos, 0, pos >= first && pos < n_ctx - 1);
      }
      auto out = s.decoder.decode(batch);
      chunk_logits.insert(chunk_logits.end(), out.begin(), out.end());
    }
    for (int j = first; j < n_ctx - 1; ++j) {
      auto row = std::span<const float>(chunk_logits).subspan(static_cast<size_t>(j - first) * n_vocab, n_vocab);
      log_softmax(row, lp);
      const int32_t next = tokens[start + static_cast<size_t>(j) + 1];
      nll.add(-lp[static_cast<size_t>(next)]);
      if (writer) writer->write(lp);
      if (base) {
        base->read(lbase);
        kl.kld.add(kl_divergence(lbase, lp));
        const auto top = [](const std::vector<double>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
        kl.same_top.add(top(lbase) == top(lp) ? 1.0 : 0.0);
      }
    }
    fmt::print("[{}]{:.4f},", c + 1, estimate(nll).ppl);
    std::fflush(stdout);
  }
  const PplEstimate e = estimate(nll);
  fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", e.ppl, e.uncertainty);
  if (base) {
    fmt::print("Mean    KLD: {:10.6f} ± {:10.6f}\n", kl.kld.mean(), kl.kld.stderr_of_mean());
    fmt::print("Same top p: {:6.3f} ± {:5.3f} %\n", 100.0 * kl.same_top.mean(),
               100.0 * kl.same_top.stderr_of_mean());
  }
}

}  // namespace

void register_perplexity(CLI::App& app) {
  auto o = std::make_shared<PplOptions>();
  o->dec.n_ctx = 512;
  CLI::App* cmd = app.add_subcommand("perplexity", "perplexity of a text (llama-perplexity)");
  cmd->add_option("-m,--model", o->model, "GGUF file")->required();
  cmd->add_option("-f,--file", o->text_file, "text file")->required();
  cmd->add_option("--chunks", o->n_chunks, "evaluate at most this many chunks");
  cmd->add_option("--save-logits", o->save_logits, "save this run's log-probabilities");
  cmd->add_option("--kl-divergence-base", o->kld_base, "log-probabilities saved by --save-logits");
  cmd->add_flag("--kl-divergence", o->kld, "compare with --kl-divergence-base");
  add_decoder_flags(cmd, o->dec);
  cmd->callback([o] { run(*o); });
}

}  // namespace cohort::tools
