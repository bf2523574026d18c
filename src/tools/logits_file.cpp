#include "tools/logits_file.h"

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace cohort::tools {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'H', 'L', 'O', 'G', 'P', '1'};

struct Header {
  char magic[8];
  int64_t n_ctx, n_vocab, n_chunks, n_tokens;
};

std::FILE* open_or_fail(const std::string& path, const char* mode) {
  std::FILE* f = std::fopen(path.c_str(), mode);
  if (!f) fail("cannot open '{}': {}", path, std::strerror(errno));
  return f;
}

}  // namespace

LogitsWriter::LogitsWriter(const std::string& path, int n_ctx, size_t n_vocab, int n_chunks,
                           std::span<const int32_t> tokens)
    : path_(path), f_(open_or_fail(path, "wb")), row_(n_vocab) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.n_ctx = n_ctx;
  h.n_vocab = static_cast<int64_t>(n_vocab);
  h.n_chunks = n_chunks;
  h.n_tokens = static_cast<int64_t>(tokens.size());
  if (std::fwrite(&h, sizeof h, 1, f_) != 1 ||
      std::fwrite(tokens.data(), sizeof(int32_t), tokens.size(), f_) != tokens.size()) {
    fail("write to '{}' failed", path);
  }
}

LogitsWriter::~LogitsWriter() { std::fclose(f_); }

void LogitsWriter::write(std::span<const double> logprobs) {
  for (size_t i = 0; i < row_.size(); ++i) row_[i] = static_cast<float>(logprobs[i]);
  if (std::fwrite(row_.data(), sizeof(float), row_.size(), f_) != row_.size()) {
    fail("write to '{}' failed", path_);
  }
}

LogitsReader::LogitsReader(const std::string& path, int n_ctx, size_t n_vocab, int n_chunks,
                           std::span<const int32_t> tokens)
    : path_(path), f_(open_or_fail(path, "rb")), row_(n_vocab) {
  Header h{};
  if (std::fread(&h, sizeof h, 1, f_) != 1 || std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
    std::fclose(f_);
    fail("'{}' is not a file written by --save-logits", path);
  }
  std::vector<int32_t> saved;
  bool same = h.n_ctx == n_ctx && h.n_vocab == static_cast<int64_t>(n_vocab) &&
              h.n_chunks >= n_chunks && h.n_tokens == static_cast<int64_t>(tokens.size());
  if (same) {
    saved.resize(tokens.size());
    same = std::fread(saved.data(), sizeof(int32_t), saved.size(), f_) == saved.size() &&
           std::equal(saved.begin(), saved.end(), tokens.begin());
  }
  if (!same) {
    std::fclose(f_);
    fail("'{}' was saved for another run (context {}, vocabulary {}, {} chunks, {} tokens); "
         "use the same text and -c", path, h.n_ctx, h.n_vocab, h.n_chunks, h.n_tokens);
  }
}

LogitsReader::~LogitsReader() { std::fclose(f_); }

void LogitsReader::read(std::span<double> logprobs) {
  if (std::fread(row_.data(), sizeof(float), row_.size(), f_) != row_.size()) {
    fail("'{}' ends early", path_);
  }
  for (size_t i = 0; i < row_.size(); ++i) logprobs[i] = row_[i];
}

}  // namespace cohort::tools
