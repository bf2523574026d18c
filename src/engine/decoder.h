// Runs batches through a model: the engine's one step.
//
// A Decoder owns everything a forward needs besides the weights: the thread
// pool, the paged KV cache and its block manager, the activation workspace
// and the logits buffer, all sized at construction (`-c`, `-b`, `-ub`, `-t`).
// decode() reserves KV room for the batch's new positions, runs its
// micro-batches in order, commits the written tokens (so that full blocks
// become reusable prefixes), and returns the logits of the rows that want
// them.
//
// Thread safety: none; one thread drives a Decoder.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "common/thread_pool.h"
#include "engine/batch.h"
#include "kv/block_manager.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace cohort::engine {

struct DecoderOptions {
  int n_ctx = 4096;      // KV capacity in tokens, over all sequences (-c)
  int n_batch = 2048;    // most tokens per decode() call (-b)
  int n_ubatch = 512;    // most tokens per forward (-ub)
  int n_threads = 0;     // 0: hardware threads (-t)
  int poll = kDefaultPoll;  // how long waiting threads spin before sleeping, 0..100 (--poll)
  int block_size = kv::kDefaultBlockSize;
  bool exact = false;    // CPU reference path: F32 activations in every dot product (--exact)

  // Throws cohort::Error naming the flag for impossible values.
  void validate() const;
};

class Decoder {
 public:
  // `model` must outlive the decoder.
  Decoder(const model::Model& model, const DecoderOptions& options);

  // Runs `batch` (validated first). Sequences not yet in the KV cache are
  // created; existing ones grow. Returns logits [batch.n_outputs(), n_vocab],
  // a view valid until the next decode(). Throws cohort::Error if the batch
  // is invalid, larger than n_batch, or the KV cache has no room (then
  // nothing was changed).
  std::span<const float> decode(const Batch& batch);

  // Forgets a sequence and frees its KV blocks (no-op if unknown).
  void free_sequence(kv::SeqId seq);

  kv::BlockManager& blocks() { return blocks_; }
  const model::Model& model() const { return model_; }
  const DecoderOptions& options() const { return options_; }
  int n_vocab() const { return static_cast<int>(model_.hparams().n_vocab); }

 private:
  void reserve_kv(const Batch& batch);

  const model::Model& model_;
  DecoderOptions options_;
  ThreadPool pool_;
  kv::BlockManager blocks_;
  kv::KvCache kv_;
  comm::SingleDevice comm_;
  model::Workspace ws_;
  std::vector<float> logits_;  // [n_outputs, n_vocab], grown on demand
};

}  // namespace cohort::engine
