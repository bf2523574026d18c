// The step input on the device: begin_step() of the CUDA backend packs the
// arrays of a backend::StepInput into pinned host memory and copies them to
// one device buffer in a single transfer. The device layout has a fixed
// capacity (n_max_tok tokens, block tables as wide as the context), so the
// addresses the kernels read hold for the buffers' life.
//
// Besides the step input's own arrays it holds, per token, the context its
// query attends over (position + 1), the form decode_attention takes. The
// block tables are packed table_width() entries a row; the prefill tiles
// (plan_prefill_tiles) of the step are planned here too.
//
// Thread safety: one thread drives it.
#pragma once

#include <cstdint>
#include <span>

#include <cuda_runtime_api.h>

#include <vector>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/prefill_attention.h"
#include "backend/step_input.h"

namespace cohort::cuda {

class StepBuffers {
 public:
  StepBuffers(int64_t n_max_tok, int64_t max_blocks);
  ~StepBuffers();
  StepBuffers(const StepBuffers&) = delete;
  StepBuffers& operator=(const StepBuffers&) = delete;

  // Copies `in` to the device on `stream`. Throws cohort::Error if it
  // exceeds the capacity.
  void upload(const backend::StepInput& in, cudaStream_t stream);

  // The device copy of one of the step input's arrays, found by its host
  // address. Throws cohort::Error for a span that is not one of them.
  const int32_t* device(std::span<const int32_t> host) const;

  const int32_t* positions() const { return at(kPositions); }
  const int32_t* kv_slots() const { return at(kSlots); }
  const int32_t* seq_index() const { return at(kSeqIndex); }
  const int32_t* query_ctx() const { return at(kQueryCtx); }
  const int32_t* block_tables() const { return at(kTables); }
  const PrefillTile* tiles() const { return reinterpret_cast<const PrefillTile*>(at(kTiles)); }
  int64_t n_tiles() const { return static_cast<int64_t>(tiles_.size()); }
  // Row length of block_tables() this step: a bucket (table_width_bucket)
  // of the longest context, so that steps of one shape share a CUDA graph.
  int64_t table_width() const { return width_; }

 private:
  // Per-token arrays of n_max_tok entries; the tiles take 4 (one PrefillTile
  // per token at most), then the block tables.
  enum Array { kTokens, kPositions, kSlots, kSeqIndex, kQueryCtx, kLogitRows, kTiles, kTables = kTiles + 4 };
  const int32_t* at(Array a) const { return device_.data() + static_cast<int64_t>(a) * n_max_tok_; }

  int64_t n_max_tok_, max_blocks_;
  int32_t* staging_ = nullptr;  // pinned, the same layout as device_
  DeviceBuffer<int32_t> device_;
  cudaEvent_t copied_ = nullptr;  // the last upload has left the staging buffer
  const backend::StepInput* in_ = nullptr;
  backend::StepInput host_;       // the spans of the last upload
  int64_t width_ = 0;
  std::vector<PrefillTile> tiles_;  // capacity n_max_tok
};

}  // namespace cohort::cuda
