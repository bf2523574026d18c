#include "engine/decoder.h"

#include <algorithm>
#include <map>
#include <thread>

#include "common/error.h"

namespace cohort::engine {
namespace {

int resolve_threads(int n) {
  if (n > 0) return n;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

kv::KvCacheShape kv_shape(const model::HParams& hp, const DecoderOptions& o) {
  kv::KvCacheShape s;
  s.n_layer = static_cast<int>(hp.n_layer);
  s.block_size = o.block_size;
  s.n_blocks = kv::kv_blocks_for_context(o.n_ctx, o.block_size);
  s.n_head_kv = static_cast<int>(hp.n_head_kv);
  s.head_dim = static_cast<int>(hp.head_dim);
  return s;
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
      pool_(resolve_threads(options.n_threads), options.poll),
      blocks_(kv::kv_blocks_for_context(options.n_ctx, options.block_size), options.block_size),
      kv_(kv_shape(model.hparams(), options)),
      ws_(model.hparams(), std::min(options.n_ubatch, options.n_batch),
          static_cast<int64_t>(blocks_.n_blocks()) * options.block_size,
          resolve_threads(options.n_threads)) {}

void Decoder::reserve_kv(const Batch& batch) {
  // Positions each sequence needs room for: one past its largest position.
  // A sequence's first position in the batch must continue what is written.
  std::map<kv::SeqId, int> needed;
  for (int i = 0; i < batch.n_tokens(); ++i) {
    const kv::SeqId seq = batch.seq_ids[static_cast<size_t>(i)];
    const int pos = batch.positions[static_cast<size_t>(i)];
    auto [it, first] = needed.emplace(seq, 0);
    if (first) {
      const int written = blocks_.contains(seq) ? blocks_.n_committed(seq) : 0;
      if (pos != written) {
        fail("sequence {} continues at position {}, but the batch starts it at {}", seq, written,
             pos);
      }
    }
    it->second = std::max(it->second, pos + 1);
  }
  int blocks_needed = 0;
  for (const auto& [seq, n] : needed) {
    const int have = blocks_.contains(seq) ? blocks_.n_tokens(seq) : 0;
    if (n > have) {
      const int have_blocks = blocks_.n_blocks_for(have);
      blocks_needed += blocks_.n_blocks_for(n) - have_blocks;
    }
  }
  if (blocks_needed > blocks_.n_free_blocks()) {
    fail("out of KV cache: the batch needs {} more blocks of {} tokens, {} are free (raise -c)",
         blocks_needed, blocks_.block_size(), blocks_.n_free_blocks());
  }
  for (const auto& [seq, n] : needed) {
    if (!blocks_.contains(seq)) {
      blocks_.allocate(seq, n);
    } else if (n > blocks_.n_tokens(seq)) {
      blocks_.append(seq, n - blocks_.n_tokens(seq));
    }
  }
}

std::span<const float> Decoder::decode(const Batch& batch) {
  validate(batch, n_vocab());
  if (batch.n_tokens() > options_.n_batch) {
    fail("batch of {} tokens exceeds -b {}", batch.n_tokens(), options_.n_batch);
  }
  for (int i = 0; i < batch.n_tokens(); ++i) {
    if (batch.positions[static_cast<size_t>(i)] >= options_.n_ctx) {
      fail("position {} is outside the context of {} tokens (-c)",
           batch.positions[static_cast<size_t>(i)], options_.n_ctx);
    }
  }
  reserve_kv(batch);
  const size_t n_vocab = static_cast<size_t>(this->n_vocab());
  const size_t need = static_cast<size_t>(batch.n_outputs()) * n_vocab;
  if (logits_.size() < need) logits_.resize(need);
  model::ForwardContext ctx{model_.hparams(), pool_, kv_, blocks_, comm_, ws_, options_.exact};
  for (const UBatch& ub : split_ubatches(batch, std::min(options_.n_ubatch, options_.n_batch))) {
    model::UBatch mub{ub.tokens, ub.positions, ub.seq_ids, ub.want_logits};
    model_.forward(ctx, mub, logits_.data() + static_cast<size_t>(ub.output_offset) * n_vocab);
    for (int i = 0; i < ub.n_tokens(); ++i) {
      blocks_.commit(ub.seq_ids[static_cast<size_t>(i)], ub.tokens.subspan(static_cast<size_t>(i), 1));
    }
  }
  return {logits_.data(), need};
}

void Decoder::free_sequence(kv::SeqId seq) {
  if (blocks_.contains(seq)) blocks_.free(seq);
}

}  // namespace cohort::engine
