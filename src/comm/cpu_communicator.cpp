#include "comm/cpu_communicator.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "common/half.h"

namespace cohort::comm {
namespace {

// Chunk boundaries between ranks fall on multiples of this many elements: a
// whole number of 64-byte lines in F32 and in BF16, so that no two ranks
// write one cache line.
constexpr int64_t kChunkAlign = 32;
// Elements summed at a time (a stack accumulator of 1 KiB).
constexpr int64_t kBlock = 256;

// The contribution of element i of a posted buffer, rounded to BF16.
float contribution(const void* data, DType type, int64_t i) {
  if (type == DType::bf16) return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
  return bf16_to_f32(f32_to_bf16(static_cast<const float*>(data)[i]));
}

void store(void* data, DType type, int64_t i, float v) {
  if (type == DType::bf16) {
    static_cast<uint16_t*>(data)[i] = f32_to_bf16(v);
  } else {
    static_cast<float*>(data)[i] = v;
  }
}

// Elements [begin, end) of every rank's buffer := the rank-order sum of
// their rounded contributions. Reads every buffer before writing any.
template <typename Slot>
void reduce_range(const std::vector<Slot>& slots, int64_t begin, int64_t end) {
  float acc[kBlock];
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t m = std::min(kBlock, end - b);
    for (int64_t k = 0; k < m; ++k) acc[k] = contribution(slots[0].data, slots[0].type, b + k);
    for (size_t r = 1; r < slots.size(); ++r) {
      for (int64_t k = 0; k < m; ++k) acc[k] += contribution(slots[r].data, slots[r].type, b + k);
    }
    for (const Slot& s : slots) {
      for (int64_t k = 0; k < m; ++k) store(s.data, s.type, b + k, acc[k]);
    }
  }
}

}  // namespace

CpuGroup::CpuGroup(int n_ranks, int poll)
    : slots_(static_cast<size_t>(std::max(1, n_ranks))),
      barrier_(std::max(1, n_ranks), spin_budget_ns(std::clamp(poll, 0, kMaxPoll))) {
  assert(n_ranks >= 1);
}

CpuCommunicator::CpuCommunicator(CpuGroup& group, int rank) : group_(group), rank_(rank) {
  assert(rank >= 0 && rank < group.n_ranks());
}

void CpuCommunicator::barrier() { group_.barrier_.arrive_and_wait(); }

void CpuCommunicator::reduce(Buffer x, Queue) {
  std::vector<CpuGroup::Slot>& slots = group_.slots_;
  CpuGroup::Slot& mine = slots[static_cast<size_t>(rank_)];
  mine.send = nullptr;
  mine.data = x.data;
  mine.type = x.type;
  mine.n = x.n;
  group_.barrier_.arrive_and_wait();  // every slot posted
  for ([[maybe_unused]] const CpuGroup::Slot& s : slots) assert(s.n == x.n && s.type == x.type);
  const int64_t world = world_size();
  const int64_t per = ((x.n + world - 1) / world + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  const int64_t begin = std::min(x.n, rank_ * per);
  reduce_range(slots, begin, std::min(x.n, begin + per));
  group_.barrier_.arrive_and_wait();  // every chunk written into every buffer
}

void CpuCommunicator::gather(ConstBuffer send, Buffer recv, std::span<const int64_t> counts,
                             int64_t n_rows, Queue) {
  assert(static_cast<int>(counts.size()) == world_size() && send.type == recv.type);
  std::vector<CpuGroup::Slot>& slots = group_.slots_;
  CpuGroup::Slot& mine = slots[static_cast<size_t>(rank_)];
  mine.send = send.data;
  mine.data = recv.data;
  mine.type = send.type;
  mine.n = send.n;
  group_.barrier_.arrive_and_wait();  // every slice posted
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  assert(recv.data == nullptr ? recv.n == 0 : recv.n == n_rows * total);
  const size_t es = dtype_bytes(recv.type);
  auto* out = static_cast<uint8_t*>(recv.data);
  for (size_t r = 0, offset = 0; r < slots.size(); offset += static_cast<size_t>(counts[r]), ++r) {
    assert(slots[r].n == n_rows * counts[r] && slots[r].type == recv.type);
    const auto* in = static_cast<const uint8_t*>(slots[r].send);
    const size_t row_bytes = static_cast<size_t>(counts[r]) * es;
    if (row_bytes == 0 || out == nullptr) continue;
    for (int64_t row = 0; row < n_rows; ++row) {
      std::memcpy(out + (static_cast<size_t>(row * total) + offset) * es,
                  in + static_cast<size_t>(row) * row_bytes, row_bytes);
    }
  }
  group_.barrier_.arrive_and_wait();  // every rank done reading the slices
}

}  // namespace cohort::comm
