#include "engine/decoder.h"

#include <algorithm>

#include "common/error.h"

namespace cohort::engine {
namespace {

kv::KvCacheShape kv_shape(const model::HParams& hp, const DecoderOptions& o) {
  kv::KvCacheShape s;
  s.n_layer = static_cast<int>(hp.n_layer);
  s.block_size = o.block_size;
  s.n_blocks = kv::kv_blocks_for_context(o.n_ctx, o.block_size);
  s.n_head_kv = static_cast<int>(hp.n_head_kv);
  s.head_dim = static_cast<int>(hp.head_dim);
  return s;
}

int ubatch_size(const DecoderOptions& o) { return std::min(o.n_ubatch, o.n_batch); }

std::unique_ptr<backend::Backend> make_backend(const model::HParams& hp, const DecoderOptions& o) {
  const kv::KvCacheShape kv = kv_shape(hp, o);
  backend::BackendOptions bo;
  const backend::DeviceChoice where = backend::choose_device(o.device, o.n_gpu_layers);
  bo.device = where.device;
  bo.device_index = where.index;
  bo.n_threads = o.n_threads;
  bo.exact = o.exact;
  bo.poll = o.poll;
  return backend::make_backend(
      bo, model::backend_limits(hp, ubatch_size(o), int64_t{kv.n_blocks} * kv.block_size, kv));
}

}  // namespace

void DecoderOptions::validate() const {
  if (n_ctx < 1) fail("-c (context size) must be at least 1, got {}", n_ctx);
  if (n_batch < 1) fail("-b (batch size) must be at least 1, got {}", n_batch);
  if (n_ubatch < 1) fail("-ub (micro-batch size) must be at least 1, got {}", n_ubatch);
  if (n_threads < 0) fail("-t (threads) must not be negative, got {}", n_threads);
  if (poll < 0 || poll > kMaxPoll) fail("--poll must be in 0..{}, got {}", kMaxPoll, poll);
  if (block_size < 1) fail("KV block size must be at least 1, got {}", block_size);
}

Decoder::Decoder(const model::Model& model, const DecoderOptions& options)
    : model_(model),
      options_((options.validate(), options)),
      blocks_(kv::kv_blocks_for_context(options.n_ctx, options.block_size), options.block_size),
      backend_(make_backend(model.hparams(), options)),
      ws_(*backend_, model.hparams(), ubatch_size(options)),
      step_(ubatch_size(options), blocks_.n_blocks(), options.block_size) {
  seqs_.reserve(static_cast<size_t>(options.n_batch));
  backend_->load_weights(model.file().data_section());
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

void Decoder::check(const Batch& batch) {
  validate(batch, n_vocab(), seqs_);
  if (batch.n_tokens() > options_.n_batch) {
    fail("batch of {} tokens exceeds -b {}", batch.n_tokens(), options_.n_batch);
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

std::span<const float> Decoder::decode(const Batch& batch) {
  check(batch);
  const int64_t n_vocab = this->n_vocab();
  const size_t need = static_cast<size_t>(batch.n_outputs()) * static_cast<size_t>(n_vocab);
  if (logits_.n_rows() < batch.n_outputs()) {  // grown by doubling: a pinned allocation is slow
    logits_ = backend_->alloc_host(std::min<int64_t>(std::max<int64_t>(batch.n_outputs(), 2 * logits_.n_rows()),
                                                     options_.n_batch),
                                   n_vocab);
  }
  const std::span<float> logits(logits_.view().f32(), need);
  const int n_ub = ubatch_size(options_);
  int32_t n_out = 0;  // logit rows written by earlier micro-batches
  for (int begin = 0; begin < batch.n_tokens(); begin += n_ub) {
    const int end = std::min(begin + n_ub, batch.n_tokens());
    const backend::StepInput& in = step_.build(batch, begin, end, blocks_);
    backend_->begin_step(in);
    model::ForwardContext ctx{model_.hparams(), *backend_, comm_, ws_, in};
    const std::span<float> out = logits.subspan(static_cast<size_t>(n_out) * static_cast<size_t>(n_vocab));
    model_.forward(ctx, backend::host_f32(out, in.n_logits(), n_vocab));
    n_out += in.n_logits();
    for (int i = begin; i < end; ++i) {
      blocks_.commit(batch.seq_ids[static_cast<size_t>(i)], std::span(batch.tokens).subspan(static_cast<size_t>(i), 1));
    }
  }
  return logits;
}

void Decoder::free_sequence(kv::SeqId seq) {
  if (blocks_.contains(seq)) blocks_.free(seq);
}

}  // namespace cohort::engine
