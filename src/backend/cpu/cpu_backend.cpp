#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "quant/quant.h"

namespace cohort::cpu {
namespace {

using backend::ConstTensorView;
using backend::TensorView;

constexpr size_t kAlignment = 64;  // a cache line; enough for AVX-512 loads

int resolve_threads(int n) {
  if (n > 0) return n;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void free_host(void* p) { std::free(p); }

WeightView weight_of(ConstTensorView w) {
  return WeightView{w.type, w.data, w.n_cols, w.n_rows, w.row_bytes};
}

}  // namespace

CpuBackend::CpuBackend(const backend::BackendOptions& options, const backend::BackendLimits& limits)
    : exact_(options.exact),
      pool_(resolve_threads(options.n_threads), options.poll),
      kv_(limits.kv),
      n_max_ctx_(limits.n_max_ctx),
      head_dim_(limits.head_dim) {
  const auto n_threads = static_cast<size_t>(pool_.n_threads());
  scores_.resize(n_threads * static_cast<size_t>(limits.n_max_ctx));
  lanes_.resize(n_threads * static_cast<size_t>((kWideLanes + 1) * limits.head_dim));
  // F16 activations (2 bytes per input) are the widest any weight type pairs
  // with, so a scratch sized for them fits every matrix of the model.
  const WeightView widest{gguf::TensorType::F16, nullptr, limits.max_row, 1, 0};
  activations_.resize(matmul_fast_scratch_bytes(widest, limits.n_max_tok));
  moved_k_.resize(static_cast<size_t>(limits.kv.row_elements()));
}

backend::MemoryUse CpuBackend::memory() const {
  const size_t scratch = (scores_.size() + lanes_.size()) * sizeof(float) + activations_.size();
  backend::MemoryUse m;
  m.device = "cpu";
  m.kv = kv_.n_bytes();
  m.workspace = allocated_ + scratch;
  backend::describe_kv(kv_.shape(), m);
  return m;
}

backend::Tensor CpuBackend::alloc(int64_t n_rows, int64_t n_cols) {
  const size_t row_bytes = static_cast<size_t>(n_cols) * sizeof(float);
  const size_t n_bytes = (static_cast<size_t>(n_rows) * row_bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = n_bytes == 0 ? nullptr : std::aligned_alloc(kAlignment, n_bytes);
  if (n_bytes != 0 && p == nullptr) fail("cannot allocate {} MiB of activations", n_bytes >> 20);
  if (p != nullptr) std::memset(p, 0, n_bytes);
  allocated_ += n_bytes;
  TensorView shape{nullptr, gguf::TensorType::F32, backend::Device::cpu, n_rows, n_cols, row_bytes};
  return backend::Tensor(static_cast<uint8_t*>(p), free_host, shape);
}

void CpuBackend::get_rows(ConstTensorView table, std::span<const int32_t> ids, TensorView out) {
  const WeightView w = weight_of(table);
  pool_.parallel_for(static_cast<int64_t>(ids.size()), [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) get_row(w, ids[static_cast<size_t>(t)], out.f32() + t * out.n_cols);
  });
}

void CpuBackend::rms_norm(ConstTensorView x, ConstTensorView weight, float eps, TensorView y) {
  cpu::rms_norm(pool_, x.f32(), weight.f32(), x.n_rows, x.n_cols, eps, y.f32(), numerics());
}

void CpuBackend::matmul(ConstTensorView w, ConstTensorView x, TensorView y) {
  if (exact_) {
    cpu::matmul(pool_, weight_of(w), x.f32(), x.n_rows, y.f32());
  } else {
    matmul_fast(pool_, weight_of(w), x.f32(), x.n_rows, y.f32(), activations_);
  }
}

void CpuBackend::add(TensorView x, ConstTensorView y) {
  if (y.n_rows == 1 && x.n_rows != 1) {
    add_bias(x.f32(), y.f32(), x.n_rows, x.n_cols);
  } else {
    add_in_place(x.f32(), y.f32(), x.n_rows * x.n_cols);
  }
}

void CpuBackend::silu_mul(ConstTensorView gate, ConstTensorView up, TensorView y) {
  cpu::silu_mul(pool_, gate.f32(), up.f32(), gate.n_rows, gate.n_cols, y.f32(), numerics());
}

void CpuBackend::rope(const backend::RopeParams& p, TensorView x, int64_t n_heads,
                      const backend::StepInput& in) {
  cpu::rope(p, numerics(), x.f32(), in.positions.data(), in.n_tok, n_heads, x.n_cols / n_heads);
}

void CpuBackend::begin_step(const backend::StepInput& in) {
  move_kv_rows(in);
  for (const kv::BlockCopy& copy : in.kv_copies) kv_.copy_rows(copy);
}

// A context shift's moves (kv::RowMove): a key is read in the cache's type,
// rotated by the move's delta with the forward's rope op (a rotation by
// position delta), and stored again; values are copied. In move order, which
// keeps the rounds' order.
void CpuBackend::move_kv_rows(const backend::StepInput& in) {
  if (in.kv_moves.empty()) return;
  const kv::KvCacheShape& shape = kv_.shape();
  const int64_t n = shape.row_elements();
  const int bs = shape.block_size;
  for (int layer = 0; layer < shape.n_layer; ++layer) {
    for (const kv::RowMove& mv : in.kv_moves) {
      const kv::Slot src = kv::Slot::at(mv.src, bs), dst = kv::Slot::at(mv.dst, bs);
      if (mv.delta == 0) {
        std::memcpy(kv_.k(layer, dst), kv_.k(layer, src), shape.k_row_bytes());
      } else {
        quant::dequantize(shape.type_k, kv_.k(layer, src), moved_k_.data(), n);
        cpu::rope(*in.kv_rope, numerics(), moved_k_.data(), &mv.delta, 1, shape.n_head_kv, shape.head_dim);
        quant::quantize(shape.type_k, moved_k_.data(), kv_.k(layer, dst), n);
      }
      std::memcpy(kv_.v(layer, dst), kv_.v(layer, src), shape.v_row_bytes());
    }
  }
}

void CpuBackend::store_kv(int layer, ConstTensorView k, ConstTensorView v,
                          const backend::StepInput& in) {
  const int64_t row = k.n_cols;
  const kv::KvCacheShape& shape = kv_.shape();
  for (int64_t t = 0; t < in.n_tok; ++t) {
    const int32_t slot = in.kv_slots[static_cast<size_t>(t)];
    const kv::Slot s = kv::Slot::at(slot, in.block_size);
    quant::quantize(shape.type_k, k.f32() + t * row, kv_.k(layer, s), row);
    quant::quantize(shape.type_v, v.f32() + t * row, kv_.v(layer, s), row);
  }
}

}  // namespace cohort::cpu
