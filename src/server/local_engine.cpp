#include "server/local_engine.h"

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace cohort::server {
namespace {

class LocalEngine final : public GenerationService {
 public:
  LocalEngine(const std::string& path, const EngineOptions& options)
      : model_(model::Model::load(path)),
        tokenizer_(tokenizer::Tokenizer::from_gguf(model_->file().metadata())),
        loop_(*model_, tokenizer_, options) {}

  std::shared_ptr<RequestHandle> submit(GenerationRequest request) override {
    return loop_.submit(std::move(request));
  }
  ServiceStats stats() const override { return loop_.stats(); }
  int n_ctx() const override { return loop_.n_ctx(); }
  backend::MemoryUse memory() const override { return loop_.memory(); }
  PhaseFeed* phase_feed() override { return loop_.phase_feed(); }

 private:
  std::unique_ptr<model::Model> model_;
  tokenizer::Tokenizer tokenizer_;
  EngineLoop loop_;  // last: stopped and joined before the model goes
};

}  // namespace

std::unique_ptr<GenerationService> start_engine(const std::string& model_path,
                                                const EngineOptions& options) {
  return std::make_unique<LocalEngine>(model_path, options);
}

}  // namespace cohort::server
