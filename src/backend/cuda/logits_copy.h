// The logits of a step copied to the host a column chunk at a time, each
// chunk on a second stream as soon as the kernel that wrote it is done, so
// that the copy of one chunk overlaps the output matmul of the next. At 64
// tokens of a 128,256-entry vocabulary the copy (33 MB over PCIe, ~0.6 ms)
// takes longer than the matmul itself; whole, the two add up.
//
// Thread safety: one thread drives it, with the backend's stream.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

namespace cohort::cuda {

// Host outputs of at least this many bytes are computed and copied in
// chunks (8 MiB: 16 rows of a 128,256-entry vocabulary; below, a chunk's
// copy is too short to hide much).
inline constexpr int64_t kChunkedLogitsBytes = int64_t{8} << 20;

// The threshold the backend applies (kChunkedLogitsBytes unless set; the
// tests set 0 to send every host output through the chunks).
int64_t chunked_logits_bytes();
void set_chunked_logits_bytes(int64_t bytes);
// Chunks of one output (rows of W, a multiple of 256).
inline constexpr int kLogitsChunks = 8;

// The rows of W a chunk takes, for n_out rows in kLogitsChunks chunks.
int64_t logits_chunk_rows(int64_t n_out);

class LogitsCopy {
 public:
  LogitsCopy() = default;
  ~LogitsCopy();
  LogitsCopy(const LogitsCopy&) = delete;
  LogitsCopy& operator=(const LogitsCopy&) = delete;

  // Once the work enqueued on `stream` so far is done, copies src [n_rows,
  // cols] (compact, device) to dst (host, rows dst_pitch floats apart).
  void after(cudaStream_t stream, const float* src, int64_t n_rows, int64_t cols, float* dst, int64_t dst_pitch);
  // Blocks until every copy started is done.
  void wait();

 private:
  cudaStream_t copy_ = nullptr;  // made at the first use, on the device current then
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

}  // namespace cohort::cuda
