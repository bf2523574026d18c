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
  for (auto& [key, exec] : graphs_) (void)cudaGraphExecDestroy(exec);
}

StepGraphs::Mode StepGraphs::begin(const GraphKey& key, cudaStream_t stream) {
  key_ = key;
  mode_ = Mode::eager;
  if (!enabled_ || key.n_tok > kGraphMaxTokens || key.n_logits == 0) return mode_;
  if (graphs_.contains(key)) return mode_ = Mode::replay;
  int& runs = seen_[key];
  const bool shape_ran = !shapes_run_.insert(GraphKey{key.n_tok, key.n_logits, 0}).second;
  if ((runs++ == 0 && !shape_ran) || graphs_.size() >= kMaxGraphs) return mode_;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  return mode_ = Mode::capture;
}

void StepGraphs::launch(cudaStream_t stream) {
  if (mode_ == Mode::eager) return;
  if (mode_ == Mode::capture) {
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    CUDA_CHECK(made);
    graphs_.emplace(key_, exec);
  }
  CUDA_CHECK(cudaGraphLaunch(graphs_.at(key_), stream));
  mode_ = Mode::eager;
}

}  // namespace cohort::cuda
