// `cohort logits -m FILE --ids IDS.json -o OUT.f32`: teacher-forced logits of
// every position of one or more token sequences, as raw little-endian F32
// [total positions, n_vocab] (sequences one after another). For comparing
// with other implementations; --together runs all sequences in shared
// batches (interleaved rows) instead of one after another.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "engine/decoder.h"
#include "model/model.h"
#include "tools/commands.h"
#include "tools/sampling_flags.h"

namespace cohort::tools {
namespace {

using Sequences = std::vector<std::vector<int32_t>>;

Sequences read_ids(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open '{}'", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_array()) fail("{}: expected a JSON array of token id arrays", path);
  Sequences seqs;
  for (const auto& s : j) {
    if (!s.is_array() || s.empty()) fail("{}: each sequence must be a non-empty array of ids", path);
    seqs.push_back(s.get<std::vector<int32_t>>());
  }
  return seqs;
}

// Feeds sequences [first, last) in batches of at most n_batch rows. Each
// round adds up to k + 1 next tokens of sequence k (different lengths and
// positions share a batch), so with one sequence this is plain chunking.
void feed(engine::Decoder& dec, const Sequences& seqs, size_t first, size_t last,
          std::vector<std::vector<float>>& out) {
  const size_t n_vocab = static_cast<size_t>(dec.n_vocab());
  const int cap = dec.options().n_batch;
  std::vector<size_t> next(seqs.size(), 0);
  for (size_t k = first; k < last; ++k) {
    dec.reserve(static_cast<kv::SeqId>(k), static_cast<int>(seqs[k].size()));
  }
  engine::Batch batch;
  std::vector<size_t> owners;  // sequence of each output row
  auto flush = [&] {
    std::span<const float> logits = dec.decode(batch);
    for (size_t r = 0; r < owners.size(); ++r) {
      auto row = logits.subspan(r * n_vocab, n_vocab);
      out[owners[r]].insert(out[owners[r]].end(), row.begin(), row.end());
    }
    batch.clear();
    owners.clear();
  };
  for (bool pending = true; pending;) {
    pending = false;
    for (size_t k = first; k < last; ++k) {
      for (size_t i = 0; i <= k - first && next[k] < seqs[k].size(); ++i) {
        if (batch.n_tokens() == cap) flush();
        batch.add(seqs[k][next[k]], static_cast<int32_t>(next[k]), static_cast<int32_t>(k), true);
        owners.push_back(k);
        ++next[k];
      }
      pending = pending || next[k] < seqs[k].size();
    }
  }
  if (!batch.empty()) flush();
}

std::vector<float> run(engine::Decoder& dec, const Sequences& seqs, bool together) {
  std::vector<std::vector<float>> out(seqs.size());
  if (together) {
    feed(dec, seqs, 0, seqs.size(), out);
  } else {
    for (size_t s = 0; s < seqs.size(); ++s) feed(dec, seqs, s, s + 1, out);
  }
  std::vector<float> all;
  for (auto& o : out) all.insert(all.end(), o.begin(), o.end());
  return all;
}

}  // namespace

void register_logits(CLI::App& app) {
  struct Options {
    std::string model, ids, output;
    engine::DecoderOptions dec;
    bool together = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("logits", "teacher-forced logits of token sequences");
  cmd->add_option("-m,--model", opt->model, "GGUF file")->required();
  cmd->add_option("--ids", opt->ids, "JSON file: array of token id arrays")->required();
  cmd->add_option("-o,--output", opt->output, "raw F32 output file")->required();
  add_decoder_flags(cmd, opt->dec);
  cmd->add_flag("--together", opt->together, "interleave all sequences in the same batches");
  cmd->callback([opt] {
    auto model = model::Model::load(opt->model);
    engine::Decoder dec(*model, opt->dec);
    fmt::print(stderr, "logits: {}\n", backend::describe(dec.memory()));
    std::vector<float> logits = run(dec, read_ids(opt->ids), opt->together);
    std::FILE* f = std::fopen(opt->output.c_str(), "wb");
    if (!f) fail("cannot create '{}'", opt->output);
    size_t n = std::fwrite(logits.data(), sizeof(float), logits.size(), f);
    if (std::fclose(f) != 0 || n != logits.size()) fail("write to '{}' failed", opt->output);
  });
}

}  // namespace cohort::tools
