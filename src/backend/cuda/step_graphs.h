// Decode steps as CUDA graphs: the kernels of a step are launched once as a
// graph instead of one by one, which removes most of the per-kernel launch
// cost that dominates small steps (DESIGN.md, CUDA backend).
//
// A step's kernels depend only on its key: tokens, rows that want logits
// (together its shape) and the width of the packed block tables (a bucket,
// see table_width_bucket). Everything else a step reads lives at fixed
// device addresses whose contents change (the step buffers, the workspace,
// the KV cache), so one graph per key serves every step of that key.
//
// One executable graph is kept per shape. The first step of a shape runs
// eagerly (so that every one-time upload, library initialisation and lazy
// kernel load happens outside a capture), the second is captured,
// instantiated and launched, later ones replay it. A step whose width
// differs from its shape's graph (a context that grew past its bucket)
// launches the same kernels with other grids: it is captured and the
// graph's parameters updated in place (cudaGraphExecUpdate), which costs a
// fraction of an instantiation, so a decoding request sees one slightly
// slower step. The server runs each batch size's first two steps before
// it serves (Decoder::warm_up).
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

  // Executable graphs kept (one per shape).
  size_t n_graphs() const { return graphs_.size(); }
  // Graphs instantiated and updated in place so far.
  int n_instantiated() const { return n_instantiated_; }
  int n_updated() const { return n_updated_; }

 private:
  // A step's shape: its key without the table width.
  struct Shape {
    int32_t n_tok = 0, n_logits = 0;
    bool operator==(const Shape&) const = default;
  };
  struct Hash {
    size_t operator()(const Shape& s) const {
      return static_cast<size_t>(s.n_tok) * 1000003u + static_cast<size_t>(s.n_logits);
    }
  };
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    int32_t table_width = 0;  // of the step it was captured from
  };
  // Keeps the captured graph for key_: updates its shape's graph in place,
  // or instantiates one where the shape has none or the update fails.
  void keep(cudaGraph_t graph);

  std::unordered_set<Shape, Hash> shapes_run_;  // shapes whose first step ran eagerly
  std::unordered_map<Shape, Graph, Hash> graphs_;
  GraphKey key_;
  Mode mode_ = Mode::eager;
  bool enabled_ = true;
  int n_instantiated_ = 0, n_updated_ = 0;
};

}  // namespace cohort::cuda
