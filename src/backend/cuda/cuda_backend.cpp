#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequantize.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kv_move.h"
#include "backend/cuda/matvec.h"
#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/mmd.h"
#include "backend/cuda/mmq.h"
#include "backend/cuda/gpu_communicator.h"
#include "common/error.h"

namespace cohort::cuda {

static_assert(backend::kMaxBestLogits <= kMaxBestK, "best_logits() selects every k a step may ask");
namespace {

using backend::ConstTensorView;
using backend::Device;
using backend::TensorView;
using gguf::TensorType;

// Attention's split partials are bounded by this; a prefill with more
// queries than fit runs in several calls.
constexpr size_t kAttentionWorkspaceBytes = size_t{256} << 20;
// BF16 elements of the GEMM's dequantization scratch: a whole FFN matrix of
// an 8B model, the output matrix in chunks.
constexpr int64_t kGemmScratchElems = int64_t{64} << 20;
static_assert(kQuantizedMaxRows >= kMatvecQ8MaxTokens && kQuantizedMaxRows >= kMmqMaxRoutedTokens);
constexpr size_t kUploadChunk = size_t{256} << 20;
// Each packed weight shard starts on this boundary (the kernels need 16 bytes).
constexpr size_t kShardAlign = 256;

// Whether a matmul of `type` weights with n_in columns by n_tok tokens
// takes the int8 activations (matvec_q8.h, which runs mmq.h's kernel where
// that is the fastest).
bool takes_q8(TensorType type, int64_t n_tok, int64_t n_in) {
  if (!can_matvec_q8(type)) return false;
  return n_tok <= kMatvecQ8MaxTokens || n_tok <= mmq_range(type, n_in).max;
}

// The device cache type of -ctk/-ctv; throws for what a GPU cache does not hold.
KvType kv_type(const kv::KvCacheShape& kv, int device) {
  if (kv.type_k == kv.type_v) {
    switch (kv.type_k) {
      case TensorType::F16: return KvType::kF16;
      case TensorType::BF16: return KvType::kBf16;
      case TensorType::Q8_0: return KvType::kQ8_0;
      default: break;
    }
  }
  fail("cuda{}: the KV cache on a GPU is f16, bf16 or q8_0, the same for K and V (-ctk q8_0 -ctv q8_0, say), "
       "got -ctk {} -ctv {}",
       device, gguf::type_name(kv.type_k), gguf::type_name(kv.type_v));
}

void free_device(void* p) { (void)cudaFree(p); }
void free_pinned(void* p) { (void)cudaFreeHost(p); }

__nv_bfloat16* bf16(TensorView v, const char* op) {
  if (v.device != Device::cuda || v.type != TensorType::BF16 || v.row_bytes != static_cast<size_t>(v.n_cols) * 2) {
    fail("cuda: {}: expected a contiguous BF16 activation on the GPU", op);
  }
  return reinterpret_cast<__nv_bfloat16*>(v.data);
}
const __nv_bfloat16* bf16(ConstTensorView v, const char* op) {
  return bf16(TensorView{const_cast<uint8_t*>(v.data), v.type, v.device, v.n_rows, v.n_cols, v.row_bytes}, op);
}

// Makes `index` the current device of this thread, naming it if it is absent.
int select_device(int index) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  if (index < 0 || index >= count) fail("cuda{}: no such device ({} visible)", index, count);
  CUDA_CHECK(cudaSetDevice(index));
  return index;
}

int64_t attention_rows(const backend::BackendLimits& l) {
  const auto bytes = [&](int64_t n) {
    return decode_attention_workspace_bytes(n, l.n_head, l.head_dim, l.n_max_ctx);
  };
  int64_t n = l.n_max_tok;
  while (n > 1 && bytes(n) > kAttentionWorkspaceBytes) n = (n + 1) / 2;
  return n;
}

}  // namespace

CudaBackend::CudaBackend(const backend::BackendOptions& options, const backend::BackendLimits& limits)
    : device_index_(select_device(options.device_index)),
      limits_(limits),
      step_(limits.n_max_tok, (limits.n_max_ctx + limits.kv.block_size - 1) / limits.kv.block_size),
      graphs_(options.graphs),
      allreduce_(options.allreduce) {
  const kv::KvCacheShape& kv = limits.kv;
  if (kv.block_size != kKvBlockSize) {
    fail("cuda{}: the KV cache needs blocks of {} tokens, got {}", device_index_, kKvBlockSize, kv.block_size);
  }
  kv_type_ = kv_type(kv, device_index_);
  if (limits.head_dim != 64 && limits.head_dim != 128 && limits.head_dim != 256) {
    fail("cuda{}: attention supports heads of 64, 128 or 256 dims, the model has {}", device_index_,
         limits.head_dim);
  }
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  const size_t layer = 2 * kv_array_bytes(kv_type_, kv_layer_elements());
  attention_rows_ = attention_rows(limits);
  const int64_t gemm_scratch = std::min(kGemmScratchElems, limits.max_row * limits.max_out);
  const size_t attention_bytes =
      decode_attention_workspace_bytes(attention_rows_, limits.n_head, limits.head_dim, limits.n_max_ctx);
  const size_t best_scratch = best_logits_scratch_bytes(limits.n_max_tok, limits.max_out, backend::kMaxBestLogits);
  const size_t best_bytes = static_cast<size_t>(limits.n_max_tok * backend::kMaxBestLogits) * sizeof(BestLogit);
  scratch_bytes_ = static_cast<size_t>(limits.n_max_tok * limits.max_out) * sizeof(float) + attention_bytes +
                   static_cast<size_t>(gemm_scratch) * 2 + q8_activation_bytes(kQuantizedMaxRows, limits.max_row) +
                   best_scratch + best_bytes;
  require_room(layer * static_cast<size_t>(kv.n_layer), scratch_bytes_);
  kv_ = DeviceBuffer<uint8_t>(layer * static_cast<size_t>(kv.n_layer));
  CUDA_CHECK(cudaMemsetAsync(kv_.data(), 0, kv_bytes(), stream_));
  logits_ = DeviceBuffer<float>(static_cast<size_t>(limits.n_max_tok * limits.max_out));
  attention_ws_ = DeviceBuffer<uint8_t>(attention_bytes);
  best_scratch_ = DeviceBuffer<uint8_t>(best_scratch);
  best_ = DeviceBuffer<BestLogit>(best_bytes / sizeof(BestLogit));
  gemm_ = std::make_unique<Gemm>(stream_, gemm_scratch);
  quantized_ = DeviceBuffer<uint8_t>(q8_activation_bytes(kQuantizedMaxRows, limits.max_row));
}

CudaBackend::~CudaBackend() {
  if (stream_ != nullptr) {
    (void)cudaStreamSynchronize(stream_);
    gemm_.reset();
    (void)cudaStreamDestroy(stream_);
  }
}

void CudaBackend::require_room(size_t kv_bytes, size_t scratch_bytes) const {
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (kv_bytes + scratch_bytes > free_bytes) {
    fail("cuda{}: the KV cache of -c {} needs {:.2f} GB and the workspace {:.2f} GB, but {:.2f} GB of {:.2f} GB "
         "are free (lower -c or -ub)", device_index_, limits_.n_max_ctx, static_cast<double>(kv_bytes) / 1e9,
         static_cast<double>(scratch_bytes) / 1e9, static_cast<double>(free_bytes) / 1e9,
         static_cast<double>(total_bytes) / 1e9);
  }
}

std::unique_ptr<comm::Communicator> CudaBackend::communicator(comm::CpuGroup& group, int rank) {
  return make_gpu_communicator(allreduce_, group, rank, stream_, limits_.n_max_tok * limits_.max_row);
}

backend::MemoryUse CudaBackend::memory() const {
  backend::MemoryUse m;
  m.device = fmt::format("cuda{}", device_index_);
  m.weights = weights_.size();
  m.kv = kv_bytes();
  m.workspace = allocated_ + scratch_bytes_;
  backend::describe_kv(limits_.kv, m);
  return m;
}

backend::Tensor CudaBackend::alloc_host(int64_t n_rows, int64_t n_cols) {
  const size_t row_bytes = static_cast<size_t>(n_cols) * sizeof(float);
  const size_t n_bytes = static_cast<size_t>(n_rows) * row_bytes;
  void* p = nullptr;
  if (n_bytes > 0) {
    CUDA_CHECK(cudaMallocHost(&p, n_bytes));
    std::memset(p, 0, n_bytes);
  }
  TensorView shape{nullptr, TensorType::F32, Device::cpu, n_rows, n_cols, row_bytes};
  return backend::Tensor(static_cast<uint8_t*>(p), free_pinned, shape);
}

backend::Tensor CudaBackend::alloc(int64_t n_rows, int64_t n_cols) {
  const size_t row_bytes = static_cast<size_t>(n_cols) * 2;
  const size_t n_bytes = static_cast<size_t>(n_rows) * row_bytes;
  void* p = nullptr;
  if (n_bytes > 0) {
    CUDA_CHECK(cudaMalloc(&p, n_bytes));
    CUDA_CHECK(cudaMemset(p, 0, n_bytes));
  }
  allocated_ += n_bytes;
  TensorView shape{nullptr, TensorType::BF16, Device::cuda, n_rows, n_cols, row_bytes};
  return backend::Tensor(static_cast<uint8_t*>(p), free_device, shape);
}

void CudaBackend::require_weight_room(size_t bytes) const {
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > free_bytes) {
    fail("cuda{}: {:.2f} GB of weights do not fit in the {:.2f} GB free on the device", device_index_,
         static_cast<double>(bytes) / 1e9, static_cast<double>(free_bytes) / 1e9);
  }
}

void CudaBackend::report_upload(size_t bytes, std::chrono::steady_clock::time_point start, bool progress) const {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "{}cuda{}: {:.2f} GB of weights on the device in {:.1f} s; KV cache {:.2f} GB ({})\n",
             progress ? "\r" : "", device_index_, static_cast<double>(bytes) / 1e9, s,
             static_cast<double>(kv_bytes()) / 1e9, gguf::type_name(limits_.kv.type_k));
}

void CudaBackend::load_weights(std::span<const uint8_t> host, std::span<const ConstTensorView> shards) {
  if (!shards.empty()) {
    load_shards(shards);
    return;
  }
  require_weight_room(host.size());
  const auto start = std::chrono::steady_clock::now();
  weights_ = DeviceBuffer<uint8_t>(host.size());
  int shown = -1;
  for (size_t done = 0; done < host.size(); done += kUploadChunk) {
    const size_t n = std::min(kUploadChunk, host.size() - done);
    CUDA_CHECK(cudaMemcpy(weights_.data() + done, host.data() + done, n, cudaMemcpyHostToDevice));
    const int percent = static_cast<int>(100 * (done + n) / host.size());
    if (host.size() > 4 * kUploadChunk && percent / 10 != shown) {
      shown = percent / 10;
      fmt::print(stderr, "\rcuda{}: uploading weights {:3d}%", device_index_, percent);
    }
  }
  report_upload(host.size(), start, shown >= 0);
  weights_host_ = host;
}

void CudaBackend::load_shards(std::span<const ConstTensorView> shards) {
  const auto packed_row = [](const ConstTensorView& v) { return gguf::row_bytes(v.type, v.n_cols); };
  const auto round_up = [](size_t n) { return (n + kShardAlign - 1) / kShardAlign * kShardAlign; };
  size_t total = 0;
  for (const ConstTensorView& v : shards) {
    if (!shard_offsets_.contains({v.data, v.n_rows, v.n_cols})) {
      shard_offsets_[{v.data, v.n_rows, v.n_cols}] = total;
      total += round_up(packed_row(v) * static_cast<size_t>(v.n_rows));
    }
  }
  require_weight_room(total);
  const auto start = std::chrono::steady_clock::now();
  weights_ = DeviceBuffer<uint8_t>(total);
  for (const ConstTensorView& v : shards) {
    // A column shard keeps its full rows' stride on the host; each row's
    // part lands packed, so that the kernels see an ordinary matrix.
    CUDA_CHECK(cudaMemcpy2D(weights_.data() + shard_offsets_.at({v.data, v.n_rows, v.n_cols}), packed_row(v), v.data,
                            v.row_bytes, packed_row(v), static_cast<size_t>(v.n_rows), cudaMemcpyHostToDevice));
  }
  report_upload(total, start, false);
}

const void* CudaBackend::on_device(ConstTensorView v) {
  if (v.device == Device::cuda) return v.data;
  if (!shard_offsets_.empty()) {
    const auto it = shard_offsets_.find({v.data, v.n_rows, v.n_cols});
    if (it != shard_offsets_.end()) return weights_.data() + it->second;
  }
  const uint8_t* base = weights_host_.data();
  if (v.data >= base && v.data < base + weights_host_.size()) return weights_.data() + (v.data - base);
  return f32_on_device(v);
}

const float* CudaBackend::f32_on_device(ConstTensorView v) {
  if (v.device == Device::cuda) return reinterpret_cast<const float*>(v.data);
  if (v.type != TensorType::F32) fail("cuda: a host tensor of type {} outside the model's weights", gguf::type_name(v.type));
  auto it = vectors_.find(v.data);
  const auto n = static_cast<size_t>(v.n_rows * v.n_cols);
  if (it == vectors_.end() || it->second.size() != n) {
    DeviceBuffer<float> copy(n);
    copy.upload({reinterpret_cast<const float*>(v.data), n});
    it = vectors_.insert_or_assign(v.data, std::move(copy)).first;
  }
  return it->second.data();
}

size_t CudaBackend::kv_layer_elements() const {
  const kv::KvCacheShape& s = limits_.kv;
  return static_cast<size_t>(s.n_blocks) * s.block_size * s.n_head_kv * s.head_dim;
}

// Copy-on-write of a reused prompt block (StepInput::kv_copies): a block's
// rows are contiguous in each K and V array (and in a Q8_0 array's scales),
// so each layer takes two or four device-to-device copies on the stream.
void CudaBackend::copy_kv_rows(const kv::BlockCopy& c) {
  const kv::KvCacheShape& s = limits_.kv;
  const size_t row = static_cast<size_t>(s.n_head_kv) * static_cast<size_t>(s.head_dim);  // elements
  const size_t src = static_cast<size_t>(c.src) * static_cast<size_t>(s.block_size) * row;
  const size_t dst = static_cast<size_t>(c.dst) * static_cast<size_t>(s.block_size) * row;
  const size_t n = static_cast<size_t>(c.n_rows) * row;
  const size_t elements = kv_layer_elements(), array = kv_array_bytes(kv_type_, elements);
  const bool q8 = kv_type_ == KvType::kQ8_0;
  const size_t element_bytes = q8 ? 1 : 2;
  auto copy = [this](uint8_t* base, size_t to, size_t from, size_t bytes) {
    CUDA_CHECK(cudaMemcpyAsync(base + to, base + from, bytes, cudaMemcpyDeviceToDevice, stream_));
  };
  for (int layer = 0; layer < s.n_layer; ++layer) {
    uint8_t* k = kv_.data() + 2 * array * static_cast<size_t>(layer);
    for (uint8_t* a : {k, k + array}) {
      copy(a, dst * element_bytes, src * element_bytes, n * element_bytes);
      if (q8) copy(a + elements, dst / 32 * sizeof(__half), src / 32 * sizeof(__half), n / 32 * sizeof(__half));
    }
  }
}

// A context shift's moves (StepInput::kv_moves), a launch per round. The
// moves are copied up first; the buffer grows (outside any capture) when a
// step has more of them than any before.
void CudaBackend::move_kv_rows(const backend::StepInput& in) {
  if (in.kv_moves.empty()) return;
  if (moves_.size() < in.kv_moves.size()) moves_ = DeviceBuffer<kv::RowMove>(in.kv_moves.size());
  CUDA_CHECK(cudaMemcpyAsync(moves_.data(), in.kv_moves.data(), in.kv_moves.size_bytes(), cudaMemcpyHostToDevice,
                             stream_));
  const kv::KvCacheShape& s = limits_.kv;
  KvArrays c;
  c.base = kv_.data();
  c.elements = kv_layer_elements();
  c.array_bytes = kv_array_bytes(kv_type_, c.elements);
  c.n_layer = s.n_layer;
  c.n_head_kv = s.n_head_kv;
  c.head_dim = s.head_dim;
  c.type = kv_type_;
  const kernels::RopeArgs rope = kernels::rope_args(rope_config(*in.kv_rope), s.head_dim);
  int32_t begin = 0;
  for (const int32_t end : in.kv_move_rounds) {
    cuda::move_kv_rows(c, rope, moves_.data() + begin, end - begin, stream_);
    begin = end;
  }
}

KvCacheView CudaBackend::kv_layer(int layer) {
  const kv::KvCacheShape& s = limits_.kv;
  const size_t n = kv_layer_elements(), array = kv_array_bytes(kv_type_, n);
  uint8_t* k = kv_.data() + 2 * array * static_cast<size_t>(layer);
  KvCacheView c;
  c.k = k;
  c.v = k + array;
  c.n_blocks = s.n_blocks;
  c.n_head_kv = s.n_head_kv;
  c.head_dim = s.head_dim;
  c.type = kv_type_;
  if (kv_type_ == KvType::kQ8_0) {  // each array's scales follow its quants
    c.k_scale = reinterpret_cast<__half*>(k + n);
    c.v_scale = reinterpret_cast<__half*>(k + array + n);
  }
  return c;
}

void CudaBackend::begin_step(const backend::StepInput& in) {
  CUDA_CHECK(cudaSetDevice(device_index_));  // the thread that drives the backend may have changed
  flush_matvecs();
  flush_ropes();
  flush_add();  // the last add of a step without logits
  invalidate_quantized();
  move_kv_rows(in);  // eagerly, before a capture begins; before the copies (kv::BlockManager)
  for (const kv::BlockCopy& c : in.kv_copies) copy_kv_rows(c);
  step_.upload(in, stream_);
  best_k_ = in.best_k;
  masks_.upload(in.best_k > 0 ? in.token_masks : std::span<const uint32_t>(), stream_);
  graphs_.begin({in.n_tok, in.n_logits(), static_cast<int32_t>(step_.table_width())}, stream_);
}

void CudaBackend::get_rows(ConstTensorView table, std::span<const int32_t> ids, TensorView out) {
  if (!begin_op()) return;
  cuda::get_rows(table.type, on_device(table), table.row_bytes, step_.device(ids),
                 static_cast<int64_t>(ids.size()), table.n_cols, bf16(out, "get_rows"), out.n_cols, stream_);
}

void CudaBackend::rms_norm(ConstTensorView x, ConstTensorView weight, float eps, TensorView y) {
  if (replaying()) return;
  flush_matvecs();
  flush_ropes();
  invalidate_quantized();
  auto* xp = const_cast<__nv_bfloat16*>(bf16(x, "rms_norm"));
  __nv_bfloat16* yp = bf16(y, "rms_norm");
  const __nv_bfloat16* residual = nullptr;
  if (pending_.x == xp && pending_.n_rows == x.n_rows && pending_.n_cols == x.n_cols && yp != xp &&
      yp != pending_.y) {
    residual = pending_.y;
    pending_ = {};
  }
  flush_add();
  void* xq = quantize_output(y);
  cuda::rms_norm(xp, residual, f32_on_device(weight), x.n_rows, x.n_cols, eps, yp, stream_, xq);
  if (xq != nullptr) quantized_as(y);
}

void CudaBackend::matmul(ConstTensorView w, ConstTensorView x, TensorView y) {
  const bool to_host = y.device == Device::cpu;
  if (to_host && (y.type != TensorType::F32 || y.row_bytes != static_cast<size_t>(y.n_cols) * 4)) {
    fail("cuda: matmul into the host needs contiguous F32 rows");
  }
  if (to_host && y.n_rows * y.n_cols > static_cast<int64_t>(logits_.size())) {
    fail("cuda: {} x {} host outputs exceed the backend's logits buffer", y.n_rows, y.n_cols);
  }
  const int best_k = to_host ? best_k_ : 0;
  if (best_k > 0 && (best_k > backend::kMaxBestLogits || 2 * best_k > y.n_cols)) {
    fail("cuda: the best {} logits of rows of {} do not fit the output", best_k, y.n_cols);
  }
  const auto mask_words = static_cast<size_t>(y.n_rows * ((y.n_cols + 31) / 32));
  if (best_k > 0 && masks_.device() != nullptr && masks_.size() != mask_words) {
    fail("cuda: {} token-mask words for {} rows of {} logits", masks_.size(), y.n_rows, y.n_cols);
  }
  if (to_host && best_k == 0 && y.n_rows * y.n_cols * 4 >= chunked_logits_bytes()) {
    return matmul_to_host_in_chunks(w, x, y);
  }
  if (!replaying()) {
    flush_ropes();
    flush_add();
    void* out = to_host ? logits_.data() : static_cast<void*>(bf16(y, "matmul"));
    const MatvecKind kind = matvec_kind(w, x);
    if (kind != MatvecKind::none && !to_host) {
      defer_matvec(w, x, out, kind);
    } else {
      flush_matvecs();
      launch_matmul(w, x, out, to_host ? OutType::f32 : OutType::bf16);
    }
  }
  if (y.data == quantized_of_) invalidate_quantized();
  if (to_host) {
    graphs_.launch(stream_);  // the step's kernels, if it is graphed
    if (best_k > 0) {  // each row's pairs at its start (StepInput::best_k)
      best_logits(logits_.data(), y.n_rows, y.n_cols, best_k, best_scratch_.data(), best_.data(), stream_,
                  masks_.device());
      const size_t width = static_cast<size_t>(best_k) * sizeof(BestLogit);
      CUDA_CHECK(cudaMemcpy2DAsync(y.data, y.row_bytes, best_.data(), width, width, static_cast<size_t>(y.n_rows),
                                   cudaMemcpyDeviceToHost, stream_));
    } else {
      CUDA_CHECK(cudaMemcpyAsync(y.data, logits_.data(), static_cast<size_t>(y.n_rows * y.n_cols) * 4,
                                 cudaMemcpyDeviceToHost, stream_));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
}

CudaBackend::MatvecKind CudaBackend::matvec_kind(ConstTensorView w, ConstTensorView x) const {
  if (takes_mmd(w.type, x.n_rows, w.n_cols)) return MatvecKind::dequantizing;
  if (takes_q8(w.type, x.n_rows, w.n_cols)) return MatvecKind::q8;
  const bool gemm_bf16 = w.type == TensorType::BF16 && x.n_rows >= kGemmMinTokensBf16;
  return x.n_rows <= kMatvecMaxTokens && !gemm_bf16 ? MatvecKind::bf16 : MatvecKind::none;
}

void CudaBackend::launch_matmul(ConstTensorView w, ConstTensorView x, void* out, OutType type) {
  switch (matvec_kind(w, x)) {
    case MatvecKind::q8:
      q8_seen_ = true;
      return matvec_q8(w.type, on_device(w), quantized(x), out, type, x.n_rows, w.n_cols, w.n_rows, stream_);
    case MatvecKind::dequantizing:
      return mmd(w.type, on_device(w), bf16(x, "matmul"), out, type, x.n_rows, w.n_cols, w.n_rows, stream_);
    case MatvecKind::bf16:
      return matvec(w.type, on_device(w), bf16(x, "matmul"), out, type, x.n_rows, w.n_cols, w.n_rows, stream_);
    case MatvecKind::none:
      return gemm_->run(w.type, on_device(w), w.n_rows, w.n_cols, bf16(x, "matmul"), x.n_rows, out, type);
  }
}

void CudaBackend::matmul_to_host_in_chunks(ConstTensorView w, ConstTensorView x, TensorView y) {
  if (!replaying()) {
    flush_add();
    flush_matvecs();
    flush_ropes();
  }
  graphs_.launch(stream_);  // the step's kernels before this one, if it is graphed; the rest runs eagerly
  const int64_t chunk = logits_chunk_rows(w.n_rows);
  const auto* base = static_cast<const uint8_t*>(on_device(w));
  for (int64_t r0 = 0; r0 < w.n_rows; r0 += chunk) {
    ConstTensorView part = w;
    part.n_rows = std::min(chunk, w.n_rows - r0);
    part.data = base + static_cast<size_t>(r0) * w.row_bytes;
    part.device = Device::cuda;  // on_device() passes device views through
    float* out = logits_.data() + r0 * x.n_rows;  // the chunk's [n_tok, rows], compact
    launch_matmul(part, x, out, OutType::f32);
    logits_copy_.after(stream_, out, x.n_rows, part.n_rows, reinterpret_cast<float*>(y.data) + r0, y.n_cols);
  }
  logits_copy_.wait();
}

void CudaBackend::defer_matvec(ConstTensorView w, ConstTensorView x, void* out, MatvecKind kind) {
  const bool q8 = kind == MatvecKind::q8;
  PendingMatvecs& m = matvecs_;
  // The F32-decoding matvec joins only parts smaller than the first (k and v
  // beside q): on an H200 at one token, BF16 gate and up took 69.4 us as one
  // launch against 61.3 as two (the several-part kernel, held to 48
  // registers, spills), while q, k and v took 19.8 against 27.2. The int8
  // matvec gains on both (gate and up: Q4_K 24.1 against 28.2 us).
  const bool joins = m.n > 0 && m.n < kMatvecMaxParts && m.type == w.type && m.kind == kind && m.x == x.data &&
                     m.n_tok == x.n_rows && m.n_in == w.n_cols &&
                     (kind != MatvecKind::bf16 || w.n_rows < m.parts[0].n_out);
  if (!joins) {
    flush_matvecs();  // before quantized() may overwrite the activations a waiting launch reads
    m.type = w.type;
    m.kind = kind;
    m.x = x.data;
    m.n_tok = x.n_rows;
    m.n_in = w.n_cols;
    if (q8) {
      q8_seen_ = true;
      (void)quantized(x);  // made now (or already), read when the launch goes out
    }
  }
  m.parts[m.n++] = MatvecPart{on_device(w), out, w.n_rows};
}

void CudaBackend::flush_matvecs() {
  PendingMatvecs& m = matvecs_;
  if (m.n == 0) return;
  const std::span<const MatvecPart> parts(m.parts.data(), m.n);
  m.n = 0;
  const auto* x = reinterpret_cast<const __nv_bfloat16*>(m.x);
  if (m.kind == MatvecKind::q8) {
    matvec_q8_parts(m.type, parts, quantized_.data(), OutType::bf16, m.n_tok, m.n_in, stream_);
  } else if (m.kind == MatvecKind::dequantizing) {
    mmd_parts(m.type, parts, x, OutType::bf16, m.n_tok, m.n_in, stream_);
  } else {
    matvec_parts(m.type, parts, x, OutType::bf16, m.n_tok, m.n_in, stream_);
  }
}

void CudaBackend::add(TensorView x, ConstTensorView y) {
  if (!begin_op()) return;
  if (y.type == TensorType::F32) {
    add_row(bf16(x, "add"), f32_on_device(y), x.n_rows, x.n_cols, stream_);
  } else {
    pending_ = {bf16(x, "add"), bf16(y, "add"), x.n_rows, x.n_cols};
  }
}

bool CudaBackend::begin_op() {
  if (replaying()) return false;
  flush_matvecs();
  flush_ropes();
  invalidate_quantized();
  flush_add();
  return true;
}

const void* CudaBackend::quantized(ConstTensorView x) {
  if (quantized_of_ != x.data || quantized_rows_ != x.n_rows || quantized_cols_ != x.n_cols) {
    quantize_activations(bf16(x, "matmul"), x.n_rows, x.n_cols, quantized_.data(), stream_);
    quantized_as(x);
  }
  return quantized_.data();
}

void CudaBackend::quantized_as(ConstTensorView x) {
  quantized_of_ = x.data;
  quantized_rows_ = x.n_rows;
  quantized_cols_ = x.n_cols;
}

void* CudaBackend::quantize_output(ConstTensorView y) {
  const bool fits = y.n_rows <= kQuantizedMaxRows && y.n_cols <= limits_.max_row && y.n_cols % 32 == 0;
  return q8_seen_ && fits ? quantized_.data() : nullptr;
}

void CudaBackend::flush_add() {
  if (pending_.x == nullptr) return;
  const PendingAdd a = std::exchange(pending_, {});
  cuda::add(a.x, a.y, a.x, a.n_rows * a.n_cols, stream_);
}

void CudaBackend::silu_mul(ConstTensorView gate, ConstTensorView up, TensorView y) {
  if (!begin_op()) return;
  void* xq = quantize_output(y);
  cuda::silu_mul(bf16(gate, "silu_mul"), bf16(up, "silu_mul"), bf16(y, "silu_mul"), gate.n_rows * gate.n_cols,
                 stream_, xq);
  if (xq != nullptr) quantized_as(y);
}

RopeConfig CudaBackend::rope_config(const backend::RopeParams& p) {
  RopeConfig c;
  c.n_rot = p.n_rot;
  c.freq_base = p.freq_base;
  c.freq_scale = p.freq_scale;
  c.neox = p.neox;
  if (p.freq_factors != nullptr) {
    c.freq_factors = f32_on_device(backend::host_f32({p.freq_factors, static_cast<size_t>(p.n_rot / 2)}, 1, p.n_rot / 2));
  }
  c.ext_factor = p.ext_factor;
  c.attn_factor = p.attn_factor;
  c.beta_fast = p.beta_fast;
  c.beta_slow = p.beta_slow;
  c.n_ctx_orig = p.n_ctx_orig;
  return c;
}

void CudaBackend::rope(const backend::RopeParams& p, TensorView x, int64_t n_heads, const backend::StepInput& in) {
  if (replaying()) return;
  flush_matvecs();  // begin_op(), keeping a waiting rotation
  invalidate_quantized();
  flush_add();
  const RopeConfig c = rope_config(p);
  const PendingRope r{c, bf16(x, "rope"), x.n_cols, n_heads, x.n_cols / n_heads, x.n_rows, step_.device(in.positions)};
  const bool joins = n_ropes_ == 1 && ropes_[0].config == r.config && ropes_[0].positions == r.positions &&
                     ropes_[0].n_tok == r.n_tok;
  if (!joins) flush_ropes();
  ropes_[static_cast<size_t>(n_ropes_++)] = r;
}

namespace {

// COHORT_ROPE_STORE=0 keeps rope, rope and kv_store three launches (for
// comparisons); read once.
bool fuse_rope_store() {
  static const bool on = [] {
    const char* v = std::getenv("COHORT_ROPE_STORE");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

}  // namespace

void CudaBackend::flush_ropes() {
  for (int i = 0; i < n_ropes_; ++i) {
    const PendingRope& r = ropes_[static_cast<size_t>(i)];
    cuda::rope(r.config, r.x, r.token_stride, r.positions, r.n_tok, r.n_heads, r.head_dim, stream_);
  }
  n_ropes_ = 0;
}

void CudaBackend::store_kv(int layer, ConstTensorView k, ConstTensorView v, const backend::StepInput& in) {
  if (replaying()) return;
  flush_matvecs();
  flush_add();
  const KvCacheView cache = kv_layer(layer);
  const PendingRope &qr = ropes_[0], &kr = ropes_[1];
  if (fuse_rope_store() && n_ropes_ == 2 && static_cast<const void*>(kr.x) == k.data && kr.token_stride == k.n_cols &&
      kr.n_heads == cache.n_head_kv && kr.head_dim == cache.head_dim && qr.head_dim == cache.head_dim &&
      kr.n_tok == in.n_tok && v.n_cols == k.n_cols && cache.head_dim % 32 == 0) {
    n_ropes_ = 0;
    rope_store_kv(kr.config, qr.x, qr.token_stride, qr.n_heads, kr.x, bf16(v, "store_kv"), k.n_cols, kr.positions,
                  cache, step_.kv_slots(), in.n_tok, stream_);
    return;
  }
  flush_ropes();
  kv_store(cache, bf16(k, "store_kv"), bf16(v, "store_kv"), k.n_cols, step_.kv_slots(), in.n_tok, stream_);
}

void CudaBackend::attention(int layer, ConstTensorView q, int64_t n_head, TensorView out,
                            const backend::StepInput& in) {
  if (!begin_op()) return;
  const int64_t d = limits_.head_dim, row = n_head * d;
  const int64_t max_ctx = std::min(step_.table_width() * kKvBlockSize, limits_.n_max_ctx);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const __nv_bfloat16* qp = bf16(q, "attention");
  __nv_bfloat16* op = bf16(out, "attention");
  if (in.n_tok > kGraphMaxTokens) {  // a prefill (never graphed: its tiles are not part of the graph key)
    prefill_attention(kv_layer(layer), qp, step_.tiles(), step_.n_tiles(), step_.block_tables(), step_.table_width(),
                      n_head, scale, op, stream_);
    return;
  }
  // Quantized for the output projection in the same kernel where one call
  // takes all the rows (the quantized buffer's layout is that of the whole).
  void* xq = in.n_tok <= attention_rows_ ? quantize_output(out) : nullptr;
  for (int64_t t = 0; t < in.n_tok; t += attention_rows_) {
    const int64_t n = std::min(attention_rows_, in.n_tok - t);
    decode_attention(kv_layer(layer), qp + t * row, step_.block_tables(), step_.table_width(),
                     step_.query_ctx() + t, n, n_head, max_ctx, scale, attention_ws_.data(), op + t * row,
                     stream_, step_.seq_index() + t, xq);
  }
  if (xq != nullptr) quantized_as(out);
}

}  // namespace cohort::cuda
