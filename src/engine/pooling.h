// Embeddings from a prompt's final hidden states (rows after the output
// norm, engine::Decoder::hidden()): pooling over the prompt's tokens and
// normalisation, as llama.cpp's embedding context and llama-server do them.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cohort::engine {

// --pooling: how a prompt's rows become its embedding. The values are
// llama.cpp's (enum llama_pooling_type), which GGUF files store in
// `<arch>.pooling_type`.
enum class Pooling : int { none = 0, mean = 1, cls = 2, last = 3 };

// "none", "mean", "cls", "last".
const char* pooling_name(Pooling p);
// The pooling named `name` (--pooling); throws cohort::Error naming the flag.
Pooling parse_pooling(const std::string& name);
// The pooling of a `<arch>.pooling_type` value; nullopt for one this server
// does not compute (rank = 4, or unknown), or a negative (unspecified) one.
std::optional<Pooling> pooling_from_gguf(int64_t value);

// Which of a prompt's n_prompt rows pooling `p` reads: cls the first, last
// the last, none and mean all of them.
bool pooling_reads_row(Pooling p, int row, int n_prompt);

// The embeddings of rows [n_rows, n_embd] (only the rows pooling_reads_row
// chose, in order): none gives each row as it is, mean their average
// (summed in F32 in row order, then scaled by 1 / n_rows), cls the first,
// last the last. REQUIRES: rows.size() == n_rows * n_embd, n_rows >= 1.
std::vector<std::vector<float>> pool_rows(std::span<const float> rows, int n_rows, int n_embd, Pooling p);

// llama-server's embd_normalize, in place: -1 none, 0 max absolute value
// scaled to int16's range (divided by max|x| / 32760), 2 Euclidean (L2),
// any other p the p-norm (sum |x|^p)^(1/p). An all-zero vector stays zero.
void normalize_embedding(std::span<float> v, int embd_normalize);

}  // namespace cohort::engine
