// The seam between the forward pass and the device it runs on.
//
// The family forwards (model/) are written once against the small op set of
// Backend: embedding rows, RMS norm, matmul, add, RoPE, KV store, attention,
// SiLU-gated activation. A backend implements every op for its device
// (backend/cpu first) and owns what is device-specific: its threads or
// streams, its scratch memory, the storage of the paged KV cache. It is
// chosen in one place, make_backend(); model/ includes no header below
// backend/ and never asks which device it runs on.
//
// Tensors cross the seam as views (backend/tensor.h); activations are
// [n_tok, n] with one row per token in the backend's activation type (F32 on
// the CPU, BF16 on a GPU), weights are [n_out, n_in] in their file type.
// Buffers that the forward keeps between ops come from alloc(), so they live
// on the backend's device. Weights, norm weights and biases are host views
// (into the model file, or small F32 vectors made at load): a device
// backend reads its own copy of them, made by load_weights() for the file's
// tensors and on first use for the small vectors. Every size a backend needs
// is fixed at construction (BackendLimits): no op allocates.
//
// Ops run in call order on the backend's queue (queue()); on the CPU each
// returns when it is done, on a GPU it is enqueued. An op whose output is a
// host view (the logits) returns when the output is there. Thread safety:
// one thread drives a Backend.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backend/step_input.h"
#include "backend/tensor.h"
#include "comm/communicator.h"
#include "comm/cpu_communicator.h"
#include "common/spin_wait.h"
#include "kv/kv_cache.h"

namespace cohort::backend {

// Rotary position embedding of the first n_rot dims of each head.
struct RopeParams {
  int64_t n_rot = 0;            // rotated dims per head
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;      // 1 / linear scaling factor
  bool neox = false;            // pairs (i, i + n_rot/2) instead of (2i, 2i + 1)
  const float* freq_factors = nullptr;  // [n_rot / 2] host divisors (llama3 rope_freqs), or null
  // YaRN (ext_factor > 0 enables the ramp between interpolation and extrapolation)
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;
};

struct BackendOptions {
  Device device = Device::cpu;
  int device_index = 0;  // which GPU (-dev cuda<N>)
  int n_threads = 0;   // CPU worker threads; 0: hardware threads (-t)
  bool exact = false;  // CPU reference path: F32 activations in every dot product (--exact)
  int poll = kDefaultPoll;  // how long waiting CPU workers spin before sleeping, 0..100 (--poll)
  bool graphs = true;  // GPU: replay decode steps as graphs (COHORT_CUDA_GRAPHS=0 turns them off)
  std::string allreduce = "p2p";  // GPU ranks' transport (-ar): p2p, nccl or host (resolve_transport())
};

// The largest step a backend must hold, from the model's shape and -ub / -c.
struct BackendLimits {
  int64_t n_max_tok = 0;     // tokens per micro-batch (-ub)
  int64_t n_max_ctx = 0;     // positions one sequence may attend over (KV capacity)
  int64_t max_row = 0;       // longest activation row a matmul reads (n_embd, n_ff, q dim)
  int64_t max_out = 0;       // widest matmul output (n_vocab for the logits)
  int64_t n_head = 0;        // query heads
  int64_t head_dim = 0;
  kv::KvCacheShape kv;       // the paged KV cache the backend allocates
};

// The memory a backend holds, as reported at start and in /props.
struct MemoryUse {
  std::string device;    // "cpu", "cuda0", ...
  size_t weights = 0;    // bytes of weights it copied (0 on the CPU: it reads the file's mapping)
  size_t kv = 0;         // the KV cache
  size_t workspace = 0;  // activations and scratch
  int64_t kv_tokens = 0;                   // positions the KV cache holds
  std::string kv_type_k, kv_type_v;  // its element types ("f16", ...)
};

// "on cpu: weights 0.00 GB, KV cache 0.10 GB (4096 tokens, k f16, v f16),
// workspace 0.02 GB": the line a command prints at start.
std::string describe(const MemoryUse& m);
// The fields of MemoryUse that describe a KV cache of `shape`.
void describe_kv(const kv::KvCacheShape& shape, MemoryUse& m);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // Bytes of K and V storage the backend holds.
  virtual size_t kv_bytes() const = 0;
  virtual MemoryUse memory() const = 0;

  // A zero-filled activation buffer [n_rows, n_cols] on the backend's device.
  virtual Tensor alloc(int64_t n_rows, int64_t n_cols) = 0;
  // A zero-filled F32 host buffer [n_rows, n_cols] for outputs the device
  // writes to the host (the logits): pinned on a GPU, so that the copy runs
  // at the bus's speed rather than through the driver's staging buffer.
  virtual Tensor alloc_host(int64_t n_rows, int64_t n_cols);
  // The queue the ops run on, for the communicator's calls between them.
  virtual comm::Queue queue() { return comm::kHostQueue; }

  // The host memory the weight views point into (the model file's tensor
  // data), before the first step. A device backend copies it to its device
  // once; the CPU reads it in place. `shards`: a tensor-parallel rank's
  // weight matrices (views into `host`, column shards strided); a device
  // backend then copies only these, each packed into whole rows of its own.
  virtual void load_weights(std::span<const uint8_t> /*host*/, std::span<const ConstTensorView> /*shards*/) {}
  // The communicator of rank `rank` of a tensor-parallel group whose ranks
  // all run on this kind of backend, for buffers this backend allocated. The
  // CPU's is comm::CpuCommunicator; a device backend's moves its buffers to
  // the host and back around that one (same arithmetic, same bits).
  // REQUIRES: group outlives the communicator.
  virtual std::unique_ptr<comm::Communicator> communicator(comm::CpuGroup& group, int rank);
  // Whether a step input's best_k > 0 makes the logits output hold each
  // row's best pairs (StepInput::best_k) instead of its logits. Where not,
  // the caller selects them from the logits.
  virtual bool selects_best() const { return false; }
  // Called with each step input before the forward reads it: a device
  // backend copies it to its device here. Performs in.kv_copies first.
  virtual void begin_step(const StepInput& in) = 0;

  // out [ids.size(), n_cols] = rows `ids` of `table` (dequantized to F32).
  virtual void get_rows(ConstTensorView table, std::span<const int32_t> ids, TensorView out) = 0;
  // y [n, d] = x / rms(x) * weight [1, d], per row. y may alias x.
  virtual void rms_norm(ConstTensorView x, ConstTensorView weight, float eps, TensorView y) = 0;
  // y [n, w.n_rows] = x [n, w.n_cols] · wᵀ. y may be an F32 host view.
  virtual void matmul(ConstTensorView w, ConstTensorView x, TensorView y) = 0;
  // x [n, d] += y, where y is [n, d] or one F32 row [1, d] (a bias) added to
  // every row.
  virtual void add(TensorView x, ConstTensorView y) = 0;
  // y [n, d] = silu(gate) * up. y may alias gate.
  virtual void silu_mul(ConstTensorView gate, ConstTensorView up, TensorView y) = 0;
  // RoPE in place on x [n_tok, n_heads * head_dim] at in.positions.
  virtual void rope(const RopeParams& p, TensorView x, int64_t n_heads, const StepInput& in) = 0;
  // Writes K and V rows [n_tok, n_head_kv * head_dim] of `layer` to the
  // cache rows in.kv_slots.
  virtual void store_kv(int layer, ConstTensorView k, ConstTensorView v, const StepInput& in) = 0;
  // out [n_tok, n_head * head_dim] = causal attention of q (same shape) over
  // each token's sequence, positions 0 .. its own, read from the cache
  // through in.block_tables (grouped-query: n_head / n_head_kv query heads
  // share a KV head).
  virtual void attention(int layer, ConstTensorView q, int64_t n_head, TensorView out,
                         const StepInput& in) = 0;
};

struct DeviceChoice {
  Device device = Device::cpu;
  int index = 0;
};

// Where the forward runs, from llama.cpp's flags: -dev `cpu` or `cuda<N>`
// (`cuda` is cuda0); without -dev the first GPU when one is visible, else
// the CPU. -ngl 0 forces the CPU; any other -ngl puts every layer on the
// GPU (a model is not split between the CPU and a GPU). Throws cohort::Error
// for an unknown device name.
DeviceChoice choose_device(const std::string& dev, int n_gpu_layers);

// The first GPU that `devices` lists twice (its index), or -1 if none is:
// NCCL runs one rank per GPU.
int repeated_gpu(const std::vector<DeviceChoice>& devices);

// The transport GPU ranks on `devices` reduce with, for -ar `requested`:
// `p2p` becomes `host`, with a warning on stderr, where two of the GPUs
// cannot reach each other's memory or COHORT_DISABLE_P2P=1 is set; anything
// else, and any transport of CPU ranks (they have one), is returned as it is
// (the decoder's options check the names).
std::string resolve_transport(const std::string& requested, const std::vector<DeviceChoice>& devices);

// The one place a backend is chosen. Throws cohort::Error naming the device
// if it is not built in, and for impossible limits.
std::unique_ptr<Backend> make_backend(const BackendOptions& options, const BackendLimits& limits);

}  // namespace cohort::backend
