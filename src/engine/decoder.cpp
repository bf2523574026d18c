#include "engine/decoder.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <thread>

#include "common/error.h"
#include "engine/grammar_matcher.h"

namespace cohort::engine {

// One rank: its forward (the whole model's, or its shards'), the backend it
// runs on, its communicator and activations. Only rank 0 receives the
// gathered logits.
struct Decoder::Rank {
  std::unique_ptr<model::RankForward> owned;  // a tensor-parallel rank's forward
  const model::RankForward& forward;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<comm::Communicator> comm;
  model::Workspace ws;

  Rank(std::unique_ptr<model::RankForward> own, const model::RankForward& fwd,
       std::unique_ptr<backend::Backend> be, std::unique_ptr<comm::Communicator> c, int64_t n_ub)
      : owned(std::move(own)),
        forward(fwd),
        backend(std::move(be)),
        comm(std::move(c)),
        ws(*backend, forward.hparams(), n_ub, !forward.vocab_counts().empty()) {}
};

namespace {

kv::KvCacheShape kv_shape(const model::HParams& hp, const DecoderOptions& o) {
  kv::KvCacheShape s;
  s.n_layer = static_cast<int>(hp.n_layer);
  s.block_size = o.block_size;
  s.n_blocks = kv::kv_blocks_for_context(o.n_ctx, o.block_size);
  s.n_head_kv = static_cast<int>(hp.n_head_kv);
  s.head_dim = static_cast<int>(hp.head_dim);
  s.type_k = kv::cache_type(o.cache_type_k, "-ctk");
  s.type_v = kv::cache_type(o.cache_type_v, "-ctv");
  return s;
}

int ubatch_size(const DecoderOptions& o) { return std::min(o.n_ubatch, o.n_batch); }

// A backend for the sizes of `hp` (a rank's, under tensor parallelism) on
// -dev entry `device` with n_threads CPU threads.
std::unique_ptr<backend::Backend> make_backend(const model::HParams& hp, const DecoderOptions& o,
                                               const std::string& device, int n_threads,
                                               const std::string& transport) {
  const kv::KvCacheShape kv = kv_shape(hp, o);
  backend::BackendOptions bo;
  const backend::DeviceChoice where = o.device_of(device);
  bo.device = where.device;
  bo.device_index = where.index;
  bo.n_threads = n_threads;
  bo.exact = o.exact;
  bo.poll = o.poll;
  bo.allreduce = transport;
  // COHORT_CUDA_GRAPHS=0 runs every step eagerly (to compare, or to rule graphs out).
  const char* graphs = std::getenv("COHORT_CUDA_GRAPHS");
  bo.graphs = !(graphs != nullptr && std::string_view(graphs) == "0");
  return backend::make_backend(
      bo, model::backend_limits(hp, ubatch_size(o), int64_t{kv.n_blocks} * kv.block_size, kv));
}

// -t shared among the ranks: each gets total / n, the first ones one more
// while the remainder lasts, and every rank at least one. 0 stays 0 (all
// hardware threads) for a single rank.
int rank_threads(int n_threads, int n_ranks, int rank) {
  if (n_ranks == 1) return n_threads;
  const int total = n_threads > 0 ? n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, total / n_ranks + (rank < total % n_ranks ? 1 : 0));
}

}  // namespace

Decoder::Decoder(const model::Model& model, const DecoderOptions& options)
    : model_(model),
      options_((options.validate(), options)),
      blocks_(kv::kv_blocks_for_context(options.n_ctx, options.block_size), options.block_size),
      threads_(options.n_ranks()),
      step_(ubatch_size(options), blocks_.n_blocks(), options.block_size) {
  const std::vector<std::string> devs = options_.devices();
  const int n = static_cast<int>(devs.size());
  const int n_ub = ubatch_size(options_);
  if (options_.split_mode == "tensor") {
    plan_ = std::make_unique<model::ShardPlan>(model.shard_plan(n, options_.tensor_split));
    group_ = std::make_unique<comm::CpuGroup>(n, options_.poll);
  }
  std::vector<backend::DeviceChoice> where;
  for (const std::string& d : devs) where.push_back(options_.device_of(d));
  const std::string transport = plan_ ? backend::resolve_transport(options_.transport(), where) : options_.transport();
  for (int r = 0; r < n; ++r) {
    std::unique_ptr<model::RankForward> own = plan_ ? model.bind_rank(*plan_, r) : nullptr;
    const model::RankForward& fwd = own ? *own : model.whole();
    auto be = make_backend(fwd.hparams(), options_, devs[static_cast<size_t>(r)],
                           rank_threads(options_.n_threads, n, r), transport);
    std::unique_ptr<comm::Communicator> c;
    if (group_) {
      c = be->communicator(*group_, r);
    } else {
      c = std::make_unique<comm::SingleDevice>();
    }
    ranks_.push_back(std::make_unique<Rank>(std::move(own), fwd, std::move(be), std::move(c), n_ub));
    Rank& k = *ranks_.back();
    k.backend->load_weights(model.file().data_section(),
                            plan_ ? k.forward.matrices() : std::vector<backend::ConstTensorView>{});
  }
  rope_ = ranks_[0]->forward.rope_params();
  seqs_.reserve(static_cast<size_t>(options.n_batch));
}

Decoder::~Decoder() = default;

backend::MemoryUse Decoder::memory() const {
  backend::MemoryUse sum;
  for (const auto& k : ranks_) {
    const backend::MemoryUse m = k->backend->memory();
    sum.device += (sum.device.empty() ? "" : ",") + m.device;
    sum.weights += m.weights;
    sum.kv += m.kv;
    sum.kv_tokens = m.kv_tokens;
    sum.kv_type_k = m.kv_type_k;
    sum.kv_type_v = m.kv_type_v;
    sum.workspace += m.workspace;
  }
  return sum;
}

void Decoder::run_step(const backend::StepInput& in, backend::TensorView out, backend::TensorView hidden) {
  // Two words of capture, so that the std::function of RankThreads::run
  // holds it without allocating.
  struct Step {
    const backend::StepInput& in;
    backend::TensorView out;
    backend::TensorView hidden;
  } step{in, out, hidden};
  auto one = [this, &step](int r) {
    Rank& k = *ranks_[static_cast<size_t>(r)];
    k.backend->begin_step(step.in);
    model::ForwardContext ctx{k.forward.hparams(), *k.backend, *k.comm, k.ws, step.in};
    k.forward.forward(ctx, r == 0 ? step.out : backend::TensorView{},
                      r == 0 ? step.hidden : backend::TensorView{});
  };
  if (ranks_.size() == 1) {
    one(0);
  } else {
    threads_.run(one);
  }
}

void Decoder::reserve(kv::SeqId seq, int n_tokens) {
  const bool known = blocks_.contains(seq);
  const int have = known ? blocks_.n_tokens(seq) : 0;
  if (known && n_tokens <= have) return;
  const bool room = known ? blocks_.can_append(seq, n_tokens - have) : blocks_.can_allocate(seq, n_tokens);
  if (!room) {
    fail("out of KV cache: sequence {} needs {} more blocks of {} tokens, {} are free (raise -c)", seq,
         blocks_.n_blocks_for(n_tokens) - blocks_.n_blocks_for(have), blocks_.block_size(),
         blocks_.n_free_blocks());
  }
  if (known) {
    blocks_.append(seq, n_tokens - have);
  } else {
    blocks_.allocate(seq, n_tokens);
  }
}

bool Decoder::computes_hidden() const { return ranks_[0]->backend->device() == backend::Device::cpu; }

void Decoder::check(const Batch& batch) {
  validate(batch, n_vocab(), seqs_);
  if (batch.n_tokens() > options_.n_batch) {
    fail("batch of {} tokens exceeds -b {}", batch.n_tokens(), options_.n_batch);
  }
  if (!computes_hidden() && batch.n_embd_outputs() > 0) {
    fail("hidden states (embeddings) are computed on the CPU backend only (-dev cpu)");
  }
  for (const SeqSpan& s : seqs_) {
    if (s.last >= options_.n_ctx) {
      fail("position {} is outside the context of {} tokens (-c)", s.last, options_.n_ctx);
    }
    const int written = blocks_.contains(s.seq) ? blocks_.n_committed(s.seq) : 0;
    if (s.first != written) {
      fail("sequence {} continues at position {}, but the batch starts it at {}", s.seq, written,
           s.first);
    }
    const int room = blocks_.contains(s.seq) ? blocks_.n_tokens(s.seq) : 0;
    if (s.last >= room) {
      fail("sequence {} has KV room for {} positions, the batch writes position {} (reserve first)",
           s.seq, room, s.last);
    }
  }
}

std::span<float> Decoder::logits_buffer(int which, int n_outputs) {
  backend::Tensor& t = logits_[which];
  const int64_t n_vocab = this->n_vocab();
  if (t.n_rows() < n_outputs) {  // grown by doubling: a pinned allocation is slow
    const int64_t rows = std::min<int64_t>(std::max<int64_t>(n_outputs, 2 * t.n_rows()), options_.n_batch);
    t = ranks_[0]->backend->alloc_host(rows, n_vocab);
  }
  return {t.view().f32(), static_cast<size_t>(n_outputs) * static_cast<size_t>(n_vocab)};
}

std::span<float> Decoder::hidden_buffer(int which, int n_rows) {
  std::vector<float>& v = hidden_[which];
  const size_t n = static_cast<size_t>(n_rows) * static_cast<size_t>(model_.hparams().n_embd);
  if (v.size() < n) v.resize(n);
  return {v.data(), n};
}

// A GPU's step leaves the host's cores idle: the caller's wait() and the
// runner between steps spin through a decode step or two before they sleep
// (COHORT_RUNNER_SPIN_US sets it, 0 to compare). The CPU's steps compute
// on those cores: no spin.
int64_t Decoder::runner_spin_ns() const {
  if (const char* us = std::getenv("COHORT_RUNNER_SPIN_US")) return std::max(0L, std::atol(us)) * 1000;
  return ranks_[0]->backend->device() == backend::Device::cpu ? 0 : kGpuRunnerSpinNs;
}

bool Decoder::device_selects_best(int k) const {
  // The pairs are written over the row's first 2k floats.
  return ranks_.size() == 1 && ranks_[0]->backend->selects_best() && 2 * k <= n_vocab();
}

void Decoder::collect_best(std::span<float> logits, const Batch& batch, int which) {
  const int n_rows = batch.n_outputs();
  const int k = batch.best_k;
  const size_t n_vocab = static_cast<size_t>(this->n_vocab());
  const size_t words = static_cast<size_t>(Batch::mask_words(static_cast<int>(n_vocab)));
  std::vector<TokenLogit>& best = best_[which];
  best.resize(static_cast<size_t>(n_rows) * static_cast<size_t>(k));
  best_k_[which] = k;
  const bool device = device_selects_best(k);
  if (!device && no_skip_.size() != n_vocab) no_skip_.assign(n_vocab, 0);
  for (int r = 0; r < n_rows; ++r) {
    const std::span<float> row = logits.subspan(static_cast<size_t>(r) * n_vocab, n_vocab);
    TokenLogit* dst = best.data() + static_cast<size_t>(r) * static_cast<size_t>(k);
    if (device) {  // the pairs the backend wrote at the row's start
      static_assert(std::is_trivially_copyable_v<TokenLogit> && sizeof(TokenLogit) == 8);
      std::memcpy(static_cast<void*>(dst), row.data(), static_cast<size_t>(k) * sizeof(TokenLogit));
    } else {
      if (!batch.token_masks.empty()) {
        mask_logits(row, std::span(batch.token_masks).subspan(static_cast<size_t>(r) * words, words));
      }
      select_top_k(select_, row, k, {}, no_skip_);
      std::copy_n(select_.data.begin(), k, dst);
    }
  }
}

std::span<const TokenLogit> Decoder::best() const {
  if (last_which_ < 0 || best_k_[last_which_] == 0) return {};
  return best_[last_which_];
}

std::span<const TokenLogit> Decoder::best(int row) const {
  const size_t k = last_which_ < 0 ? 0 : static_cast<size_t>(best_k_[last_which_]);
  return best().subspan(static_cast<size_t>(row) * k, k);
}

void Decoder::run_batch(const Batch& batch, std::span<float> logits, std::span<float> hidden, int which) {
  const int64_t n_vocab = this->n_vocab();
  const int64_t n_embd = model_.hparams().n_embd;
  const int n_ub = ubatch_size(options_);
  int32_t n_out = 0;  // logit rows written by earlier micro-batches
  int32_t n_hid = 0;  // hidden rows written by earlier micro-batches
  blocks_.take_moves(kv_moves_, kv_move_rounds_);  // before this step writes the cache
  blocks_.take_copies(kv_copies_);
  for (int begin = 0; begin < batch.n_tokens(); begin += n_ub) {
    const int end = std::min(begin + n_ub, batch.n_tokens());
    backend::StepInput in = step_.build(batch, begin, end, blocks_);
    if (device_selects_best(batch.best_k)) {
      in.best_k = batch.best_k;
      if (!batch.token_masks.empty()) {
        const size_t words = static_cast<size_t>(Batch::mask_words(static_cast<int>(n_vocab)));
        in.token_masks = std::span(batch.token_masks).subspan(static_cast<size_t>(n_out) * words,
                                                              static_cast<size_t>(in.n_logits()) * words);
      }
    }
    if (begin == 0) {
      in.kv_copies = kv_copies_;
      if (!kv_moves_.empty()) {
        in.kv_moves = kv_moves_;
        in.kv_move_rounds = kv_move_rounds_;
        in.kv_rope = &rope_;
      }
    }
    const std::span<float> out = logits.subspan(static_cast<size_t>(n_out) * static_cast<size_t>(n_vocab));
    const backend::TensorView hid =
        in.n_embd_rows() == 0
            ? backend::TensorView{}
            : backend::host_f32(hidden.subspan(static_cast<size_t>(n_hid) * static_cast<size_t>(n_embd)),
                                in.n_embd_rows(), n_embd);
    run_step(in, backend::host_f32(out, in.n_logits(), n_vocab), hid);
    n_out += in.n_logits();
    n_hid += in.n_embd_rows();
    for (int i = begin; i < end; ++i) {
      blocks_.commit(batch.seq_ids[static_cast<size_t>(i)], std::span(batch.tokens).subspan(static_cast<size_t>(i), 1));
    }
  }
  best_k_[which] = 0;
  if (batch.best_k > 0) collect_best(logits, batch, which);
}

std::span<const float> Decoder::decode(const Batch& batch) {
  if (runner_ && runner_->busy()) fail("decode() while a submitted step is unwaited");
  check(batch);
  const std::span<float> logits = logits_buffer(0, batch.n_outputs());
  const std::span<float> hidden = hidden_buffer(0, batch.n_embd_outputs());
  next_logits_ = 1;
  last_hidden_ = {};
  last_which_ = -1;
  run_batch(batch, logits, hidden, 0);
  last_hidden_ = hidden;
  last_which_ = 0;
  return logits;
}

void Decoder::submit(const Batch& batch) {
  if (runner_ && runner_->busy()) fail("submit() while a submitted step is unwaited");
  check(batch);
  submitted_ = batch;
  submitted_logits_ = logits_buffer(next_logits_, batch.n_outputs());
  submitted_hidden_ = hidden_buffer(next_logits_, batch.n_embd_outputs());
  const int which = next_logits_;
  next_logits_ ^= 1;
  if (!runner_) runner_ = std::make_unique<JobThread>(runner_spin_ns());
  runner_->start([this, which] { run_batch(submitted_, submitted_logits_, submitted_hidden_, which); });
}

std::span<const float> Decoder::wait() {
  if (!runner_ || !runner_->busy()) fail("wait() without a submitted step");
  runner_->wait();
  last_hidden_ = submitted_hidden_;
  last_which_ = next_logits_ ^ 1;
  return submitted_logits_;
}

int Decoder::warm_up(int max_seqs) {
  if (ranks_[0]->backend->device() == backend::Device::cpu) return 0;
  // A sequence takes a block; a step of more than -ub rows is cut into others.
  max_seqs = std::min({max_seqs, blocks_.n_free_blocks(), ubatch_size(options_)});
  int steps = 0;
  Batch batch;
  for (int n = 1; n <= max_seqs; ++n) {
    for (int pos = 0; pos < 2; ++pos) {
      batch.clear();
      for (int s = 0; s < n; ++s) {
        reserve(s, pos + 1);
        batch.add(0, pos, s, true);
      }
      decode(batch);
      ++steps;
    }
    for (int s = 0; s < n; ++s) free_sequence(s);
  }
  return steps;
}

void Decoder::free_sequence(kv::SeqId seq) {
  if (blocks_.contains(seq)) blocks_.free(seq);
}

}  // namespace cohort::engine
