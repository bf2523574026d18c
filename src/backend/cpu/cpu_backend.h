// The CPU implementation of backend::Backend: the ops of backend/cpu/ops.h on
// a thread pool, over a paged KV cache in host memory (kv::KvCache, -ctk/-ctv).
//
// Two paths, chosen at construction: the fast path (default) quantizes
// matmul activations to the weight's partner type and takes llama.cpp's F32
// steps in the elementwise ops, so that its logits equal llama.cpp's bit for
// bit; the exact path (--exact) keeps every dot product on F32 activations
// and sums in F64, the reference the other paths are measured against.
//
// Ownership: the backend owns its pool, its scratch and the KV cache, all
// allocated in the constructor. Thread safety: one thread drives it.
#pragma once

#include <vector>

#include "backend/backend.h"
#include "backend/cpu/ops.h"
#include "common/thread_pool.h"
#include "kv/kv_cache.h"

namespace cohort::cpu {

class CpuBackend final : public backend::Backend {
 public:
  // Throws cohort::Error for a bad KV shape or a failed allocation.
  CpuBackend(const backend::BackendOptions& options, const backend::BackendLimits& limits);

  backend::Device device() const override { return backend::Device::cpu; }
  size_t kv_bytes() const override { return kv_.n_bytes(); }
  backend::MemoryUse memory() const override;
  backend::Tensor alloc(int64_t n_rows, int64_t n_cols) override;
  void begin_step(const backend::StepInput& in) override;

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
  Numerics numerics() const { return exact_ ? Numerics::exact : Numerics::llama; }
  void move_kv_rows(const backend::StepInput& in);
  void attend_head(int layer, std::span<const int32_t> table, int n_pos, const float* q,
                   int64_t kv_head, int n_lanes, float* scores, float* lanes, float* out) const;

  bool exact_;
  ThreadPool pool_;
  kv::KvCache kv_;
  int64_t n_max_ctx_;
  int64_t head_dim_;
  std::vector<float> scores_;         // [n_threads, n_max_ctx] attention weights of one head
  std::vector<float> lanes_;          // [n_threads, kWideLanes + 1, head_dim] attention output lanes and a V row
  std::vector<float> moved_k_;        // [n_head_kv * head_dim] a key row a context shift rotates
  size_t allocated_ = 0;              // bytes handed out by alloc()
  std::vector<uint8_t> activations_;  // [n_max_tok, largest matmul input] quantized inputs (fast path)
};

}  // namespace cohort::cpu
