#include "server/engine_loop.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "common/error.h"
#include "engine/logprobs.h"
#include "sched/phase_policy.h"

namespace cohort::server {
namespace {

constexpr auto kIdleWait = std::chrono::milliseconds(50);

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

engine::FinishReason finish_of(sched::EndReason r) {
  switch (r) {
    case sched::EndReason::kStop: return engine::FinishReason::stop;
    case sched::EndReason::kLength: return engine::FinishReason::length;
    default: return engine::FinishReason::none;
  }
}

}  // namespace

EngineLoop::EngineLoop(const model::Model& model, const tokenizer::Tokenizer& tokenizer,
                       const EngineOptions& options)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      n_ctx_slot_(options.kv_unified ? options.decoder.n_ctx
                                     : options.decoder.n_ctx / std::max(1, options.scheduler.n_slots)),
      decoder_(model, options.decoder),
      kv_room_(decoder_.blocks(), [this](sched::RequestId id) { return prompt_of(id); }),
      scheduler_(options.scheduler, kv_room_),
      slots_(static_cast<size_t>(options.scheduler.n_slots)),
      output_row_(static_cast<size_t>(options.scheduler.n_slots), -1),
      hidden_rows_(static_cast<size_t>(options.scheduler.n_slots), {0, 0}),
      phase_feed_(PhaseFeedInfo{options.scheduler.n_slots, options.scheduler.n_batch,
                                sched::policy_name(options.scheduler.policy), options.scheduler.tg_quantum}) {
  if (n_ctx_slot_ < 2) {
    fail("-c {} over {} slots leaves {} positions per slot; at least 2 are needed",
         options.decoder.n_ctx, options.scheduler.n_slots, n_ctx_slot_);
  }
  if (!options.trace_path.empty()) {
    trace_file_.open(options.trace_path, std::ios::out | std::ios::trunc);
    if (!trace_file_) fail("--trace-batches: cannot write '{}'", options.trace_path);
    trace_.emplace(trace_file_);
  }
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (tokenizer.is_eog(id)) eog_tokens_.push_back(id);
  }
  const auto t0 = Clock::now();
  if (const int steps = decoder_.warm_up(options.scheduler.n_slots); steps > 0) {
    fmt::print(stderr, "warm-up: {} decode steps of 1..{} sequences in {:.0f} ms (their graphs captured)\n", steps,
               steps / 2, millis(Clock::now() - t0));
  }
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  stop_.store(true);
  thread_.join();
}

std::shared_ptr<RequestHandle> EngineLoop::submit(GenerationRequest request) {
  const int n_prompt = static_cast<int>(request.prompt.size());
  if (n_prompt == 0) fail("the prompt is empty");
  if (request.embedding) {
    if (n_prompt > n_ctx_slot_) {
      fail("the input has {} tokens; the context of a slot holds {}", n_prompt, n_ctx_slot_);
    }
    if (!decoder_.computes_hidden()) {
      fail("embeddings are computed on the CPU backend only so far (start the server with -dev cpu)");
    }
  } else if (n_prompt >= n_ctx_slot_) {
    fail("the prompt has {} tokens; the context of a slot holds {} (prompt plus at least one "
         "generated token)", n_prompt, n_ctx_slot_);
  }
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= tokenizer_.n_vocab()) fail("prompt token id {} is outside the vocabulary", t);
  }
  request.sampling.validate();
  const sched::RequestSpec spec = spec_of(request);
  std::lock_guard<std::mutex> lock(mutex_);
  // Submit under the lock so that the engine thread finds the request in
  // pending_ when the scheduler admits it.
  const sched::RequestId id = scheduler_.submit(spec);
  auto handle = std::make_shared<RequestHandle>(static_cast<uint64_t>(id));
  pending_.emplace(id, Pending{handle, std::move(request), Clock::now()});
  ++totals_.requests_total;
  return handle;
}

// Without a context shift the generation ends where the slot's context is
// full; with one it goes on, and the shift keeps llama-server's n_keep (a
// BOS counted beside it), at most all but 4 positions.
sched::RequestSpec EngineLoop::spec_of(const GenerationRequest& request) const {
  const int n_prompt = static_cast<int>(request.prompt.size());
  const int room = std::max(1, n_ctx_slot_ - n_prompt);
  sched::RequestSpec spec{n_prompt, request.max_tokens < 0 ? room : std::min(request.max_tokens, room),
                          request.embedding, {}};
  if (!options_.context_shift || request.embedding || n_ctx_slot_ < 8) return spec;
  spec.max_new_tokens = request.max_tokens < 0 ? sched::kNoLimit : request.max_tokens;
  int keep = request.n_keep.value_or(options_.n_keep);
  if (keep < 0) keep = n_prompt;
  if (tokenizer_.vocab().add_bos()) keep += 1;
  spec.shift = {n_ctx_slot_, std::min(keep, n_ctx_slot_ - 4), request.n_discard};
  return spec;
}

std::span<const int32_t> EngineLoop::prompt_of(sched::RequestId id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(id);
  assert(it != pending_.end());
  return it->second.request.prompt;  // pending_ nodes are stable until erased by this thread
}

void EngineLoop::run() {
  bool forwarded = false;  // cancellations were forwarded while the last step computed
  while (!stop_.load()) {
    if (!forwarded) forward_cancellations();
    forwarded = false;
    const bool watched = phase_feed_.watched();
    const Clock::time_point step_start = watched ? Clock::now() : Clock::time_point{};
    const sched::BatchPlan& plan = scheduler_.plan();
    apply_endings(plan);
    apply_admissions(plan);
    for (const sched::SlotRef& r : plan.shifted) slots_[static_cast<size_t>(r.slot)]->shifted = true;
    if (trace_) {
      trace_->record(plan, scheduler_.counters());
      trace_file_.flush();  // readers follow the trace while the server runs
    }
    if (!plan.has_work()) {
      deliver();
      if (!plan.ended.empty()) publish_slots();
      if (watched && (!plan.ended.empty() || !plan.admitted.empty())) publish_phase(plan, step_start);
      scheduler_.wait_for_work(kIdleWait);
      continue;
    }
    execute(plan);
    if (options_.step_delay.count() > 0) std::this_thread::sleep_for(options_.step_delay);
    forwarded = true;
    scheduler_.on_step_done(result_);
    publish_slots();
    if (watched) publish_phase(plan, step_start);
  }
  deliver();
}

void EngineLoop::publish_slots() {
  std::vector<ServiceStats::Slot> snapshot;
  const auto slots = scheduler_.slots();
  for (size_t i = 0; i < slots.size(); ++i) {
    ServiceStats::Slot s{static_cast<int>(i), false, 0, "idle", 0, 0};
    if (slots[i]) {
      s.busy = true;
      s.request = static_cast<uint64_t>(slots[i]->id);
      s.state = sched::state_name(slots[i]->state);
      s.n_prompt = slots[i]->n_prompt();
      s.n_generated = slots[i]->n_generated;
    }
    snapshot.push_back(std::move(s));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  slot_snapshot_ = std::move(snapshot);
}

// What slot `slot` did in the step of `plan`, just done: its row (prompt
// chunk or decode), else what the scheduler holds it for (the barrier, a
// park, another member's prefill turn).
PhaseSlot EngineLoop::phase_slot(const sched::BatchPlan& plan, int slot) const {
  PhaseSlot p;
  const auto& s = slots_[static_cast<size_t>(slot)];
  if (!s) return p;
  p.request = s->id;
  p.n_prompt = static_cast<int>(s->request.prompt.size());
  p.n_generated = s->stream.n_generated();
  p.ended = s->done;
  const sched::PlanRow* row = plan.row_of(slot);
  const bool sampled = (row != nullptr && row->kind == sched::RowKind::kDecode) || plan.samples_first(slot);
  if (row != nullptr && row->kind == sched::RowKind::kPrompt) {
    p.activity = SlotActivity::kPrefill;
    p.n_tokens = row->n_tokens;
    p.n_prefilled = row->pos + row->n_tokens;
  } else if (sampled) {
    p.activity = SlotActivity::kDecode;
    p.n_tokens = row != nullptr ? 1 : 0;
    p.n_prefilled = p.n_prompt;
  } else if (const auto& r = scheduler_.slots()[static_cast<size_t>(slot)]; r && r->id == s->id) {
    p.n_prefilled = r->n_prefilled;
    switch (r->state) {
      case sched::RequestState::kReady: p.activity = SlotActivity::kReady; break;
      case sched::RequestState::kDecode: p.activity = r->parked ? SlotActivity::kParked : SlotActivity::kDecode; break;
      case sched::RequestState::kPrefill: p.activity = SlotActivity::kWait; break;
      default: break;
    }
  }
  if (sampled && p.n_generated == 1) p.ttft_ms = millis(s->first_token - s->submitted);
  if (sampled && p.n_generated > 1) p.gap_ms = millis(s->last_token_time - s->previous_token_time);
  return p;
}

// The step just done as a PhaseFrame for the watchers (phase_feed.h).
void EngineLoop::publish_phase(const sched::BatchPlan& plan, Clock::time_point step_start) {
  PhaseFrame& f = phase_frame_;
  const sched::SchedulerCounters c = scheduler_.counters();
  f.step = plan.has_work() ? plan.step : -1;
  f.t_ms = phase_feed_.now_ms();
  f.step_ms = millis(Clock::now() - step_start);
  f.phase = sched::phase_label(plan.phase);
  f.cohort_size = c.cohort_size;
  f.n_queued = c.n_queued;
  f.n_blocked = c.n_blocked;
  f.n_parked = c.n_parked;
  f.slots.clear();
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) f.slots.push_back(phase_slot(plan, i));
  f.admitted.clear();
  for (const sched::Admission& a : plan.admitted) f.admitted.push_back(a.id);
  f.ended.clear();
  for (const sched::Ending& e : plan.ended) f.ended.push_back({e.id, sched::reason_name(e.reason)});
  f.queued.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, p] : pending_) f.queued.push_back(id);
  }
  std::sort(f.queued.begin(), f.queued.end());
  if (f.queued.size() > PhaseFeed::kMaxQueuedIds) f.queued.resize(PhaseFeed::kMaxQueuedIds);
  phase_feed_.publish(f);
}

// A handle cancelled by its HTTP thread (client gone) becomes a scheduler
// cancellation; the request leaves at the next plan.
void EngineLoop::forward_cancellations() {
  for (auto& s : slots_) {
    if (s && !s->done && s->handle->cancelled()) scheduler_.cancel(s->id);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, p] : pending_) {
    if (p.handle->cancelled()) scheduler_.cancel(id);
  }
}

// The error of a request the scheduler ended; out of KV room it is
// llama-server's "context size has been exceeded", which its clients look for.
std::string EngineLoop::end_message(sched::EndReason reason) const {
  if (reason == sched::EndReason::kNoKvRoom) {
    return fmt::format("request ended: the context size has been exceeded (the KV cache of -c {} tokens{} is full)",
                       options_.decoder.n_ctx, options_.kv_unified ? ", shared by every slot," : "");
  }
  return fmt::format("request ended: {}", sched::reason_name(reason));
}

void EngineLoop::apply_endings(const sched::BatchPlan& plan) {
  for (const sched::Ending& e : plan.ended) {
    if (e.slot >= 0 && slots_[static_cast<size_t>(e.slot)] &&
        slots_[static_cast<size_t>(e.slot)]->id == e.id) {
      SlotState& s = *slots_[static_cast<size_t>(e.slot)];
      const bool failed = e.reason == sched::EndReason::kError || e.reason == sched::EndReason::kNoKvRoom;
      if (!s.done) finish(s, finish_of(e.reason), failed ? end_message(e.reason) : "");
      slots_[static_cast<size_t>(e.slot)].reset();
      continue;
    }
    // Ended while queued: never admitted.
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(e.id);
    if (it == pending_.end()) continue;
    Delivery& d = outbox_.emplace_back();
    d.handle = std::move(it->second.handle);
    d.event.done = true;
    if (e.reason != sched::EndReason::kCancelled) d.event.error = end_message(e.reason);
    pending_.erase(it);
  }
}

void EngineLoop::apply_admissions(const sched::BatchPlan& plan) {
  for (const sched::Admission& a : plan.admitted) {
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = pending_.find(a.id);
      assert(it != pending_.end());
      p = std::move(it->second);
      pending_.erase(it);
    }
    engine::StopParams sp;
    if (!p.request.ignore_eos) sp.eog_tokens.insert(eog_tokens_.begin(), eog_tokens_.end());
    sp.stop = p.request.stop;
    auto& slot = slots_[static_cast<size_t>(a.slot)];
    slot.emplace(std::move(p.handle), std::move(p.request), a.id, decoder_.n_vocab(), n_ctx_slot_,
                 tokenizer_.detokenizer(false), std::move(sp));
    slot->n_cached = a.n_cached;
    slot->submitted = p.submitted;
    if (slot->request.return_progress && !slot->request.embedding) report_progress(*slot, a.n_cached);
  }
}

// A progress report of the slot's prompt (return_progress), in the outbox.
void EngineLoop::report_progress(const SlotState& s, int processed) {
  Delivery& d = outbox_.emplace_back();
  d.handle = s.handle;
  PromptProgress& p = d.event.progress.emplace();
  p.total = static_cast<int>(s.request.prompt.size());
  p.cache = s.n_cached;
  p.processed = processed;
  p.time_ms = s.started ? millis(Clock::now() - s.first_step) : 0.0;
}

void EngineLoop::build_batch(const sched::BatchPlan& plan) {
  batch_.clear();
  std::fill(output_row_.begin(), output_row_.end(), -1);
  int n_out = 0, n_hidden = 0;
  for (const sched::PlanRow& row : plan.rows) {
    SlotState& s = *slots_[static_cast<size_t>(row.slot)];
    if (!s.started) {
      s.started = true;
      s.first_step = Clock::now();
    }
    if (row.kind == sched::RowKind::kDecode) {
      batch_.add(s.stream.last_token(), row.pos, row.slot, true);
      output_row_[static_cast<size_t>(row.slot)] = n_out++;
      continue;
    }
    if (s.request.embedding) {
      const int n_prompt = static_cast<int>(s.request.prompt.size());
      const int first = n_hidden;
      for (int i = 0; i < row.n_tokens; ++i) {
        const bool embd = engine::pooling_reads_row(s.request.pooling, row.pos + i, n_prompt);
        batch_.add(s.request.prompt[static_cast<size_t>(row.pos + i)], row.pos + i, row.slot, false, embd);
        n_hidden += embd ? 1 : 0;
      }
      hidden_rows_[static_cast<size_t>(row.slot)] = {first, n_hidden - first};
      continue;
    }
    for (int i = 0; i < row.n_tokens; ++i) {
      const bool last = row.last_chunk && i == row.n_tokens - 1;
      batch_.add(s.request.prompt[static_cast<size_t>(row.pos + i)], row.pos + i, row.slot, last);
      if (last) output_row_[static_cast<size_t>(row.slot)] = n_out++;
    }
  }
}

// An embedding's hidden rows of this step join those of its earlier steps;
// with its last chunk the request is done (the scheduler ends it too) and
// its final event carries them.
void EngineLoop::collect_hidden(const sched::PlanRow& row, std::span<const float> hidden) {
  SlotState& s = *slots_[static_cast<size_t>(row.slot)];
  const size_t n_embd = static_cast<size_t>(model_.hparams().n_embd);
  const auto [first, count] = hidden_rows_[static_cast<size_t>(row.slot)];
  const std::span<const float> rows =
      hidden.subspan(static_cast<size_t>(first) * n_embd, static_cast<size_t>(count) * n_embd);
  s.hidden.insert(s.hidden.end(), rows.begin(), rows.end());
  if (!row.last_chunk) return;
  finish(s, engine::FinishReason::stop, "");
  GenerationEvent& ev = outbox_.back().event;
  ev.hidden = std::move(s.hidden);
  ev.n_embd = static_cast<int>(n_embd);
  s.hidden = {};
}

// The step is handed to the decoder; while it computes, the previous step's
// events are delivered and cancellations forwarded; then its rows are sampled.
void EngineLoop::execute(const sched::BatchPlan& plan) {
  const auto start = Clock::now();
  result_.clear();
  build_batch(plan);
  batch_.best_k = best_k(plan);
  if (batch_.best_k > 0) build_masks(plan);
  std::span<const float> logits;
  const size_t n_vocab = static_cast<size_t>(decoder_.n_vocab());
  try {
    if (!batch_.empty()) {
      decoder_.submit(batch_);
      count_step();
    }
    deliver();
    forward_cancellations();  // they take effect at the next plan either way
    if (!batch_.empty()) logits = decoder_.wait();
  } catch (const Error& e) {
    fmt::print(stderr, "error: step {} failed: {}\n", plan.step, e.what());
    result_.failed = true;
    deliver();
    forward_cancellations();
    return;
  }
  for (const sched::PlanRow& row : plan.rows) {
    if (row.kind != sched::RowKind::kPrompt) continue;
    const SlotState& s = *slots_[static_cast<size_t>(row.slot)];
    if (s.request.embedding) {
      collect_hidden(row, decoder_.hidden());
    } else if (s.request.return_progress) {
      report_progress(s, row.pos + row.n_tokens);  // before the first token's event
    }
  }
  auto row_logits = [&](int slot) {
    return logits.subspan(static_cast<size_t>(output_row_[static_cast<size_t>(slot)]) * n_vocab, n_vocab);
  };
  auto row_best = [&](int slot) -> std::span<const engine::TokenLogit> {
    return batch_.best_k > 0 ? decoder_.best(output_row_[static_cast<size_t>(slot)]) : std::span<const engine::TokenLogit>();
  };
  for (const sched::SlotRef& k : plan.keep_logits) {
    SlotState& s = *slots_[static_cast<size_t>(k.slot)];
    if (batch_.best_k > 0) {
      auto src = row_best(k.slot);
      s.kept_best.assign(src.begin(), src.end());
    } else {
      auto src = row_logits(k.slot);
      s.kept_logits.assign(src.begin(), src.end());
    }
  }
  for (const sched::SlotRef& f : plan.first_tokens) {
    SlotState& s = *slots_[static_cast<size_t>(f.slot)];
    if (output_row_[static_cast<size_t>(f.slot)] >= 0) {
      sample_slot(f.slot, row_logits(f.slot), {}, row_best(f.slot), result_);
    } else {
      std::vector<float> kept = std::move(s.kept_logits);
      std::vector<engine::TokenLogit> kept_best = std::move(s.kept_best);
      s.kept_logits = {};
      s.kept_best = {};
      const std::span<const float> view(kept);  // the moved vector keeps its storage
      sample_slot(f.slot, view, std::move(kept), kept_best, result_);
    }
  }
  for (const sched::PlanRow& row : plan.rows) {
    if (row.kind == sched::RowKind::kDecode) {
      sample_slot(row.slot, row_logits(row.slot), {}, row_best(row.slot), result_);
    }
  }
  const double taken = seconds(Clock::now() - start);
  std::lock_guard<std::mutex> lock(mutex_);
  totals_.step_seconds_total += taken;
}

// Every row that wants logits is sampled this step or kept for its first
// token (a READY member's); each must sample from its best logits.
int EngineLoop::best_k(const sched::BatchPlan& plan) const {
  if (!options_.best_logits) return 0;
  int k = 0;
  auto fits = [&](int slot) {
    const SlotState& s = *slots_[static_cast<size_t>(slot)];
    const int need = s.request.n_logprobs >= 0 ? 0 : s.stream.best_needed(backend::kMaxBestLogits);
    k = std::max(k, need);
    return need > 0;
  };
  for (const sched::PlanRow& row : plan.rows) {
    if (output_row_[static_cast<size_t>(row.slot)] >= 0 && !fits(row.slot)) return 0;
  }
  return k;
}

void EngineLoop::build_masks(const sched::BatchPlan& plan) {
  const bool any = std::any_of(plan.rows.begin(), plan.rows.end(), [&](const sched::PlanRow& row) {
    return output_row_[static_cast<size_t>(row.slot)] >= 0 && slots_[static_cast<size_t>(row.slot)]->stream.constrained();
  });
  if (!any) return;
  const auto start = Clock::now();
  const size_t words = static_cast<size_t>(engine::Batch::mask_words(decoder_.n_vocab()));
  batch_.token_masks.resize(static_cast<size_t>(batch_.n_outputs()) * words);
  for (const sched::PlanRow& row : plan.rows) {
    const int out = output_row_[static_cast<size_t>(row.slot)];
    if (out < 0) continue;
    slots_[static_cast<size_t>(row.slot)]->stream.write_mask(
        std::span(batch_.token_masks).subspan(static_cast<size_t>(out) * words, words));
  }
  const double seconds_taken = seconds(Clock::now() - start);
  std::lock_guard<std::mutex> lock(mutex_);
  totals_.grammar_mask_seconds_total += seconds_taken;
  ++totals_.grammar_mask_steps_total;
}

// Samples the slot's next token and decides whether it ends the request;
// what the client sees of it waits in the outbox. `kept` owns `logits` when
// they are a READY member's kept logits. A non-empty `best` holds the row's
// best logits instead (Batch::best_k), and the token is sampled from them.
void EngineLoop::sample_slot(int slot, std::span<const float> logits, std::vector<float> kept,
                             std::span<const engine::TokenLogit> best, sched::StepResult& result) {
  SlotState& s = *slots_[static_cast<size_t>(slot)];
  engine::StreamToken next;
  try {
    next = best.empty() ? s.stream.next(logits) : s.stream.next_best(best);
  } catch (const Error& e) {
    result.failed_slots.push_back(slot);
    finish(s, engine::FinishReason::none, e.what());
    return;
  }
  const auto now = Clock::now();
  Delivery& d = outbox_.emplace_back();
  d.handle = s.handle;
  GeneratedToken& tok = d.event.tokens.emplace_back();
  tok.id = next.id;
  tok.text = std::move(next.text);
  if (s.request.n_logprobs >= 0) {
    d.n_logprobs = s.request.n_logprobs;
    d.kept = std::move(kept);
    d.logits = d.kept.empty() ? logits : std::span<const float>(d.kept);
  }
  if (s.stream.n_generated() == 1) {
    s.first_token = now;
    d.ttft = seconds(now - s.submitted);
  } else {
    d.itl = seconds(now - s.last_token_time);
  }
  s.previous_token_time = s.last_token_time;
  s.last_token_time = now;
  if (s.stream.finished()) {
    result.stopped.push_back(slot);
    finish(s, s.stream.reason(), "");
  }
}

void EngineLoop::finish(SlotState& s, engine::FinishReason reason, const std::string& error) {
  Delivery& d = outbox_.emplace_back();
  d.handle = s.handle;
  GenerationEvent& ev = d.event;
  ev.done = true;
  ev.finish = reason;
  ev.error = error;
  ev.stop_word = s.stream.matched_stop();
  ev.truncated = s.shifted || (reason == engine::FinishReason::length &&
                               static_cast<int>(s.request.prompt.size()) + s.stream.n_generated() >= n_ctx_slot_);
  std::string rest = s.stream.flush();
  if (!rest.empty()) {
    GeneratedToken t;
    t.id = -1;  // text only: released hold-back
    t.text = std::move(rest);
    ev.tokens.push_back(std::move(t));
  }
  Usage& u = ev.usage;
  u.prompt_tokens = static_cast<int>(s.request.prompt.size());
  u.cached_tokens = s.n_cached;
  u.completion_tokens = s.stream.n_generated();
  if (s.started) {
    u.queue_ms = millis(s.first_step - s.submitted);
    if (u.completion_tokens > 0) {
      u.prompt_ms = millis(s.first_token - s.first_step);
      u.generation_ms = millis(s.last_token_time - s.first_token);
    }
  }
  s.done = true;
}

// A decoder step and the slots busy in it, for llama-server's metrics.
void EngineLoop::count_step() {
  const auto busy = std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s.has_value(); });
  std::lock_guard<std::mutex> lock(mutex_);
  ++totals_.n_decode_total;
  totals_.n_busy_slots_total += static_cast<uint64_t>(busy);
}

// Log-probabilities, counters and the push to each handle, in the order the
// events were made.
void EngineLoop::deliver() {
  if (outbox_.empty()) return;
  for (Delivery& d : outbox_) {
    if (d.n_logprobs >= 0) {
      GeneratedToken& tok = d.event.tokens.front();
      tok.logprob = engine::compute_logprobs(d.logits, tok.id, d.n_logprobs, tok.top);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Delivery& d : outbox_) {
      if (d.ttft >= 0) histograms_.add_ttft(d.ttft);
      if (d.itl >= 0) histograms_.add_itl(d.itl);
      if (!d.event.done && !d.event.progress) ++totals_.generated_tokens_total;
      if (d.event.done) add_usage(d.event.usage);
    }
  }
  for (Delivery& d : outbox_) d.handle->push(std::move(d.event));
  outbox_.clear();
}

// A finished request's share of llama-server's counters. REQUIRES: mutex_ held.
void EngineLoop::add_usage(const Usage& u) {
  ServiceStats& t = totals_;
  t.prompt_tokens_cached_total += static_cast<uint64_t>(u.cached_tokens);
  t.n_tokens_max = std::max(t.n_tokens_max, static_cast<uint64_t>(u.prompt_tokens + u.completion_tokens));
  if (u.completion_tokens > 0) {
    t.prompt_seconds_total += u.prompt_ms / 1e3;
    t.prompt_tokens_timed += static_cast<uint64_t>(u.prompt_tokens - u.cached_tokens);
    t.predicted_seconds_total += u.generation_ms / 1e3;
    t.predicted_tokens_timed += static_cast<uint64_t>(u.completion_tokens - 1);
  }
}

ServiceStats EngineLoop::stats() const {
  const sched::SchedulerCounters c = scheduler_.counters();
  std::unique_lock<std::mutex> lock(mutex_);
  ServiceStats st = totals_;
  histograms_.fill(st);
  st.slots = slot_snapshot_;
  lock.unlock();
  st.prompt_tokens_total = static_cast<uint64_t>(c.n_prompt_tokens);
  st.requests_processing = c.n_processing;
  st.requests_queued = c.n_queued;
  st.requests_blocked_by_phase = c.n_blocked;
  st.phase = sched::phase_label(c.phase);
  st.cohort_size = c.cohort_size;
  st.n_slots = options_.scheduler.n_slots;
  st.n_ctx = n_ctx_slot_;
  if (st.slots.empty()) {
    for (int i = 0; i < st.n_slots; ++i) st.slots.push_back({i, false, 0, "idle", 0, 0});
  }
  return st;
}

}  // namespace cohort::server
