// The server's API, registered on an HttpServer:
//
//   OpenAI:    POST /v1/completions, POST /v1/chat/completions (and
//              /chat/completions/input_tokens: the prompt's tokens), GET /v1/models
//              (the last two also without the /v1 prefix, as llama-server)
//   llama.cpp: GET /health, POST /tokenize, POST /detokenize,
//              POST /apply-template, POST /completion and /completions
//              (native form, see llama_completion.h), GET /props,
//              GET /slots (501 with --no-slots), GET /metrics (501 without
//              --metrics, as llama-server)
//   embeddings: POST /v1/embeddings (OpenAI), POST /embedding and /embeddings
//              (native); 501 unless ServedModel::embeddings (--embeddings)
//   cohort:    GET /v1/phase-events (and /phase-events): the phase view's
//              stream of engine steps (phase_routes.cpp); 501 with --no-slots
//   web page:  GET / and its files (webui_routes.cpp), unless --no-webui
//
// Every route but /health and the page's answers 503 "Loading model" until the model is
// published in `state`. `state` must outlive the server.
#pragma once

#include <string>
#include <vector>

#include "server/http_server.h"
#include "server/served_model.h"

namespace cohort::server {

void register_openai_routes(HttpServer& server, ServingState& state);
void register_llama_routes(HttpServer& server, ServingState& state);
void register_embedding_routes(HttpServer& server, ServingState& state);
void register_phase_routes(HttpServer& server, ServingState& state);
// The page's files (webui_assets.h), at the paths webui_paths() lists;
// those need no API key (the page asks for one and sends it with its API
// calls).
void register_webui_routes(HttpServer& server);
std::vector<std::string> webui_paths();

// The build as llama-server names it, b<commits>-<commit>, for /props and
// system_fingerprint.
std::string build_info();

}  // namespace cohort::server
