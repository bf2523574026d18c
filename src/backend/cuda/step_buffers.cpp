#include "backend/cuda/step_buffers.h"

#include <algorithm>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/step_graphs.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

constexpr int64_t kArrays = 10;  // n_max_tok-sized arrays before the block tables (the tiles count 4)

}  // namespace

StepBuffers::StepBuffers(int64_t n_max_tok, int64_t max_blocks)
    : n_max_tok_(n_max_tok),
      max_blocks_(max_blocks),
      device_(static_cast<size_t>(n_max_tok * (kArrays + max_blocks))) {
  static_assert(sizeof(PrefillTile) == 4 * sizeof(int32_t));
  tiles_.reserve(static_cast<size_t>(n_max_tok));
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&staging_), device_.size() * sizeof(int32_t)));
  CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
}

StepBuffers::~StepBuffers() {
  if (copied_ != nullptr) (void)cudaEventDestroy(copied_);
  if (staging_ != nullptr) (void)cudaFreeHost(staging_);
}

void StepBuffers::upload(const backend::StepInput& in, cudaStream_t stream) {
  if (in.n_tok > n_max_tok_ || in.n_seq > n_max_tok_ || in.n_logits() > in.n_tok) {
    fail("cuda: a step of {} tokens of {} sequences exceeds the {} tokens the backend was made for", in.n_tok,
         in.n_seq, n_max_tok_);
  }
  int32_t max_ctx = 0;
  for (int32_t s = 0; s < in.n_seq; ++s) max_ctx = std::max(max_ctx, in.context_lens[static_cast<size_t>(s)]);
  if (max_ctx > max_blocks_ * in.block_size || max_ctx > int64_t{in.max_blocks} * in.block_size) {
    fail("cuda: a context of {} positions exceeds the {} KV blocks of the backend", max_ctx, max_blocks_);
  }
  const int64_t width = table_width_bucket(max_ctx, in.block_size,
                                           static_cast<int32_t>(std::min<int64_t>(max_blocks_, in.max_blocks)));
  CUDA_CHECK(cudaEventSynchronize(copied_));  // the previous upload has read the staging buffer
  const auto n = static_cast<size_t>(in.n_tok);
  auto array = [&](Array a) { return staging_ + static_cast<int64_t>(a) * n_max_tok_; };
  std::copy_n(in.tokens.begin(), n, array(kTokens));
  std::copy_n(in.positions.begin(), n, array(kPositions));
  std::copy_n(in.kv_slots.begin(), n, array(kSlots));
  std::copy_n(in.seq_index.begin(), n, array(kSeqIndex));
  for (size_t t = 0; t < n; ++t) array(kQueryCtx)[t] = in.positions[t] + 1;
  std::copy(in.logit_rows.begin(), in.logit_rows.end(), array(kLogitRows));
  plan_prefill_tiles(in.positions.first(n), in.seq_index.first(n), tiles_);
  std::memcpy(array(kTiles), tiles_.data(), tiles_.size() * sizeof(PrefillTile));
  for (int32_t s = 0; s < in.n_seq; ++s) {
    std::copy_n(in.block_table(s).begin(), width, array(kTables) + s * width);
  }
  const size_t count = static_cast<size_t>(kArrays * n_max_tok_ + in.n_seq * width);
  CUDA_CHECK(cudaMemcpyAsync(device_.data(), staging_, count * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaEventRecord(copied_, stream));
  host_ = in;
  width_ = width;
}

const int32_t* StepBuffers::device(std::span<const int32_t> host) const {
  if (host.data() == host_.tokens.data()) return at(kTokens);
  if (host.data() == host_.logit_rows.data()) return at(kLogitRows);
  if (host.data() == host_.positions.data()) return at(kPositions);
  fail("cuda: an index array that is not part of the step input (begin_step first)");
}

}  // namespace cohort::cuda
