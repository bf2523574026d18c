// Runs batches through a model: the engine's one step.
//
// A Decoder owns everything a forward needs besides the weights: one or more
// ranks, each with its backend (chosen by backend::make_backend; on the CPU it
// holds the thread pool and the KV storage), its activation workspace and its
// communicator; the block manager of the paged KV cache, the step buffers and
// the logits buffer; all sized at construction (`-c`, `-b`, `-ub`, `-t`).
// decode() turns each micro-batch into a plain-data step input
// (StepBuilder: the host input preparation), runs the forward on it, commits
// the written tokens (so that full blocks become reusable prefixes), and
// returns the logits of the rows that want them. Rows that want their final
// hidden state (Batch::want_embd, for embeddings) get it in hidden(); only
// the CPU backend computes them (computes_hidden()).
//
// submit() and wait() are decode() in two halves: submit() checks the batch
// and hands it to the decoder's runner thread, which prepares each
// micro-batch's input and drives the backends (a GPU's kernels are queued
// from there and waited for there), and returns at once; wait() returns the
// logits. Between the two the caller does host work of its own (the server
// delivers the previous step's tokens), and touches neither the decoder nor
// its block manager. Two logits buffers alternate, so that the logits of one
// step are still readable while the next one computes.
//
// Tensor parallelism (`-sm tensor -dev cpu,cpu,... -ts a,b,...`): one rank
// per -dev entry, each holding its shards of the weights (Model::bind_rank)
// and the KV cache of its KV heads, and running on its own thread with its
// share of -t (RankThreads). Every rank reads the same step input; they
// reduce and gather through their communicators, and rank 0's gathered
// logits are returned. One block manager serves all ranks: a slot means the
// same position in every rank's cache. `-sm none` (the default) is one rank
// on one device, with no reduction at all.
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
#include "common/job_thread.h"
#include "common/spin_wait.h"
#include "comm/cpu_communicator.h"
#include "engine/batch.h"
#include "engine/candidates.h"
#include "engine/rank_threads.h"
#include "engine/step_builder.h"
#include "kv/block_manager.h"
#include "model/model.h"

namespace cohort::engine {

// On a GPU, wait() and the runner thread spin this long before they sleep
// (20 ms: a few decode steps of an 8B model).
inline constexpr int64_t kGpuRunnerSpinNs = 20'000'000;

struct DecoderOptions {
  std::string device;    // -dev: cpu, cuda<N>, or empty: chosen from -ngl (backend::choose_device);
                         //   with -sm tensor a comma-separated list, one entry per rank
  std::string split_mode = "none";  // -sm: none (one device) or tensor (one rank per -dev entry)
  std::vector<float> tensor_split;  // -ts: a positive proportion per rank (empty: even)
  std::string allreduce = "p2p";    // -ar: how GPU ranks reduce: p2p (device memory; host where peer
                                    //   access is missing), nccl (one rank per GPU) or host (pinned host
                                    //   memory); COHORT_ALLREDUCE overrides
  int n_gpu_layers = -1;  // -ngl: 0 the CPU; -1 (default) or more: a GPU when one is visible
  int n_ctx = 4096;      // KV capacity in tokens, over all sequences (-c)
  int n_batch = 2048;    // most tokens per decode() call (-b)
  int n_ubatch = 512;    // most tokens per forward (-ub)
  int n_threads = 0;     // 0: hardware threads (-t)
  int poll = kDefaultPoll;  // how long waiting threads spin before sleeping, 0..100 (--poll)
  int block_size = kv::kDefaultBlockSize;
  bool exact = false;    // CPU reference path: F32 activations in every dot product (--exact; the CPU only)
  std::string cache_type_k = "f16";  // -ctk: the KV cache's K type: f32, f16, bf16 or q8_0
  std::string cache_type_v = "f16";  // -ctv

  // Throws cohort::Error naming the flag for impossible values.
  void validate() const;
  // The -dev entries, one per rank (one empty entry without -dev). Throws
  // cohort::Error for an empty entry in a list.
  std::vector<std::string> devices() const;
  int n_ranks() const { return static_cast<int>(devices().size()); }
  // -ar, or COHORT_ALLREDUCE where it is set.
  std::string transport() const;
  // Where -dev entry `dev` computes (backend::choose_device with -ngl). --exact
  // is the CPU's reference path: without -dev it computes on the CPU even
  // where a GPU is visible, and a GPU named by -dev is an error.
  backend::DeviceChoice device_of(const std::string& dev) const;
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
  // The view is valid until the next decode() or submit().
  std::span<const float> decode(const Batch& batch);

  // decode() without waiting: checks `batch` and throws as decode() does,
  // before anything is computed, then starts it on the runner thread. Until
  // wait() returns, call nothing else of the decoder and leave blocks()
  // alone. REQUIRES: no submitted step is still unwaited.
  void submit(const Batch& batch);
  // Waits for the submitted step and returns its logits, as decode() would
  // have; the view stays valid through the next submit() and its wait(),
  // until the decode() or second submit() after. Rethrows what the step
  // threw. Throws cohort::Error when nothing was submitted.
  std::span<const float> wait();

  // With Batch::best_k > 0: the best_k best logits of each logit row
  // [batch.n_outputs(), best_k] of the step that decode() or wait()
  // returned last (whose logits are then not filled), valid as long as
  // its logits. A GPU selects them (the pairs cross the bus instead of the
  // rows); the CPU, and tensor-parallel ranks, select on the host
  // (select_top_k): the same pairs from the same logits.
  std::span<const TokenLogit> best() const;
  // Row `row`'s part of best().
  std::span<const TokenLogit> best(int row) const;

  // The final hidden states [batch.n_embd_outputs(), n_embd] of the step
  // that decode() or wait() returned last, valid as long as its logits.
  std::span<const float> hidden() const { return last_hidden_; }
  // Whether batches may want hidden states: the CPU backend writes them to
  // the host from its own activations; a GPU backend's norm cannot write a
  // host view, and copying the rows back is not built yet.
  bool computes_hidden() const;

  // On a GPU: runs two decode steps of 1, 2, ..., max_seqs sequences of
  // one token each (sequences 0..max_seqs-1, freed after), so that each
  // batch size's first (eager) and second (captured) steps happen now rather
  // than as gaps in the first requests' tokens; later steps of those sizes
  // replay their graphs. max_seqs is cut to the free KV blocks and -ub.
  // Returns the steps run (0 on the CPU, which has no graphs). REQUIRES: no
  // sequence exists yet, nothing submitted.
  int warm_up(int max_seqs);

  // Forgets a sequence and frees its KV blocks (no-op if unknown).
  void free_sequence(kv::SeqId seq);

  kv::BlockManager& blocks() { return blocks_; }
  const model::Model& model() const { return model_; }
  const DecoderOptions& options() const { return options_; }
  int n_vocab() const { return static_cast<int>(model_.hparams().n_vocab); }
  int n_ranks() const { return static_cast<int>(ranks_.size()); }
  // Summed over the ranks; the device names joined by commas.
  backend::MemoryUse memory() const;

  ~Decoder();

 private:
  struct Rank;

  void check(const Batch& batch);
  // The logits buffer `which` (0 or 1) with room for `n_outputs` rows.
  std::span<float> logits_buffer(int which, int n_outputs);
  // The hidden-state buffer `which` with room for `n_rows` rows.
  std::span<float> hidden_buffer(int which, int n_rows);
  // Every micro-batch of `batch`, its logits into `logits`, its hidden
  // states into `hidden`, and its best logits (best_k > 0) into best_[which].
  void run_batch(const Batch& batch, std::span<float> logits, std::span<float> hidden, int which);
  // What hidden() and best() return after the step that used buffer `which`.
  // How long the runner thread and wait() spin before sleeping.
  int64_t runner_spin_ns() const;
  // Whether rank 0's backend selects the best k logits itself (a single
  // GPU, and rows of at least 2k floats to hold the pairs).
  bool device_selects_best(int k) const;
  // best_[which] [batch.n_outputs(), batch.best_k] from the rows in
  // `logits`: copied from the pairs a device wrote at each row's start, or
  // selected on the host (after setting the logits batch.token_masks rules
  // out to -inf, in place).
  void collect_best(std::span<float> logits, const Batch& batch, int which);
  // Runs the step in `in` on every rank; rank 0's logits land in `out`, its
  // hidden states in `hidden`.
  void run_step(const backend::StepInput& in, backend::TensorView out, backend::TensorView hidden);

  const model::Model& model_;
  DecoderOptions options_;
  kv::BlockManager blocks_;
  std::unique_ptr<model::ShardPlan> plan_;  // -sm tensor only
  std::unique_ptr<comm::CpuGroup> group_;   // -sm tensor only: the ranks' collectives
  std::vector<std::unique_ptr<Rank>> ranks_;
  RankThreads threads_;
  StepBuilder step_;
  std::vector<SeqSpan> seqs_;  // [sequences of a batch] validation scratch, capacity n_batch
  std::vector<kv::BlockCopy> kv_copies_;  // the step's copy-on-write rows (blocks_.take_copies)
  std::vector<kv::RowMove> kv_moves_;     // the step's context-shift moves (blocks_.take_moves)
  std::vector<int32_t> kv_move_rounds_;
  backend::RopeParams rope_;              // the keys' rotary embedding, for the moves
  backend::Tensor logits_[2];  // [n_outputs, n_vocab] host (pinned on a GPU), grown on demand
  std::vector<float> hidden_[2];  // [n_embd_outputs, n_embd] host, beside logits_[i], grown on demand
  std::vector<TokenLogit> best_[2];  // [n_outputs, best_k] beside logits_[i], grown on demand
  int best_k_[2] = {0, 0};           // the best_k of what best_[i] holds
  Candidates select_;                // host selection scratch
  std::vector<uint8_t> no_skip_;     // [n_vocab] zeros: select_top_k changes no logit here
  int next_logits_ = 0;        // the buffer the next submit() writes
  Batch submitted_;            // the batch of the step in flight, in buffer next_logits_ ^ 1
  std::span<float> submitted_logits_;
  std::span<float> submitted_hidden_;
  std::span<const float> last_hidden_;  // what hidden() returns
  int last_which_ = -1;  // the buffer of the step decode() or wait() returned last
  std::unique_ptr<JobThread> runner_;  // the runner thread, started by the first submit(); destroyed first
};

}  // namespace cohort::engine
