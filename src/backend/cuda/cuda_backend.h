// The CUDA implementation of backend::Backend: the forward's ops as kernels
// on one GPU and one stream, activations BF16 with F32 math (DESIGN.md,
// Numerics), the paged KV cache in F16 or BF16 (-ctk/-ctv, the same for
// both) on the device.
//
// Weights: load_weights() copies the model file's tensor data to the device
// once, in its file type; a weight view (a host address inside that data)
// is read at the same offset of the copy. A tensor-parallel rank copies only
// its shards instead, each packed into whole rows of its own, found by the
// view's address and shape. The small F32 vectors of the
// model (norm weights, biases, RoPE factors) are copied on first use and
// kept, keyed by their host address (the model outlives its backends).
//
// A step: begin_step() packs the step input into pinned host memory and
// copies it to the device in one transfer; the ops read the device copy.
// Matmuls of up to kMatvecMaxTokens tokens run the matvec kernels (one pass
// over the weights in their file type), larger ones cuBLAS (gemm.h). The
// logits, the one output on the host, are copied back when their matmul is
// done; a step that asks for each row's best logits instead
// (StepInput::best_k) selects them after the matmul (best_logits.h) and
// copies only those pairs. Steps of up to kGraphMaxTokens tokens are replayed as CUDA graphs
// (step_graphs.h): while a graph replays, the ops enqueue nothing and the
// logits matmul launches the graph.
//
// The int8 activations of the quantized matvec are made once per input: the
// q, k and v projections (and gate and up) share one quantization of their
// input, until an op writes activations again. Once a matmul has taken the
// quantized matvec, the RMS norm and SiLU·mul of decode-sized steps write
// their output quantized too, in the same kernel, so that the matvecs that
// read it find it made (one launch and one pass over it fewer; the bytes
// are those of the separate quantizer).
//
// Fusion: a residual add (x += y) waits until the next op; if that op is the
// RMS norm of x, the two run as one kernel (the norm's fused residual), as
// they do at every block boundary of the forward. Any other op launches the
// add first. Decode-sized matmuls wait too: consecutive ones that read the
// same x (q, k and v; gate and up for the int8 matvec, see defer_matvec) go
// out as one launch (matvec_parts.h) when the next op, or a caller of
// queue(), comes.
//
// Ownership: everything is allocated in the constructor and in
// load_weights(); no op allocates. Thread safety: one thread drives it.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/cuda/attention.h"
#include "backend/cuda/best_logits.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/logits_copy.h"
#include "backend/cuda/matvec_parts.h"
#include "backend/cuda/step_buffers.h"
#include "backend/cuda/step_graphs.h"
#include "backend/cuda/token_masks.h"

namespace cohort::cuda {

// Micro-batches of at most this many tokens take the matvec kernels, except
// BF16 weights from kGemmMinTokensBf16 tokens on, which cuBLAS reads in
// place at a higher rate than the 8-token matvec (24-38% of the copy rate).
inline constexpr int64_t kMatvecMaxTokens = 8;
inline constexpr int64_t kGemmMinTokensBf16 = 4;
// The quantized types take the int8-activation matvec (matvec_q8.h) up to
// this many tokens (8 a pass over the weights): past it, dequantizing to
// BF16 once for cuBLAS moves fewer bytes. Where the type has the tensor-core
// matmul (mmq.h), it takes them as far as that is faster (mmq_range); where
// the BF16 matmul of dequantized weights (mmd.h) is faster still, that
// (takes_mmd: Q4_K from 9 to 64 tokens).
inline constexpr int64_t kMatvecQ8MaxTokens = 16;
// Rows of the int8 activations the backend keeps: the most either takes.
inline constexpr int64_t kQuantizedMaxRows = 64;

class CudaBackend final : public backend::Backend {
 public:
  // Throws cohort::Error naming the device for a missing GPU, an
  // unsupported shape or too little device memory.
  CudaBackend(const backend::BackendOptions& options, const backend::BackendLimits& limits);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  backend::Device device() const override { return backend::Device::cuda; }
  size_t kv_bytes() const override { return kv_.size(); }
  backend::MemoryUse memory() const override;
  backend::Tensor alloc(int64_t n_rows, int64_t n_cols) override;
  backend::Tensor alloc_host(int64_t n_rows, int64_t n_cols) override;
  // Launches the matvecs that wait (the caller enqueues behind the ops).
  comm::Queue queue() override {
    flush_matvecs();
    flush_ropes();
    return {stream_};
  }
  void load_weights(std::span<const uint8_t> host, std::span<const backend::ConstTensorView> shards) override;
  // On this backend's stream: a P2pCommunicator (-ar p2p in device memory,
  // -ar host in pinned host memory) or an NcclCommunicator (-ar nccl).
  std::unique_ptr<comm::Communicator> communicator(comm::CpuGroup& group, int rank) override;
  void begin_step(const backend::StepInput& in) override;
  bool selects_best() const override { return true; }

  void get_rows(backend::ConstTensorView table, std::span<const int32_t> ids,
                backend::TensorView out) override;
  void rms_norm(backend::ConstTensorView x, backend::ConstTensorView weight, float eps,
                backend::TensorView y) override;
  void matmul(backend::ConstTensorView w, backend::ConstTensorView x, backend::TensorView y) override;
  void add(backend::TensorView x, backend::ConstTensorView y) override;
  void silu_mul(backend::ConstTensorView gate, backend::ConstTensorView up,
                backend::TensorView y) override;
  void rope(const backend::RopeParams& p, backend::TensorView x, int64_t n_heads,
            const backend::StepInput& in) override;
  void store_kv(int layer, backend::ConstTensorView k, backend::ConstTensorView v,
                const backend::StepInput& in) override;
  void attention(int layer, backend::ConstTensorView q, int64_t n_head, backend::TensorView out,
                 const backend::StepInput& in) override;

 private:
  // The device address of a weight or vector view (see the file comment).
  const void* on_device(backend::ConstTensorView v);
  const float* f32_on_device(backend::ConstTensorView v);
  size_t kv_layer_elements() const;  // of K (or V) in one layer
  void copy_kv_rows(const kv::BlockCopy& c);
  void move_kv_rows(const backend::StepInput& in);
  RopeConfig rope_config(const backend::RopeParams& p);
  KvCacheView kv_layer(int layer);
  void load_shards(std::span<const backend::ConstTensorView> shards);
  void require_weight_room(size_t bytes) const;
  void report_upload(size_t bytes, std::chrono::steady_clock::time_point start, bool progress) const;
  // Fails, naming the sizes, if the KV cache and workspace do not fit.
  void require_room(size_t kv_bytes, size_t scratch_bytes) const;
  // The step replays a graph: the op has nothing to enqueue.
  bool replaying() const { return graphs_.mode() == StepGraphs::Mode::replay; }
  // Launches a waiting residual add. Every op but rms_norm calls it first.
  void flush_add();
  // A decode-sized matmul into the device: joins the waiting launch if it
  // reads the same x with the same type, n_in and path (room for
  // kMatvecMaxParts), else launches that one and starts a new one.
  // The kernels of a deferred launch: matvec_q8 (or mmq) on quantized_ (the
  // quantization of x), mmd on x, or the matvec on x.
  // (none: cuBLAS, with the weights dequantized first where they are not BF16.)
  enum class MatvecKind { q8, dequantizing, bf16, none };
  void defer_matvec(backend::ConstTensorView w, backend::ConstTensorView x, void* out, MatvecKind kind);
  // The kernel y = x · wᵀ takes by type and tokens (matvec_q8/mmq, mmd, the
  // matvec, or none of them: cuBLAS).
  MatvecKind matvec_kind(backend::ConstTensorView w, backend::ConstTensorView x) const;
  // Launches y = x · wᵀ into out now (type out_type).
  void launch_matmul(backend::ConstTensorView w, backend::ConstTensorView x, void* out, OutType out_type);
  // A host output of kChunkedLogitsBytes or more: the graph (if any) ends
  // before it, and its row chunks are computed and copied out in turn
  // (logits_copy.h).
  void matmul_to_host_in_chunks(backend::ConstTensorView w, backend::ConstTensorView x, backend::TensorView y);
  // Launches the waiting matvecs, if any. Every op calls it first, and so
  // does queue().
  void flush_matvecs();
  // Launches the waiting rotations, if any, as they are (rope).
  void flush_ropes();
  // The start of an op that writes activations: false while a graph
  // replays (nothing to enqueue); else launches a waiting add and forgets
  // the quantized activations, which the op may overwrite.
  bool begin_op();
  // x quantized for matvec_q8, made once until invalidate_quantized().
  const void* quantized(backend::ConstTensorView x);
  void invalidate_quantized() { quantized_of_ = nullptr; }
  // Records that quantized_ now holds x's quantization.
  void quantized_as(backend::ConstTensorView x);
  // Where an op writing y should also write it quantized (quantized_), or
  // null: before any quantized matvec ran, or for a y too large or not of
  // whole 32-blocks.
  void* quantize_output(backend::ConstTensorView y);

  int device_index_;
  backend::BackendLimits limits_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer<uint8_t> weights_;       // the file's tensor data, or a rank's packed shards
  std::span<const uint8_t> weights_host_;  // the file's tensor data on the host (whole copies only)
  struct ShardKey {
    const void* data;
    int64_t n_rows, n_cols;
    bool operator==(const ShardKey&) const = default;
  };
  struct ShardHash {
    size_t operator()(const ShardKey& k) const {
      return std::hash<const void*>()(k.data) ^ (static_cast<size_t>(k.n_rows) * 1000003u + static_cast<size_t>(k.n_cols));
    }
  };
  std::unordered_map<ShardKey, size_t, ShardHash> shard_offsets_;  // a rank's shards in weights_
  std::unordered_map<const void*, DeviceBuffer<float>> vectors_;
  DeviceBuffer<uint8_t> kv_;  // [n_layer][K, V]: kv_array_bytes(type, n_blocks * block * n_head_kv * head_dim) each
  KvType kv_type_ = KvType::kF16;
  DeviceBuffer<kv::RowMove> moves_;    // a step's context-shift moves (grown when a step has more)
  StepBuffers step_;
  DeviceBuffer<float> logits_;          // [n_max_tok, max_out] before the copy to the host
  LogitsCopy logits_copy_;
  DeviceBuffer<uint8_t> best_scratch_;  // best_logits() rounds of n_max_tok rows
  TokenMasks masks_;                    // the step's token masks (StepInput::token_masks)
  DeviceBuffer<BestLogit> best_;        // [n_max_tok, kMaxBestLogits] the pairs before the copy
  int32_t best_k_ = 0;                  // the step's StepInput::best_k
  DeviceBuffer<uint8_t> attention_ws_;  // split partials of attention_rows_ queries
  int64_t attention_rows_ = 0;
  std::unique_ptr<Gemm> gemm_;
  DeviceBuffer<uint8_t> quantized_;  // int8 activations of kQuantizedMaxRows rows
  const void* quantized_of_ = nullptr;  // the activation they were made from, or null
  int64_t quantized_rows_ = 0, quantized_cols_ = 0;
  bool q8_seen_ = false;  // a matmul took matvec_q8: norms and SiLU·mul quantize their outputs
  size_t scratch_bytes_ = 0;  // logits, attention and GEMM scratch, step buffers
  size_t allocated_ = 0;      // bytes handed out by alloc()
  StepGraphs graphs_;
  std::string allreduce_;  // the transport communicator() makes: p2p or host
  // Matvecs not launched yet: parts[0..n) of one launch.
  struct PendingMatvecs {
    gguf::TensorType type{};
    MatvecKind kind = MatvecKind::bf16;
    const void* x = nullptr;  // the BF16 input
    int64_t n_tok = 0, n_in = 0;
    std::array<MatvecPart, kMatvecMaxParts> parts{};
    size_t n = 0;
  } matvecs_;
  // Rotations not launched yet: q's, then k's. store_kv of the second's k
  // launches both with the store (rope_store_kv: two dependent launches a
  // layer fewer); any other op launches them as they are.
  struct PendingRope {
    RopeConfig config;
    __nv_bfloat16* x = nullptr;
    int64_t token_stride = 0, n_heads = 0, head_dim = 0, n_tok = 0;
    const int32_t* positions = nullptr;
  };
  std::array<PendingRope, 2> ropes_{};
  int n_ropes_ = 0;
  // A residual add not launched yet: x += y (both BF16 [n_rows, n_cols]).
  struct PendingAdd {
    __nv_bfloat16* x = nullptr;
    const __nv_bfloat16* y = nullptr;
    int64_t n_rows = 0, n_cols = 0;
  } pending_;
};

}  // namespace cohort::cuda
