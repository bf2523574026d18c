// The file of `cohort perplexity --save-logits`: a header naming the run
// (context, vocabulary, chunks, the token ids) and then, in order, the F32
// log-probabilities [n_vocab] of every scored position. A later run with
// --kl-divergence-base reads it back and refuses a file made for other tokens.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace cohort::tools {

class LogitsWriter {
 public:
  LogitsWriter(const std::string& path, int n_ctx, size_t n_vocab, int n_chunks,
               std::span<const int32_t> tokens);
  ~LogitsWriter();
  LogitsWriter(const LogitsWriter&) = delete;
  LogitsWriter& operator=(const LogitsWriter&) = delete;
  void write(std::span<const double> logprobs);

 private:
  std::string path_;
  std::FILE* f_;
  std::vector<float> row_;
};

class LogitsReader {
 public:
  // Throws cohort::Error if the file is not one of ours or was made for
  // another context, vocabulary, chunk count or text.
  LogitsReader(const std::string& path, int n_ctx, size_t n_vocab, int n_chunks,
               std::span<const int32_t> tokens);
  ~LogitsReader();
  LogitsReader(const LogitsReader&) = delete;
  LogitsReader& operator=(const LogitsReader&) = delete;
  void read(std::span<double> logprobs);

 private:
  std::string path_;
  std::FILE* f_;
  std::vector<float> row_;
};

}  // namespace cohort::tools
