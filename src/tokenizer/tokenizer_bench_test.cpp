// Encode throughput on a real vocabulary. Prints MB/s; asserts nothing about
// time. Runs only when COHORT_TOKENIZER_BENCH_MODEL names a GGUF file.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace cohort::tokenizer {
namespace tokenizer_bench_test {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// English-like prose, deterministic.
std::string prose(size_t n_bytes) {
  static const char* kWords[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and",
                                 "tokenizer", "encodes", "text", "into", "integers,", "which", "models",
                                 "read.", "It", "was", "1987", "when", "they", "didn't", "know", "(yet)"};
  std::string s;
  uint32_t x = 12345;
  while (s.size() < n_bytes) {
    x = x * 1103515245u + 12345u;
    s += kWords[(x >> 16) % (sizeof kWords / sizeof *kWords)];
    s += (x >> 8) % 13 == 0 ? "\n" : " ";
  }
  return s;
}

TEST(TokenizerBench, EncodeThroughput) {
  const char* path = std::getenv("COHORT_TOKENIZER_BENCH_MODEL");
  if (!path) GTEST_SKIP() << "set COHORT_TOKENIZER_BENCH_MODEL to a GGUF file";
  using Clock = std::chrono::steady_clock;
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const auto t0 = Clock::now();
  const Tokenizer tok = Tokenizer::from_gguf(file.metadata());
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const std::string text = prose(8 << 20);
  const auto t1 = Clock::now();
  const double cpu0 = thread_cpu_seconds();
  const size_t n_tokens = tok.encode(text, false, false).size();
  const double cpu = thread_cpu_seconds() - cpu0;
  const double s = std::chrono::duration<double>(Clock::now() - t1).count();
  const auto mbs = [&](double seconds) { return static_cast<double>(text.size()) / seconds / 1e6; };
  std::printf("tokenizer: %d tokens loaded in %.1f ms; encoded %zu bytes -> %zu tokens at %.1f MB/s "
              "(%.1f MB/s of cpu time)\n",
              tok.n_vocab(), load_ms, text.size(), n_tokens, mbs(s), mbs(cpu));
  EXPECT_GT(n_tokens, 0u);
}

}  // namespace tokenizer_bench_test
}  // namespace cohort::tokenizer
