// CPU ranks' collectives: the reduction against an independent reference
// (contributions rounded to BF16 by exact double arithmetic, summed in rank
// order in F32) bit for bit on every rank, and within the F32 summation bound
// of the F64 sum; BF16 buffers; all_gather with unequal slices; many calls in
// a row, spinning and sleeping.
#include "comm/cpu_communicator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/half.h"

namespace cohort::comm {
namespace cpu_communicator_test {

// Runs body(comm) on one thread per rank of a fresh group.
void run_ranks(int n_ranks, int poll, const std::function<void(Communicator&)>& body) {
  CpuGroup group(n_ranks, poll);
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r) {
    threads.emplace_back([&group, &body, r] {
      CpuCommunicator comm(group, r);
      body(comm);
    });
  }
  for (std::thread& t : threads) t.join();
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rank r's element i: signs and exponents over 2^-20 .. 2^20, and every 5th
// element an exact BF16 tie (low 16 bits 0x8000), odd or even.
float input(int rank, int64_t i, uint64_t seed) {
  const uint64_t h = mix(seed * 0x100000001b3ull + static_cast<uint64_t>(rank) * 0x9e37ull + static_cast<uint64_t>(i));
  const uint32_t exponent = 107 + static_cast<uint32_t>(h % 41);  // biased: 2^-20 .. 2^20
  uint32_t mantissa = static_cast<uint32_t>(h >> 20) & 0x7fffffu;
  if (h % 5 == 0) mantissa = (mantissa & ~0xffffu) | 0x8000u;
  return std::bit_cast<float>(static_cast<uint32_t>((h >> 63) << 31) | (exponent << 23) | mantissa);
}

// x rounded to BF16 (8 significant bits, ties to even) in double arithmetic:
// an exact power-of-two scaling and nearbyint (round half to even). Only for
// normal, finite x, as input() makes them.
float bf16_reference(float x) {
  const int e = std::ilogb(x);
  const double scale = std::ldexp(1.0, 7 - e);
  return static_cast<float>(std::nearbyint(static_cast<double>(x) * scale) / scale);
}

void expect_bits(const float* got, const std::vector<float>& want, int rank) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i])) {
      FAIL() << "rank " << rank << " element " << i << ": " << got[i] << " want " << want[i];
    }
  }
}

void check_f32_reduction(int n_ranks, int64_t n) {
  SCOPED_TRACE(::testing::Message() << n_ranks << " ranks, " << n << " elements");
  const uint64_t seed = static_cast<uint64_t>(n);
  // Reference: F32 sum in rank order of the BF16-rounded contributions.
  std::vector<float> want(static_cast<size_t>(n));
  double worst = 0.0;  // largest |want - F64 sum| / bound
  for (int64_t i = 0; i < n; ++i) {
    float acc = bf16_reference(input(0, i, seed));
    double exact = acc, magnitude = std::abs(acc);
    for (int r = 1; r < n_ranks; ++r) {
      const float c = bf16_reference(input(r, i, seed));
      acc += c;
      exact += c;
      magnitude += std::abs(c);
    }
    want[static_cast<size_t>(i)] = acc;
    // The F64 sum is exact (at most 8 terms of 8 significant bits within
    // 2^-28 .. 2^21). Sequential F32 summation of k = n_ranks terms is
    // within gamma_{k-1} = (k-1)u / (1 - (k-1)u) of the sum of magnitudes,
    // u = 2^-24 (Higham, Accuracy and Stability, 4.2).
    const double ku = (n_ranks - 1) * 0x1p-24;
    const double bound = ku / (1.0 - ku) * magnitude;
    if (bound > 0) worst = std::max(worst, std::abs(acc - exact) / bound);
    else ASSERT_EQ(acc, exact);
  }
  EXPECT_LE(worst, 1.0) << "F32 sum outside the summation bound of the F64 sum";
  std::vector<std::vector<float>> got(static_cast<size_t>(n_ranks));
  for (int r = 0; r < n_ranks; ++r) {
    std::vector<float>& g = got[static_cast<size_t>(r)];
    g.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) g[static_cast<size_t>(i)] = input(r, i, seed);
  }
  run_ranks(n_ranks, kDefaultPoll, [&](Communicator& c) {
    c.all_reduce_sum({got[static_cast<size_t>(c.rank())].data(), DType::f32, n}, kHostQueue);
  });
  for (int r = 0; r < n_ranks; ++r) expect_bits(got[static_cast<size_t>(r)].data(), want, r);
}

TEST(CpuCommunicator, ReferenceRoundingMatchesHalfH) {
  for (int64_t i = 0; i < 100000; ++i) {
    const float x = input(3, i, 9);
    ASSERT_EQ(std::bit_cast<uint32_t>(bf16_reference(x)),
              std::bit_cast<uint32_t>(bf16_to_f32(f32_to_bf16(x)))) << x;
  }
}

TEST(CpuCommunicator, ReductionIsTheBf16RankOrderSumOnEveryRank) {
  for (int n_ranks = 1; n_ranks <= 8; ++n_ranks) {
    for (int64_t n : {1, 2, 3, 31, 33, 1023, 4096, 65537, 1 << 20}) check_f32_reduction(n_ranks, n);
  }
}

TEST(CpuCommunicator, ReductionOf16MiElements) {
  for (int n_ranks : {2, 3}) check_f32_reduction(n_ranks, 16 << 20);
}

TEST(CpuCommunicator, Bf16BuffersInAndOut) {
  constexpr int64_t n = 5000;
  for (int n_ranks : {1, 2, 5, 8}) {
    std::vector<std::vector<uint16_t>> bufs(static_cast<size_t>(n_ranks));
    std::vector<uint16_t> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0.0f;
      for (int r = 0; r < n_ranks; ++r) {
        // BF16 inputs: the upper half of a random float (no rounding needed).
        const uint16_t v = static_cast<uint16_t>(std::bit_cast<uint32_t>(input(r, i, 77)) >> 16);
        bufs[static_cast<size_t>(r)].push_back(v);
        const float c = std::bit_cast<float>(static_cast<uint32_t>(v) << 16);
        acc = r == 0 ? c : acc + c;
      }
      want[static_cast<size_t>(i)] = static_cast<uint16_t>(std::bit_cast<uint32_t>(bf16_reference(acc)) >> 16);
    }
    run_ranks(n_ranks, kDefaultPoll, [&](Communicator& c) {
      c.all_reduce_sum({bufs[static_cast<size_t>(c.rank())].data(), DType::bf16, n}, kHostQueue);
    });
    for (int r = 0; r < n_ranks; ++r) ASSERT_EQ(bufs[static_cast<size_t>(r)], want) << n_ranks << " ranks";
  }
}

// The concatenation in rank order, row by row, for slices of unequal length
// (including empty ones), in F32 and BF16.
TEST(CpuCommunicator, AllGatherConcatenatesUnequalSlicesInRankOrder) {
  const std::vector<int64_t> counts = {3, 0, 5, 1, 7};
  const int n_ranks = static_cast<int>(counts.size());
  for (int64_t n_rows : {1, 4}) {
    for (DType type : {DType::f32, DType::bf16}) {
      const size_t es = dtype_bytes(type);
      int64_t total = 0;
      for (int64_t c : counts) total += c;
      // Element value: (row, rank, column within the slice) spelled in 16 bits.
      auto value = [](int64_t row, int r, int64_t k) { return static_cast<uint16_t>(row * 1000 + r * 100 + k + 1); };
      std::vector<std::vector<uint8_t>> send(counts.size()), recv(counts.size());
      std::vector<uint8_t> want(static_cast<size_t>(n_rows * total) * es);
      for (int r = 0, offset = 0; r < n_ranks; offset += static_cast<int>(counts[static_cast<size_t>(r)]), ++r) {
        const int64_t c = counts[static_cast<size_t>(r)];
        send[static_cast<size_t>(r)].resize(static_cast<size_t>(n_rows * c) * es);
        recv[static_cast<size_t>(r)].assign(want.size(), 0xee);
        for (int64_t row = 0; row < n_rows; ++row) {
          for (int64_t k = 0; k < c; ++k) {
            const uint16_t v = value(row, r, k);
            std::memcpy(&send[static_cast<size_t>(r)][static_cast<size_t>(row * c + k) * es], &v, sizeof v);
            std::memcpy(&want[static_cast<size_t>(row * total + offset + k) * es], &v, sizeof v);
          }
        }
      }
      run_ranks(n_ranks, kDefaultPoll, [&](Communicator& comm) {
        const auto r = static_cast<size_t>(comm.rank());
        comm.all_gather({send[r].data(), type, n_rows * counts[r]}, {recv[r].data(), type, n_rows * total}, counts,
                        n_rows, kHostQueue);
      });
      for (int r = 0; r < n_ranks; ++r) ASSERT_EQ(recv[static_cast<size_t>(r)], want) << "rank " << r;
      // Ranks that pass no receive buffer only contribute (here all but rank 2).
      for (auto& v : recv) std::fill(v.begin(), v.end(), uint8_t{0xee});
      run_ranks(n_ranks, kDefaultPoll, [&](Communicator& comm) {
        const auto r = static_cast<size_t>(comm.rank());
        const Buffer into = r == 2 ? Buffer{recv[r].data(), type, n_rows * total} : Buffer{nullptr, type, 0};
        comm.all_gather({send[r].data(), type, n_rows * counts[r]}, into, counts, n_rows, kHostQueue);
      });
      ASSERT_EQ(recv[2], want);
      for (int r = 0; r < n_ranks; ++r) {
        const std::vector<uint8_t>& v = recv[static_cast<size_t>(r)];
        if (r == 2) continue;
        ASSERT_TRUE(std::all_of(v.begin(), v.end(), [](uint8_t b) { return b == 0xee; })) << "rank " << r;
      }
    }
  }
}

// Many back-to-back collectives (reductions and gathers interleaved), each
// checked, with waiting threads spinning (poll 100) and sleeping at once
// (poll 0), on more ranks than this machine may have cores.
TEST(CpuCommunicator, ManyCallsInARowNeitherDeadlockNorMixPhases) {
  constexpr int kCalls = 200;
  for (int poll : {0, 100}) {
    for (int n_ranks : {2, 5}) {
      std::vector<int> failures(static_cast<size_t>(n_ranks), 0);
      run_ranks(n_ranks, poll, [&](Communicator& c) {
        std::vector<float> x(37);
        std::vector<int64_t> counts(static_cast<size_t>(n_ranks), 1);
        std::vector<float> gathered(static_cast<size_t>(n_ranks));
        for (int call = 0; call < kCalls; ++call) {
          // Small integers: exact in BF16 and in the sums.
          for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((call % 7) + c.rank() + static_cast<int>(i % 3));
          c.all_reduce_sum(x.data(), static_cast<int64_t>(x.size()));
          for (size_t i = 0; i < x.size(); ++i) {
            const int want = n_ranks * ((call % 7) + static_cast<int>(i % 3)) + n_ranks * (n_ranks - 1) / 2;
            if (x[i] != static_cast<float>(want)) ++failures[static_cast<size_t>(c.rank())];
          }
          const float mine = static_cast<float>(call * 10 + c.rank());
          c.all_gather({&mine, DType::f32, 1}, {gathered.data(), DType::f32, n_ranks}, counts, 1, kHostQueue);
          for (int r = 0; r < n_ranks; ++r) {
            if (gathered[static_cast<size_t>(r)] != static_cast<float>(call * 10 + r)) ++failures[static_cast<size_t>(c.rank())];
          }
        }
      });
      for (int r = 0; r < n_ranks; ++r) EXPECT_EQ(failures[static_cast<size_t>(r)], 0) << "poll " << poll << " rank " << r;
    }
  }
}

TEST(SingleDevice, ReductionIsTheIdentityAndGatherACopy) {
  SingleDevice one;
  Communicator& c = one;
  std::vector<float> x = {1.0f + 0x1p-20f, -3.0f};  // not BF16: a single device does not round
  c.all_reduce_sum(x.data(), 2);
  EXPECT_EQ(x, (std::vector<float>{1.0f + 0x1p-20f, -3.0f}));
  std::vector<float> out(2, 0.0f);
  const int64_t counts[] = {2};
  c.all_gather({x.data(), DType::f32, 2}, {out.data(), DType::f32, 2}, counts, 1, kHostQueue);
  EXPECT_EQ(out, x);
  EXPECT_EQ(c.world_size(), 1);
}

}  // namespace cpu_communicator_test
}  // namespace cohort::comm
