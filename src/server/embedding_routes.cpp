// POST /embedding, /embeddings (llama-server's native form) and
// /v1/embeddings (OpenAI's), see embedding_api.h for the fields and forms.
//
// Each input is one engine request (GenerationRequest::embedding): it
// prefills under the phase policy like any prompt and ends with its prompt;
// its final event carries the hidden states its pooling reads, which are
// pooled and normalised here. As llama-server: without --embeddings every
// route answers 501 not_supported_error, and /v1/embeddings refuses pooling
// none (400), which gives a vector per token.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/pooling.h"
#include "server/api_reply.h"
#include "server/completion_session.h"
#include "server/embedding_api.h"
#include "server/routes.h"

namespace cohort::server {
namespace {

enum class EmbeddingForm { native, openai };

// Cancels the requests whose last event has not come when the handler
// returns (client gone, an error, a refused submission).
struct PendingInputs {
  std::vector<std::shared_ptr<RequestHandle>> handles;
  size_t n_done = 0;
  ~PendingInputs() {
    for (size_t i = n_done; i < handles.size(); ++i) handles[i]->cancel();
  }
};

void embeddings(Exchange& exchange, ServedModel& model, EmbeddingForm form) {
  if (!model.embeddings) {  // llama-server's answer, word for word
    reply_not_supported(exchange, "This server does not support embeddings. Start it with `--embeddings`");
    return;
  }
  if (form == EmbeddingForm::openai && model.pooling == engine::Pooling::none) {
    reply_error(exchange, 400, "Pooling type 'none' is not OAI compatible. Please use a different pooling type");
    return;
  }
  const EmbeddingRequest parsed =
      parse_embedding_request(exchange.request().body, model.tokenizer, model.service->n_ctx());
  PendingInputs pending;
  int64_t prompt_tokens = 0;
  for (const std::vector<int32_t>& input : parsed.inputs) {
    GenerationRequest g;
    g.prompt = input;
    g.embedding = true;
    g.pooling = model.pooling;
    pending.handles.push_back(model.service->submit(std::move(g)));
    prompt_tokens += static_cast<int64_t>(input.size());
  }
  std::vector<InputEmbeddings> out;
  for (const std::shared_ptr<RequestHandle>& handle : pending.handles) {
    std::optional<GenerationEvent> ev;
    do {
      ev = next_event(exchange, *handle);
      if (!ev) return;  // the client is gone
    } while (!ev->done);
    ++pending.n_done;
    if (!ev->error.empty() || ev->n_embd == 0 || ev->hidden.empty()) {
      fmt::print(stderr, "error: embedding request {}: {}\n", handle->id(), ev->error);
      reply_error(exchange, 500, ev->error.empty() ? "the embedding was not computed" : ev->error);
      return;
    }
    const int n_rows = static_cast<int>(ev->hidden.size() / static_cast<size_t>(ev->n_embd));
    InputEmbeddings vectors = engine::pool_rows(ev->hidden, n_rows, ev->n_embd, model.pooling);
    if (model.pooling != engine::Pooling::none) {
      for (std::vector<float>& v : vectors) engine::normalize_embedding(v, parsed.embd_normalize);
    }
    out.push_back(std::move(vectors));
  }
  const std::string body = form == EmbeddingForm::openai && !parsed.native
                               ? openai_embeddings_json(out, parsed.base64, model.id, prompt_tokens)
                               : native_embeddings_json(out);
  exchange.respond(200, body, "application/json; charset=utf-8");
}

}  // namespace

void register_embedding_routes(HttpServer& server, ServingState& state) {
  for (const char* path : {"/embedding", "/embeddings"}) {
    server.route("POST", path, with_model(state, [](Exchange& e, ServedModel& m) {
                   embeddings(e, m, EmbeddingForm::native);
                 }));
  }
  server.route("POST", "/v1/embeddings", with_model(state, [](Exchange& e, ServedModel& m) {
                 embeddings(e, m, EmbeddingForm::openai);
               }));
}

}  // namespace cohort::server
