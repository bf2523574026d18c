#include "backend/cuda/step_graphs.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"

namespace cohort::cuda {

int32_t table_width_bucket(int32_t max_ctx, int32_t block_size, int32_t max_blocks) {
  const int32_t need = (max_ctx + block_size - 1) / block_size;
  int32_t w = 16;
  while (w < need) w *= 2;
  return std::min(w, max_blocks);
}

StepGraphs::~StepGraphs() {
  for (auto& [shape, g] : graphs_) (void)cudaGraphExecDestroy(g.exec);
}

StepGraphs::Mode StepGraphs::begin(const GraphKey& key, cudaStream_t stream) {
  key_ = key;
  mode_ = Mode::eager;
  if (!enabled_ || key.n_tok > kGraphMaxTokens || key.n_logits == 0) return mode_;
  const Shape shape{key.n_tok, key.n_logits};
  if (auto it = graphs_.find(shape); it != graphs_.end() && it->second.table_width == key.table_width) {
    return mode_ = Mode::replay;
  }
  const bool first = shapes_run_.insert(shape).second;
  if (first || (!graphs_.contains(shape) && graphs_.size() >= kMaxGraphs)) return mode_;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  return mode_ = Mode::capture;
}

void StepGraphs::keep(cudaGraph_t graph) {
  Graph& g = graphs_[Shape{key_.n_tok, key_.n_logits}];
  if (g.exec != nullptr) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(g.exec, graph, &info) == cudaSuccess) {
      g.table_width = key_.table_width;
      ++n_updated_;
      return;
    }
    (void)cudaGetLastError();  // the update's error is not sticky: instantiate instead
    (void)cudaGraphExecDestroy(g.exec);
    g.exec = nullptr;
  }
  CUDA_CHECK(cudaGraphInstantiate(&g.exec, graph, 0));
  g.table_width = key_.table_width;
  ++n_instantiated_;
}

void StepGraphs::launch(cudaStream_t stream) {
  if (mode_ == Mode::eager) return;
  const Shape shape{key_.n_tok, key_.n_logits};
  if (mode_ == Mode::capture) {
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    try {
      keep(graph);
    } catch (...) {
      (void)cudaGraphDestroy(graph);
      graphs_.erase(shape);
      throw;
    }
    (void)cudaGraphDestroy(graph);
  }
  CUDA_CHECK(cudaGraphLaunch(graphs_.at(shape).exec, stream));
  mode_ = Mode::eager;
}

}  // namespace cohort::cuda
