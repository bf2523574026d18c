// `cohort run -m FILE -p TEXT -n N`: one prompt, the answer streamed to
// stdout; load time and speeds on stderr.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "common/error.h"
#include "engine/token_stream.h"
#include "tools/commands.h"
#include "tools/model_session.h"
#include "tools/sampling_flags.h"

namespace cohort::tools {
namespace {

struct RunOptions {
  std::string model, prompt, prompt_file, system;
  int n_predict = -1;
  bool chat = false;
  std::vector<std::string> stop;
  engine::DecoderOptions dec;
  engine::SamplingParams sampling;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string prompt_text(const RunOptions& o, const ModelSession& s) {
  std::string text = o.prompt;
  if (!o.prompt_file.empty()) {
    std::ifstream in(o.prompt_file, std::ios::binary);
    if (!in) fail("cannot open prompt file '{}'", o.prompt_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  if (!o.chat) return text;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  messages.push_back({{"role", "user"}, {"content", text}});
  const tokenizer::Tokenizer& tok = s.tokenizer;
  auto piece = [&](int32_t id) { return id >= 0 ? tok.token_to_piece(id, true) : std::string(); };
  const std::string source =
      s.model->file().metadata().get_string("tokenizer.chat_template").value_or("");
  return chat::render_chat(source, messages, true, piece(tok.bos()), piece(tok.eos()),
                           [](const std::string& w) { fmt::print(stderr, "warning: {}\n", w); });
}

// Decodes the prompt in batches of -b; returns the last token's logits.
std::span<const float> prefill(engine::Decoder& dec, const std::vector<int32_t>& ids) {
  engine::Batch batch;
  std::span<const float> logits;
  for (size_t i = 0; i < ids.size();) {
    batch.clear();
    for (int n = 0; n < dec.options().n_batch && i < ids.size(); ++n, ++i) {
      batch.add(ids[i], static_cast<int32_t>(i), 0, i + 1 == ids.size());
    }
    logits = dec.decode(batch);
  }
  return logits;
}

void run(const RunOptions& o) {
  o.sampling.validate();
  ModelSession s(o.model, o.dec);
  const std::vector<int32_t> ids = s.tokenizer.encode(prompt_text(o, s), true, true);
  if (ids.empty()) fail("the prompt is empty");
  if (static_cast<int>(ids.size()) >= o.dec.n_ctx) {
    fail("the prompt has {} tokens, which does not fit the context of {} (-c)", ids.size(),
         o.dec.n_ctx);
  }
  engine::StopParams sp;
  for (int32_t id = 0; id < s.tokenizer.n_vocab(); ++id) {
    if (s.tokenizer.is_eog(id)) sp.eog_tokens.insert(id);
  }
  const int room = o.dec.n_ctx - static_cast<int>(ids.size());
  sp.max_tokens = o.n_predict < 0 ? room : std::min(o.n_predict, room);
  sp.stop = o.stop;
  const int max_tokens = sp.max_tokens;
  engine::TokenStream stream(o.sampling, s.decoder.n_vocab(), o.dec.n_ctx,
                             s.tokenizer.detokenizer(false), std::move(sp));
  stream.accept_prompt(ids);

  s.decoder.reserve(0, static_cast<int>(ids.size()) + max_tokens);
  const auto t_prompt = Clock::now();
  std::span<const float> logits = prefill(s.decoder, ids);
  const double prompt_s = seconds_since(t_prompt);
  const auto t_gen = Clock::now();
  int32_t pos = static_cast<int32_t>(ids.size());
  while (max_tokens > 0) {
    const engine::StreamToken tok = stream.next(logits);
    std::fwrite(tok.text.data(), 1, tok.text.size(), stdout);
    std::fflush(stdout);
    if (stream.finished()) break;
    engine::Batch batch;
    batch.add(tok.id, pos++, 0, true);
    logits = s.decoder.decode(batch);
  }
  const double gen_s = seconds_since(t_gen);
  fmt::print(stderr, "\nprompt: {} tokens in {:.3f} s ({:.1f} tokens/s)\n", ids.size(), prompt_s,
             static_cast<double>(ids.size()) / prompt_s);
  fmt::print(stderr, "generation: {} tokens in {:.3f} s ({:.1f} tokens/s), finish: {}\n",
             stream.n_generated(), gen_s, stream.n_generated() / std::max(gen_s, 1e-9),
             engine::finish_reason_name(stream.reason()));
}

}  // namespace

void register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "generate from one prompt, streamed to stdout");
  cmd->add_option("-m,--model", o->model, "GGUF file")->required();
  auto* p = cmd->add_option("-p,--prompt", o->prompt, "prompt text");
  auto* f = cmd->add_option("-f,--file", o->prompt_file, "read the prompt from a file");
  p->excludes(f);
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate (-1: until the end)");
  cmd->add_flag("--chat", o->chat, "apply the model's chat template to the prompt");
  cmd->add_option("--system", o->system, "system message (with --chat)");
  cmd->add_option("--stop", o->stop, "stop string (repeatable)");
  add_decoder_flags(cmd, o->dec);
  add_sampling_flags(cmd, o->sampling);
  cmd->callback([o] {
    if (o->prompt.empty() && o->prompt_file.empty()) fail("run: give a prompt with -p or -f");
    run(*o);
  });
}

}  // namespace cohort::tools
