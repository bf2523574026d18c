// `cohort serve -m FILE`: the OpenAI- and llama.cpp-compatible HTTP server
// in front of the engine loop.
//
// Start-up order: the HTTP server listens first, so /health answers 503
// "Loading model" while the model loads; then the tokenizer and chat
// template are read from the GGUF file, the engine is built
// (make_service), and the model is published: /health turns 200.
//
// llama-server's flags are accepted so that its command lines start cohort
// unchanged; those that select what cohort always does are no-ops, each
// saying so in its help: --offline (nothing is ever downloaded),
// --jinja/--no-jinja (see below), -fa (attention is always fused),
// --backend-sampling (tokens are always sampled on the host).
// --context-shift lets a generation that fills its slot's context go on by
// dropping half of it after the first --keep tokens, as llama-server's
// (without it, the generation ends with finish "length"). --kv-unified gives each slot the whole context (-c) of
// the cache the slots always share, instead of -c / -np, as llama-server's.
// --verbose makes answers carry llama-server's __verbose object (its
// logging is not copied).
// --no-slots turns /slots and /v1/phase-events off, and /metrics is off
// unless --metrics (they answer 501 when off, as llama-server).
// --no-webui (--no-ui): no page at / (404), as llama-server's flags. --chat-template-file /
// --chat-template replace the GGUF's template.
//
// Embeddings: --embedding / --embeddings turn the embedding routes on (off,
// they answer 501, as llama-server); --pooling none|mean|cls|last picks how
// a prompt's hidden states become its vector, by default the file's
// `<arch>.pooling_type`, else mean. They are computed on the CPU backend
// only so far: on a GPU, --embeddings stops start-up with a message.
//
// --no-jinja: llama-server then renders with its built-in C++ copies of the
// well-known templates, chosen by sniffing the GGUF's template, which give
// the same text as the Jinja source for the models they recognise. cohort
// keeps rendering the model's own template with its Jinja engine (ChatML
// when the model has none), so the prompt is the one --jinja would give.
//
// TLS: --ssl-cert-file and --ssl-key-file (both or neither) make every
// connection HTTPS; the files are read before the port is opened, and a bad
// one stops start-up with a message naming it.
//
// SIGINT / SIGTERM: stop accepting, cancel in-flight requests, join the HTTP
// threads, then shut the engine down. A signal during loading exits at once
// with status 130, as nothing is being served yet.
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <signal.h>

#include <algorithm>
#include <set>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <optional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "chat/named_templates.h"
#include "common/comma_list.h"
#include "common/error.h"
#include "engine/decoder.h"
#include "engine/pooling.h"
#include "engine/sampler.h"
#include "gguf/gguf_file.h"
#include "server/api_reply.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/local_engine.h"
#include "sched/phase_policy.h"
#include "server/routes.h"
#include "server/served_model.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/sampling_flags.h"

namespace cohort::tools {
namespace {

struct ServeOptions {
  std::string model;                       // -m
  std::string host = "127.0.0.1";          // --host
  int port = 8080;                         // --port (0: any free port)
  std::string alias;                       // --alias: model id in the API (a comma list of aliases)
  std::string tags;                        // --tags: a comma list
  int n_parallel = 4;                      // -np: slots
  engine::DecoderOptions dec;              // -c -b -ub -t
  std::string phase_policy = "cohort";     // --phase-policy
  int tg_quantum = 0;                      // --tg-quantum
  std::string trace_batches;               // --trace-batches FILE
  size_t max_body = size_t{8} << 20;       // --max-body, bytes
  int threads_http = 0;                    // --threads-http (0: max(np + 4, 8))
  int threads_http_max = 256;              // --threads-http-max
  engine::SamplingParams sampling;         // defaults for requests (--temp ...)
  int n_predict = -1;                      // -n: default max_tokens
  bool metrics = false;                    // --metrics: GET /metrics answers (else 501)
  int64_t max_tokenize = server::kDefaultMaxTokenize;  // --max-tokenize
  int max_connections = 0;                 // --max-connections (0: from the descriptor limit)
  std::vector<std::string> api_keys;       // --api-key (repeatable)
  std::string api_key_file;                // --api-key-file: one key per line
  std::optional<std::string> cors_origin;  // --cors-origin(s) (default: * without keys, none with)
  server::CorsPolicy cors;                 // --cors-methods, --cors-headers, --cors-credentials
  std::string ssl_cert_file;               // --ssl-cert-file: PEM certificate chain (TLS)
  std::string ssl_key_file;                // --ssl-key-file: PEM private key (TLS)
  bool slots = true;                       // --slots / --no-slots: GET /slots (501 when off)
  bool webui = true;                       // --webui / --no-webui: the page at /
  std::string chat_template_file;          // --chat-template-file: Jinja instead of the GGUF's
  std::string chat_template;               // --chat-template: a name (chatml) or Jinja source
  bool embeddings = false;                 // --embedding(s): the embedding routes answer
  std::string pooling;                     // --pooling none|mean|cls|last ("": the file's, else mean)
  std::string reasoning = "auto";          // --reasoning on|off|auto
  std::string reasoning_format = "auto";   // --reasoning-format none|deepseek|deepseek-legacy|auto
  // Accepted for llama-server's command lines; they change nothing (see the top).
  bool offline = false, jinja = true, backend_sampling = false;
  bool context_shift = false;              // --context-shift
  int keep = 0;                            // --keep: prompt tokens a context shift keeps (-1: all)
  bool kv_unified = false;                 // --kv-unified: a slot's context is all of -c
  bool verbose = false;                    // -v: answers carry __verbose
  std::string flash_attn;                  // -fa on|off|auto
};

// The template that replaces the GGUF's, or nullopt: the text of
// --chat-template-file, or --chat-template as one of llama.cpp's built-in
// names (chat/named_templates.h) or as Jinja source (it holds "{%" or
// "{{"). Throws cohort::Error naming the flag.
std::optional<std::string> chat_template_override(const ServeOptions& o) {
  if (!o.chat_template_file.empty() && !o.chat_template.empty()) {
    fail("--chat-template and --chat-template-file: give one of them");
  }
  if (!o.chat_template_file.empty()) {
    std::ifstream in(o.chat_template_file, std::ios::binary);
    if (!in) fail("--chat-template-file {}: cannot read it", o.chat_template_file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) fail("--chat-template-file {}: cannot read it", o.chat_template_file);
    if (text.empty()) fail("--chat-template-file {}: the file is empty", o.chat_template_file);
    return text;
  }
  if (o.chat_template.empty()) return std::nullopt;
  if (std::optional<std::string> named = chat::named_template(o.chat_template)) return named;
  if (o.chat_template.find("{%") != std::string::npos || o.chat_template.find("{{") != std::string::npos) {
    return o.chat_template;
  }
  fail("--chat-template {}: not a known name ({}) nor Jinja source (no '{{%' or '{{{{' in it); "
       "use --chat-template-file for a template in a file", o.chat_template, chat::named_template_list());
}

// ---------------------------------------------------------------------------
// The engine behind the server, built from the options once the HTTP server
// is up: the engine loop (server/engine_loop.h) for the model in o.model,
// with o.n_parallel slots, o.dec, o.phase_policy, o.tg_quantum and
// o.trace_batches. Throws cohort::Error naming the file or flag at fault.
std::unique_ptr<server::GenerationService> make_service(const ServeOptions& o) {
  server::EngineOptions e;
  e.decoder = o.dec;
  e.scheduler.n_slots = o.n_parallel;
  e.scheduler.n_batch = o.dec.n_batch;
  e.scheduler.policy = sched::parse_policy(o.phase_policy);
  e.scheduler.tg_quantum = o.tg_quantum;
  e.trace_path = o.trace_batches;
  e.kv_unified = o.kv_unified;
  e.context_shift = o.context_shift;
  e.n_keep = o.keep;
  if (const char* best = std::getenv("COHORT_BEST_LOGITS")) e.best_logits = std::string(best) != "0";
  if (const char* delay = std::getenv("COHORT_STEP_DELAY_MS")) {
    const int ms = std::atoi(delay);
    if (ms < 0 || ms > 10000) fail("COHORT_STEP_DELAY_MS={}: want 0 to 10000 milliseconds", delay);
    e.step_delay = std::chrono::milliseconds(ms);
  }
  return server::start_engine(o.model, e);
}
// ---------------------------------------------------------------------------

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it
// starts afterwards) and runs `on_signal` on a thread of its own when one
// arrives. Construct before any other thread starts.
class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int)> on_signal) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this, on_signal = std::move(on_signal)] {
      int sig = 0;
      if (sigwait(&set_, &sig) == 0 && !quitting_.load()) on_signal(sig);
    });
  }
  ~SignalWatcher() {
    quitting_.store(true);
    pthread_kill(thread_.native_handle(), SIGTERM);  // wakes sigwait if still waiting
    thread_.join();
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  sigset_t set_;
  std::atomic<bool> quitting_{false};
  std::thread thread_;
};

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// --pooling, else the file's `<arch>.pooling_type` where it names one this
// server computes, else mean.
engine::Pooling pooling_of(const ServeOptions& o, const gguf::Metadata& md) {
  if (!o.pooling.empty()) return engine::parse_pooling(o.pooling);
  const std::string arch = md.get_string("general.architecture").value_or("");
  if (const std::optional<int64_t> v = md.get_int(arch + ".pooling_type")) {
    if (const std::optional<engine::Pooling> p = engine::pooling_from_gguf(*v)) return *p;
    fmt::print(stderr, "serve: warning: {}.pooling_type {} is not one of none, mean, cls, last; using mean\n",
               arch, *v);
  }
  return engine::Pooling::mean;
}

// The distinct non-empty names of a comma list, sorted.
std::vector<std::string> sorted_names(const std::string& list) {
  std::set<std::string> names;
  for (std::string& name : split_commas(list)) {
    if (!name.empty()) names.insert(std::move(name));
  }
  return {names.begin(), names.end()};
}

// The tokenizer, template and names from the file, then the engine.
std::unique_ptr<server::ServedModel> load_model(const ServeOptions& o,
                                               const std::optional<std::string>& chat_template) {
  const gguf::GgufFile file = gguf::GgufFile::open(o.model);
  const gguf::Metadata& md = file.metadata();
  auto m = std::make_unique<server::ServedModel>(tokenizer::Tokenizer::from_gguf(md));
  m->path = o.model;
  m->chat_template = chat_template ? *chat_template : md.get_string("tokenizer.chat_template").value_or("");
  // Chat prompts are rendered with enable_thinking false under --reasoning
  // off and true under on and auto, as llama-server renders them (templates
  // such as DeepSeek-R1's close the think block unless it is true); a
  // request's chat_template_kwargs may still set it.
  m->template_defaults["enable_thinking"] = o.reasoning != "off";
  m->slots_endpoint = o.slots;
  m->metrics_endpoint = o.metrics;
  m->verbose = o.verbose;
  m->reasoning_format = server::parse_reasoning_format(o.reasoning_format).value();  // checked by its option
  m->n_slots = o.n_parallel;
  // --alias and --tags are comma lists; as llama-server, the model's id is
  // the first alias in sorted order.
  m->aliases = sorted_names(o.alias);
  m->tags = sorted_names(o.tags);
  m->id = !m->aliases.empty() ? m->aliases.front()
                              : md.get_string("general.name").value_or(std::filesystem::path(o.model).filename());
  m->defaults = o.sampling;
  m->grammars = std::make_unique<engine::GrammarCompiler>(m->tokenizer.vocab());
  m->default_max_tokens = o.n_predict;
  m->max_tokenize = o.max_tokenize;
  m->embeddings = o.embeddings;
  m->pooling = pooling_of(o, md);
  m->service = make_service(o);
  if (o.embeddings && m->service->memory().device.find("cuda") != std::string::npos) {
    fail("--embeddings: embeddings are computed on the CPU backend only so far; add -dev cpu");
  }
  m->created = unix_seconds();
  return m;
}

// The keys of --api-key and of the lines of --api-key-file (blank lines and
// surrounding blanks ignored).
std::vector<std::string> api_keys(const ServeOptions& o) {
  std::vector<std::string> keys = o.api_keys;
  if (!o.api_key_file.empty()) {
    std::ifstream in(o.api_key_file);
    if (!in) fail("--api-key-file {}: cannot read it", o.api_key_file);
    for (std::string line; std::getline(in, line);) {
      const size_t a = line.find_first_not_of(" \t\r"), b = line.find_last_not_of(" \t\r");
      if (a != std::string::npos) keys.push_back(line.substr(a, b - a + 1));
    }
    if (keys.size() == o.api_keys.size()) fail("--api-key-file {}: no key in it", o.api_key_file);
  }
  for (const std::string& k : keys) {
    if (k.empty()) fail("--api-key: a key must not be empty");
  }
  return keys;
}

// Connections the descriptor limit leaves room for, after kReservedFds for
// the model file, logs and the runtime's own.
int default_max_connections() {
  constexpr rlim_t kReservedFds = 64;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 4096;
  return static_cast<int>(std::clamp<rlim_t>(r.rlim_cur > kReservedFds ? r.rlim_cur - kReservedFds : 1, 1, 1 << 20));
}

// Whether every address of --host (a comma list) is a loopback one.
bool is_loopback(const std::string& host) {
  for (const std::string& a : split_commas(host)) {
    if (!(a == "localhost" || a == "::1" || a.starts_with("127."))) return false;
  }
  return true;
}

// As llama-server: with API keys, every route but /health, the model list
// and the web page's files needs one. CORS: `*` unless keys are set (then none) or --cors-origin says;
// with `*` and credentials (the default) the request's Origin is echoed.
// Process-Start-Time-Unix: llama-server sends it on /metrics; here every
// response carries it, so that a client sees a restart on any reply.
server::HttpServerOptions http_options(const ServeOptions& o) {
  server::HttpServerOptions h;
  h.api_keys = api_keys(o);
  h.max_connections = o.max_connections > 0 ? o.max_connections : default_max_connections();
  h.public_paths = {"/health", "/v1/health", "/models", "/v1/models"};
  if (o.webui) {
    for (std::string& p : server::webui_paths()) h.public_paths.push_back(std::move(p));
  }
  h.cors = o.cors;
  h.cors.origins = o.cors_origin.value_or(h.api_keys.empty() ? "*" : "");
  h.common_headers.emplace_back("Process-Start-Time-Unix", std::to_string(std::time(nullptr)));
  if (h.cors.origins == "*" && !is_loopback(o.host)) {
    fmt::print(stderr, "serve: warning: listening on {} with CORS open to every origin; any web page a "
               "browser opens may call this server (set --api-key or --cors-origin)\n", o.host);
  }
  h.max_body_bytes = o.max_body;
  h.ssl_cert_file = o.ssl_cert_file;
  h.ssl_key_file = o.ssl_key_file;
  h.n_threads = o.threads_http > 0 ? o.threads_http : std::max(o.n_parallel + 4, 8);
  h.max_threads = std::max(h.n_threads, o.threads_http_max);
  return h;
}

void check_options(const ServeOptions& o) {
  if (o.port < 0 || o.port > 65535) fail("--port {} is not a port number", o.port);
  if (o.n_parallel < 1) fail("--parallel (-np) must be >= 1, got {}", o.n_parallel);
  if (o.tg_quantum < 0) fail("--tg-quantum must be >= 0, got {}", o.tg_quantum);
  if (o.max_body < 1) fail("--max-body must be >= 1 byte");
  if (o.threads_http < 0) fail("--threads-http must be >= 0, got {}", o.threads_http);
  if (o.threads_http_max < 1) fail("--threads-http-max must be >= 1, got {}", o.threads_http_max);
  if (o.max_connections < 0) fail("--max-connections must be >= 0 (0: from the descriptor limit), got {}", o.max_connections);
  if (o.max_tokenize < 1) fail("--max-tokenize must be >= 1, got {}", o.max_tokenize);
  if (o.ssl_cert_file.empty() != o.ssl_key_file.empty()) {
    fail("TLS needs both --ssl-cert-file and --ssl-key-file; {} is missing",
         o.ssl_cert_file.empty() ? "--ssl-cert-file" : "--ssl-key-file");
  }
  if (o.n_predict == 0 || o.n_predict < -1) fail("--n-predict (-n) must be -1 or >= 1, got {}", o.n_predict);
  o.dec.validate();
  o.sampling.validate();
  if (!o.pooling.empty()) engine::parse_pooling(o.pooling);
}

void serve(const ServeOptions& o) {
  check_options(o);
  const std::optional<std::string> chat_template = chat_template_override(o);
  // Allocations of 1 MiB and more (request bodies, large replies) are
  // mapped and unmapped on their own. By default glibc raises this
  // threshold after the first such free, and then keeps freed bodies in its
  // heaps: a burst of large requests would leave RSS high for good.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  std::signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> loaded{false};
  server::ServingState state;
  server::HttpServer http(http_options(o), server::openai_error_body);
  SignalWatcher signals([&](int sig) {
    fmt::print(stderr, "serve: {} received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    if (!loaded.load()) std::_Exit(130);
    http.stop();
  });
  server::register_openai_routes(http, state);
  server::register_llama_routes(http, state);
  server::register_embedding_routes(http, state);
  server::register_phase_routes(http, state);
  if (o.webui) server::register_webui_routes(http);
  const int port = http.start(o.host, o.port);
  fmt::print(stderr, "serve: listening on {}://{}:{} (loading {})\n", o.ssl_cert_file.empty() ? "http" : "https",
             o.host, port, o.model);
  try {
    state.publish(load_model(o, chat_template));
  } catch (...) {
    http.stop();
    throw;
  }
  loaded.store(true);
  const server::ServedModel& m = *state.model();
  fmt::print(stderr, "serve: ready: model '{}', {} slots, context {} tokens per request, phase policy {}\n", m.id,
             o.n_parallel, m.service->n_ctx(), o.phase_policy);
  fmt::print(stderr, "serve: {}\n", backend::describe(m.service->memory()));
  http.wait();
  state.take().reset();  // the engine stops after the last HTTP thread has ended
  fmt::print(stderr, "serve: stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI- and llama.cpp-compatible HTTP server");
  cmd->add_option("-m,--model", o->model, "GGUF file")->required();
  cmd->add_option("--host", o->host, "address to listen on, or a comma list of them (one port for all)");
  cmd->add_option("--port", o->port, "port to listen on (0: any free port)");
  cmd->add_option("--alias", o->alias,
                  "model id in the API, or a comma list of aliases (the first in sorted order is the id; "
                  "default: general.name of the file)");
  cmd->add_option("--tags", o->tags, "comma list of tags that /models lists with the model");
  cmd->add_option("--parallel", o->n_parallel, "slots: requests served at once (-np)");
  add_decoder_flags(cmd, o->dec);
  CLI::Option* policy = cmd->add_option("--phase-policy", o->phase_policy, "scheduling: cohort, mixed, no-cont or serial")
      ->check(CLI::IsMember({"cohort", "mixed", "no-cont", "serial"}));
  // llama-server's switch between its two schedules, as the policies that are them.
  cmd->add_flag_callback("--cont-batching", [o] { o->phase_policy = "mixed"; },
                         "-cb: llama-server's continuous batching, i.e. --phase-policy mixed")
      ->excludes(policy);
  cmd->add_flag_callback("--no-cont-batching", [o] { o->phase_policy = "no-cont"; },
                         "-nocb: llama-server without continuous batching, i.e. --phase-policy no-cont")
      ->excludes(policy);
  cmd->add_option("--tg-quantum", o->tg_quantum, "cohort: end a decode phase after N steps when work waits (0: drain)");
  cmd->add_option("--trace-batches", o->trace_batches, "write the batch trace (JSON lines) to FILE");
  cmd->add_option("--max-body", o->max_body, "largest request body in bytes (larger: 413)");
  cmd->add_option("--threads-http", o->threads_http, "HTTP worker threads started at once (0: max(np + 4, 8))");
  cmd->add_option("--threads-http-max", o->threads_http_max,
                  "more HTTP workers are started while requests wait, up to this many");
  cmd->add_option("-n,--n-predict", o->n_predict, "default max_tokens of a request (-1: no limit)");
  cmd->add_flag("--metrics", o->metrics, "answer GET /metrics (Prometheus text; without it, 501 as llama-server)");
  cmd->add_option("--max-connections", o->max_connections,
                  "connections open at once; more get 503 (0: the descriptor limit less 64)");
  cmd->add_option("--max-tokenize", o->max_tokenize, "the most tokens /tokenize returns and /detokenize takes");
  cmd->add_option("--api-key", o->api_keys,
                  "require 'Authorization: Bearer KEY' on every route but /health and /v1/models (repeatable)");
  cmd->add_option("--api-key-file", o->api_key_file, "API keys, one per line");
  cmd->add_option_function<std::string>(
      "--cors-origin,--cors-origins", [o](const std::string& origin) { o->cors_origin = origin; },
      "allowed origins: * (the request's Origin echoed), localhost (echoed if local), one origin, or a "
      "comma list (echoed if listed); default: * without --api-key, none with; '' none");
  cmd->add_option("--cors-methods", o->cors.methods, "Access-Control-Allow-Methods of preflights");
  cmd->add_option("--cors-headers", o->cors.headers, "Access-Control-Allow-Headers of preflights");
  cmd->add_flag("--cors-credentials,!--no-cors-credentials", o->cors.credentials,
                "Access-Control-Allow-Credentials of preflights (default: true; with it, * echoes the Origin)");
  cmd->add_option("--ssl-cert-file", o->ssl_cert_file, "TLS: PEM certificate chain (with --ssl-key-file)");
  cmd->add_option("--ssl-key-file", o->ssl_key_file, "TLS: PEM private key (with --ssl-cert-file)");
  cmd->add_flag("--embedding,--embeddings", o->embeddings,
                "answer /v1/embeddings, /embedding and /embeddings (off: they answer 501)");
  cmd->add_option("--reasoning-format", o->reasoning_format,
                  "chat answers: a leading <think> block as reasoning_content (deepseek; auto, the default), "
                  "as well as in content (deepseek-legacy), or left in content (none)")
      ->check(CLI::IsMember({"none", "deepseek", "deepseek-legacy", "auto"}));
  cmd->add_option("--reasoning", o->reasoning,
                  "chat prompts rendered with enable_thinking false (off) or true (on, auto; the default)")
      ->check(CLI::IsMember({"on", "off", "auto"}));
  cmd->add_option("--pooling", o->pooling,
                  "embeddings: none, mean, cls or last (default: the file's pooling type, else mean)");
  cmd->add_flag("--slots,!--no-slots", o->slots, "GET /slots (default: on; off: it answers 501)");
  cmd->add_flag("--webui,--ui,!--no-webui,!--no-ui", o->webui,
                "the chat page with its phase view at / (default: on; off: / answers 404)");
  cmd->add_option("--chat-template-file", o->chat_template_file,
                  "Jinja chat template read from FILE, used instead of the model's");
  cmd->add_option("--chat-template", o->chat_template,
                  "chat template instead of the model's: a llama.cpp built-in name (chatml, llama3, "
                  "command-r, ...) or Jinja source");
  cmd->add_flag("--jinja,!--no-jinja", o->jinja,
                "accepted for llama-server compatibility: the model's template (or --chat-template) is always "
                "rendered as Jinja; --no-jinja gives the same prompt, as llama-server's built-in copies of the "
                "known templates do");
  cmd->add_flag("--offline", o->offline, "accepted for llama-server compatibility; nothing is ever downloaded");
  cmd->add_option("--flash-attn", o->flash_attn,
                  "-fa on|off|auto: accepted for llama-server compatibility; attention is always fused")
      ->expected(0, 1)
      ->check(CLI::IsMember({"on", "off", "auto", "1", "0", "true", "false"}));
  cmd->add_flag("--backend-sampling,--backend_sampling", o->backend_sampling,
                "-bs: accepted for llama-server compatibility; tokens are always sampled on the host, so a request's "
                "backend_sampling changes nothing either");
  cmd->add_flag("--kv-unified", o->kv_unified,
                "a slot's context is the whole -c (the cache the slots share), not -c / -np; a request that "
                "finds it full ends with \"context size has been exceeded\"");
  cmd->add_flag("--context-shift,!--no-context-shift", o->context_shift,
                "a generation that fills its slot's context drops half of it after the first --keep tokens and "
                "goes on (default off: it ends with finish_reason \"length\")");
  cmd->add_option("--keep", o->keep,
                  "prompt tokens a context shift keeps, besides a BOS (default 0, -1 = the whole prompt); a "
                  "request's n_keep overrides it")
      ->check(CLI::Range(-1, std::numeric_limits<int>::max()));
  cmd->add_flag("-v,--verbose", o->verbose,
                "answers carry llama-server's __verbose object (the prompt as sent...); logging is unchanged");
  add_sampling_flags(cmd, o->sampling);
  cmd->callback([o] { serve(*o); });
}

}  // namespace cohort::tools
