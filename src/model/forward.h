// What a forward step needs besides the weights: the micro-batch, the KV
// cache, the thread pool, the communicator and preallocated activations,
// passed explicitly (no globals).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/ops.h"
#include "comm/communicator.h"
#include "common/thread_pool.h"
#include "kv/block_manager.h"
#include "kv/kv_cache.h"
#include "model/hparams.h"

namespace cohort::model {

// The tokens of one micro-batch. A sequence's tokens appear in position
// order, and the KV cache already has room (BlockManager::append) for every
// position in it. Rows with want_logits set get a row of logits, in order.
struct UBatch {
  std::span<const int32_t> tokens;      // [n_tok]
  std::span<const int32_t> positions;   // [n_tok]
  std::span<const int32_t> seq_ids;     // [n_tok] kv::SeqId of each token
  std::span<const uint8_t> want_logits; // [n_tok] 0 or 1
  int64_t n_tok() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_logits() const;
};

// Activations of one micro-batch of at most n_max_tok tokens, allocated once.
struct Workspace {
  Workspace(const HParams& hp, int64_t n_max_tok, int64_t n_max_ctx, int n_threads);

  int64_t n_max_tok;
  int64_t n_max_ctx;
  std::vector<float> x;       // [n_tok, n_embd] residual stream
  std::vector<float> h;       // [n_tok, n_embd] normalised input of a block
  std::vector<float> q;       // [n_tok, n_head * head_dim]
  std::vector<float> k;       // [n_tok, n_head_kv * head_dim]
  std::vector<float> v;       // [n_tok, n_head_kv * head_dim]
  std::vector<float> attn;    // [n_tok, n_head * head_dim]
  std::vector<float> gate;    // [n_tok, n_ff]
  std::vector<float> up;      // [n_tok, n_ff]
  std::vector<float> out;     // [n_tok, n_embd] block output before the residual add
  std::vector<float> scores;  // [n_threads, n_max_ctx] attention scratch
  std::vector<float> lanes;   // [n_threads, 16, head_dim] attention output lanes
  std::vector<uint8_t> activations;  // [n_tok, largest matrix input] quantized inputs (fast path)
};

struct ForwardContext {
  const HParams& hp;
  ThreadPool& pool;
  kv::KvCache& kv;
  const kv::BlockManager& blocks;
  comm::Communicator& comm;
  Workspace& ws;
  // true: the F32 reference path (every dot product on F32 activations);
  // false: activations quantized to the weight's partner type, as llama.cpp does.
  bool exact = false;

  cpu::Numerics numerics() const { return exact ? cpu::Numerics::exact : cpu::Numerics::llama; }
};

}  // namespace cohort::model
