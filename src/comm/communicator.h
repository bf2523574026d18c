// The reduction interface the forward pass calls twice per layer (after the
// attention output projection and after the FFN down projection). With one
// device it does nothing; tensor-parallel ranks sum their partial results.
#pragma once

#include <cstdint>

namespace cohort::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // x [n] = sum over ranks of x [n], the same bits on every rank.
  virtual void all_reduce_sum(float* x, int64_t n) = 0;
};

// One device: the sum over one rank is the input.
class SingleDevice final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void all_reduce_sum(float*, int64_t) override {}
};

}  // namespace cohort::comm
