// Which path a reduction of `-ar host` or `-ar p2p` takes, by its size
// (DESIGN.md, Tensor parallelism):
// - below COHORT_AR_CE_MIN_BYTES (default 512 KiB): one kernel per rank
//   that writes its BF16 contribution into the receive buffers, announces it
//   and sums (the small path);
// - from there: copy engines move the contribution (cudaMemcpyAsync), then a
//   kernel announces it and sums (the large path);
// - at or above COHORT_AR_NCCL_MIN_BYTES (default: never): ncclAllReduce,
//   where NCCL is available and every rank has a GPU of its own.
// The thresholds are bytes of the BF16 message, with K, M or G (binary
// multiples) allowed: COHORT_AR_CE_MIN_BYTES=1M.
#pragma once

#include <cstdint>
#include <string>

namespace cohort::comm {

enum class ArPath : uint8_t { kernel, copy_engine, nccl };

const char* ar_path_name(ArPath p);

struct ArRouting {
  int64_t ce_min_bytes = int64_t{512} << 10;
  int64_t nccl_min_bytes = -1;  // -1: never
};

// The path of a reduction of `bytes` bytes.
ArPath ar_path(int64_t bytes, const ArRouting& routing);

// The thresholds from COHORT_AR_CE_MIN_BYTES and COHORT_AR_NCCL_MIN_BYTES
// (the defaults where unset or empty). Throws cohort::Error naming the
// variable and its value where it is not a size.
ArRouting ar_routing_from_env();

// "8", "8K", "4M", "1G" as bytes, from 1 byte to 4 GiB. Throws cohort::Error
// naming `what` (a flag or variable) and the text otherwise.
int64_t parse_byte_size(const std::string& what, const std::string& text);

}  // namespace cohort::comm
