// libFuzzer target for the GGUF reader: any input must either parse or throw
// cohort::Error; nothing may crash, hang, or allocate out of proportion to
// the input.
//
// Allocation bound: every metadata value is held in a gguf::Value (about 40
// bytes plus its string), so a parsed header may take up to ~64 bytes of heap
// per input byte. What must never happen is an allocation sized from an
// unchecked count or length; a live-heap peak above kBytesPerInputByte times
// the input (plus a fixed allowance) aborts the run as such a bug.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include <sanitizer/allocator_interface.h>

#include "common/error.h"
#include "gguf/gguf_file.h"

namespace {

constexpr size_t kBytesPerInputByte = 64;
constexpr size_t kFixedAllowance = 1 << 20;

// Signed: blocks allocated before the hooks were installed are freed too.
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

// Heap accounting through the sanitizer allocator's hooks (called on every
// allocation and free, including those of operator new).
void on_malloc(const volatile void*, size_t size) {
  const auto n = static_cast<int64_t>(size);
  int64_t live = g_live.fetch_add(n) + n;
  int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}

void on_free(const volatile void* p) {
  g_live.fetch_sub(static_cast<int64_t>(
      __sanitizer_get_allocated_size(const_cast<const void*>(p))));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int64_t base = g_live.load();
  g_peak.store(base);
  try {
    auto file = cohort::gguf::GgufFile::parse(std::span(data, size), "fuzz-input");
    // Touch what a caller would: every tensor's data view and the metadata.
    size_t sum = 0;
    for (const auto& t : file.tensors()) {
      auto bytes = file.tensor_data(t);
      if (!bytes.empty()) sum += bytes.front() + bytes.back();
    }
    for (const auto& [key, value] : file.metadata().entries()) sum += value.to_display().size();
    if (sum == 1) std::fputc(' ', stderr);  // keep the loop from being optimised away
  } catch (const cohort::Error&) {
    // the expected outcome for malformed input
  }
  const int64_t used = g_peak.load() - base;
  if (used > static_cast<int64_t>(kBytesPerInputByte * size + kFixedAllowance)) {
    std::fprintf(stderr, "gguf_fuzz: %lld bytes of heap for a %zu-byte input\n",
                 static_cast<long long>(used), size);
    std::abort();
  }
  return 0;
}
