// Decode steps as CUDA graphs: the kernels of a step are launched once as a
// graph instead of one by one, which removes most of the per-kernel launch
// cost that dominates small steps (DESIGN.md, CUDA backend).
//
// A step's kernels depend only on its shape, the key: tokens, rows that want
// logits and the width of the packed block tables (a bucket, see
// table_width_bucket). Everything else a step reads lives at fixed device
// addresses whose contents change (the step buffers, the workspace, the KV
// cache), so one graph per key serves every step of that shape. The first
// step of a key runs eagerly (so that every one-time upload and library
// initialisation happens outside a capture), the second is captured and
// launched, later ones replay the graph. A key that differs from one
// already run only in its table width (a context that grew past its
// bucket) launches the same kernels with other grids, so its first step is
// captured at once: a decoding request sees one slower step, not two.
//
// Thread safety: one thread drives it, with the backend's stream.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include <cuda_runtime_api.h>

namespace cohort::cuda {

// Steps of at most this many tokens are graphed (decode, small batches).
inline constexpr int32_t kGraphMaxTokens = 64;
// At most this many graphs are kept; steps of further keys run eagerly.
inline constexpr size_t kMaxGraphs = 256;

struct GraphKey {
  int32_t n_tok = 0;
  int32_t n_logits = 0;
  int32_t table_width = 0;
  bool operator==(const GraphKey&) const = default;
};

// The block-table width a step is packed with: the blocks its longest
// context needs rounded up to a power of two, at least 16 (so that steps
// whose contexts grow by a token share a key), at most max_blocks.
// REQUIRES: block_size >= 1, 0 <= max_ctx <= max_blocks * block_size.
int32_t table_width_bucket(int32_t max_ctx, int32_t block_size, int32_t max_blocks);

class StepGraphs {
 public:
  enum class Mode { eager, capture, replay };

  // enabled false: every step runs eagerly.
  explicit StepGraphs(bool enabled = true) : enabled_(enabled) {}
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // How the step of `key` runs; starts the capture on `stream` in capture
  // mode.
  Mode begin(const GraphKey& key, cudaStream_t stream);
  Mode mode() const { return mode_; }
  // Ends the step's kernels: in capture mode ends the capture and keeps the
  // graph; in capture and replay modes launches it. Eager: nothing.
  void launch(cudaStream_t stream);

  size_t n_graphs() const { return graphs_.size(); }

 private:
  struct Hash {
    size_t operator()(const GraphKey& k) const {
      return (static_cast<size_t>(k.n_tok) * 1000003u + static_cast<size_t>(k.n_logits)) * 1000003u +
             static_cast<size_t>(k.table_width);
    }
  };
  std::unordered_map<GraphKey, int, Hash> seen_;  // steps run per key, up to 2
  // Keys run at least once, with their table width set to 0.
  std::unordered_set<GraphKey, Hash> shapes_run_;
  std::unordered_map<GraphKey, cudaGraphExec_t, Hash> graphs_;
  GraphKey key_;
  Mode mode_ = Mode::eager;
  bool enabled_ = true;
};

}  // namespace cohort::cuda
