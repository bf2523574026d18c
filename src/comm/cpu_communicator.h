// Collectives of CPU tensor-parallel ranks: the ranks are threads of one
// process, and their communicators share one CpuGroup.
//
// all_reduce_sum rounds every rank's contribution to BF16 (round to nearest
// even, as common/half.h) and sums the contributions in rank order in F32:
//
//   acc = f32(bf16(x_0[i]));  acc += f32(bf16(x_1[i]));  ...  acc += f32(bf16(x_{n-1}[i]))
//
// which is the arithmetic of the `host` and `p2p` GPU transports (DESIGN.md),
// so these ranks are their reference. An F32 buffer receives acc, a BF16
// buffer bf16(acc); every rank receives the same bits, for any world size
// (one rank too: its contribution is rounded like any other).
//
// Work is spread over the ranks: rank r sums its chunk of the elements
// across every rank's buffer and writes the result into all of them, between
// two barriers (contributions posted; results written). all_gather copies
// every rank's slice into the caller's receive buffer, also between two
// barriers (slices posted; every rank done reading them).
//
// Ownership: the group owns the barrier and one posting slot per rank,
// allocated once; a call allocates nothing. Buffers stay the caller's.
// Thread safety: see comm/communicator.h; additionally every rank of the
// group must have a CpuCommunicator and call it from its own thread. The
// queue is ignored; calls complete before they return.
#pragma once

#include <vector>

#include "comm/communicator.h"
#include "comm/cpu_barrier.h"
#include "common/spin_wait.h"

namespace cohort::comm {

class CpuGroup {
 public:
  // REQUIRES: n_ranks >= 1. poll 0..100: how long a rank waiting for its
  // peers spins before it sleeps (the thread pool's --poll).
  explicit CpuGroup(int n_ranks, int poll = kDefaultPoll);
  CpuGroup(const CpuGroup&) = delete;
  CpuGroup& operator=(const CpuGroup&) = delete;

  int n_ranks() const { return static_cast<int>(slots_.size()); }

 private:
  friend class CpuCommunicator;
  // What a rank posts for the current call. Each slot is written only by
  // its rank before the call's first barrier and read by the others between
  // the two barriers; one cache line each.
  struct alignas(64) Slot {
    const void* send = nullptr;  // all_gather: the rank's slice
    void* data = nullptr;        // all_reduce_sum: the buffer; all_gather: recv
    DType type = DType::f32;
    int64_t n = 0;               // elements of `data` (all_gather: of `send`)
  };
  std::vector<Slot> slots_;  // [n_ranks]
  CpuBarrier barrier_;
};

class CpuCommunicator final : public Communicator {
 public:
  // REQUIRES: 0 <= rank < group.n_ranks(); group outlives this object.
  CpuCommunicator(CpuGroup& group, int rank);

  int rank() const override { return rank_; }
  int world_size() const override { return group_.n_ranks(); }

  // Returns once every rank of the group has called it (the same phase
  // counting as the collectives; call it from every rank alike).
  void barrier();

 protected:
  void reduce(Buffer x, Queue queue) override;
  void gather(ConstBuffer send, Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
              Queue queue) override;

 private:
  CpuGroup& group_;
  int rank_;
};

}  // namespace cohort::comm
