// Runs batches through a model: the engine's one step.
//
// A Decoder owns everything a forward needs besides the weights: the
// backend (chosen by backend::make_backend; on the CPU it holds the thread
// pool and the KV storage), the block manager of the paged KV cache, the
// activation workspace, the step buffers and the logits buffer, all sized
// at construction (`-c`, `-b`, `-ub`, `-t`). decode() turns each
// micro-batch into a plain-data step input (StepBuilder), runs the forward on
// it, commits the written tokens (so that full blocks become reusable
// prefixes), and returns the logits of the rows that want them.
//
// KV room is reserved by whoever plans the batch, before decode(): the
// server's scheduler through sched::KvRoom, the tools through reserve().
//
// Thread safety: none; one thread drives a Decoder.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"
#include "common/spin_wait.h"
#include "engine/batch.h"
#include "engine/step_builder.h"
#include "kv/block_manager.h"
#include "model/model.h"

namespace cohort::engine {

struct DecoderOptions {
  std::string device;    // -dev: cpu, cuda<N>, or empty: chosen from -ngl (backend::choose_device)
  int n_gpu_layers = -1;  // -ngl: 0 the CPU; -1 (default) or more: a GPU when one is visible
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

  // Room for positions [0, n_tokens) of `seq`: creates the sequence or grows
  // it. Throws cohort::Error naming -c if the cache has no room (then
  // nothing was changed).
  void reserve(kv::SeqId seq, int n_tokens);

  // Runs `batch` (validated first). Returns logits [batch.n_outputs(),
  // n_vocab], a view valid until the next decode(). Throws cohort::Error,
  // before anything is computed, if the batch is invalid or larger than
  // n_batch, or a sequence is unknown, has no room reserved for a position,
  // or does not continue at its committed length.
  std::span<const float> decode(const Batch& batch);

  // Forgets a sequence and frees its KV blocks (no-op if unknown).
  void free_sequence(kv::SeqId seq);

  kv::BlockManager& blocks() { return blocks_; }
  const model::Model& model() const { return model_; }
  const DecoderOptions& options() const { return options_; }
  int n_vocab() const { return static_cast<int>(model_.hparams().n_vocab); }
  backend::MemoryUse memory() const { return backend_->memory(); }

 private:
  void check(const Batch& batch);

  const model::Model& model_;
  DecoderOptions options_;
  kv::BlockManager blocks_;
  std::unique_ptr<backend::Backend> backend_;
  comm::SingleDevice comm_;
  model::Workspace ws_;
  StepBuilder step_;
  std::vector<SeqSpan> seqs_;  // [sequences of a batch] validation scratch, capacity n_batch
  backend::Tensor logits_;     // [n_outputs, n_vocab] host (pinned on a GPU), grown on demand
};

}  // namespace cohort::engine
