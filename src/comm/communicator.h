// The collectives of tensor parallelism: the reduction the forward pass calls
// twice per layer (after the attention output projection and after the FFN
// down projection) and the gather of vocabulary-split logits.
//
// Ownership and threading contract:
// - One Communicator object per rank. It is used only from its rank's thread
//   (no internal locking against concurrent calls on one object).
// - Calls are collective: every rank of the group makes the same sequence of
//   calls with the same element types and the same counts; a rank that skips
//   a call or passes another count deadlocks or corrupts the group (checked
//   by assert where cheap).
// - Buffers are borrowed for the duration of the call (on the caller's queue,
//   see below); a communicator never keeps a pointer to them afterwards.
//   Buffers of different ranks must not overlap.
//
// Queues: every call takes the caller's queue, an opaque handle to an ordered
// stream of device work (a cudaStream_t for GPU implementations). On a GPU a
// call only enqueues work: the data is reduced when the queue reaches it, and
// the call may be captured in a CUDA graph and replayed. Implementations
// must therefore not wait for the device inside a call (a GPU one may fence
// an uncaptured launch with host barriers among the ranks), must not
// allocate per call (buffers, flags and events are allocated when the
// communicator is made), and must keep any per-call state (such as
// alternating slots) on the device. CPU implementations ignore the queue and
// complete before they return.
//
// Numerics: all_reduce_sum gives every rank the same bits. How the sum is
// formed is the implementation's (the CPU one is in cpu_communicator.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cohort::comm {

enum class DType : uint8_t { f32, bf16 };  // bf16 is stored as uint16_t

inline size_t dtype_bytes(DType t) { return t == DType::f32 ? 4 : 2; }
inline const char* dtype_name(DType t) { return t == DType::f32 ? "f32" : "bf16"; }

// The caller's ordered work queue; `native` is a cudaStream_t on CUDA (null
// for its default stream) and unused on the CPU.
struct Queue {
  void* native = nullptr;
};
inline constexpr Queue kHostQueue{};

// A view of n elements of one type (not owned).
struct Buffer {
  void* data = nullptr;
  DType type = DType::f32;
  int64_t n = 0;
};
struct ConstBuffer {
  const void* data = nullptr;
  DType type = DType::f32;
  int64_t n = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // In place: x [n] = sum over ranks of x [n], the same bits on every rank.
  // A BF16 buffer receives the sum rounded to BF16.
  void all_reduce_sum(Buffer x, Queue queue) { reduce(x, queue); }
  // F32 on the host queue (the CPU forward's call).
  void all_reduce_sum(float* x, int64_t n) { reduce({x, DType::f32, n}, kHostQueue); }

  // Concatenation in rank order, row by row. counts[world_size()] are the
  // columns each rank contributes; send [n_rows, counts[rank()]], recv
  // [n_rows, sum(counts)]: columns [offset(r), offset(r) + counts[r]) of
  // every recv row come from rank r's send row, offset(r) = sum of counts
  // before r. With n_rows = 1 it is the plain concatenation of the slices
  // (vocabulary-split logits of one token); with n_rows tokens it assembles
  // [n_tokens, n_vocab] logits. Counts may differ between ranks and may be 0.
  // A rank may pass recv {nullptr, type, 0}: it contributes its slice and
  // receives nothing (the ranks whose copy of the logits nobody reads).
  // REQUIRES: send and recv of one type, send.n == n_rows * counts[rank()],
  // recv.n == n_rows * sum(counts) (or 0 with a null recv), send and recv not
  // overlapping.
  void all_gather(ConstBuffer send, Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
                  Queue queue) {
    gather(send, recv, counts, n_rows, queue);
  }

 protected:
  // The public calls are non-virtual so that implementations override one
  // name each without hiding the convenience overload.
  virtual void reduce(Buffer x, Queue queue) = 0;
  virtual void gather(ConstBuffer send, Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
                      Queue queue) = 0;
};

// One device: the sum over one rank is the input, unchanged (no rounding),
// and the gather copies send into recv.
class SingleDevice final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }

 protected:
  void reduce(Buffer, Queue) override {}
  void gather(ConstBuffer send, Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
              Queue queue) override;
};

}  // namespace cohort::comm
