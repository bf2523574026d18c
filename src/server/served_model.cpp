#include "server/served_model.h"

namespace cohort::server {

PromptContext ServedModel::prompt_context() const {
  PromptContext ctx;
  ctx.tokenizer = &tokenizer;
  ctx.chat_template = chat_template;
  ctx.n_ctx = service ? service->n_ctx() : 0;
  ctx.defaults = defaults;
  ctx.grammars = grammars.get();
  ctx.default_max_tokens = default_max_tokens;
  ctx.max_choices = n_slots;
  ctx.template_defaults = template_defaults;
  ctx.verbose = verbose;
  ctx.reasoning_format = reasoning_format;
  return ctx;
}

void ServingState::publish(std::unique_ptr<ServedModel> model) {
  owned_ = std::move(model);
  ready_.store(owned_.get(), std::memory_order_release);
}

std::unique_ptr<ServedModel> ServingState::take() {
  ready_.store(nullptr, std::memory_order_release);
  return std::move(owned_);
}

}  // namespace cohort::server
