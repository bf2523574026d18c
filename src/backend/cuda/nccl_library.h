// NCCL, loaded when first used (`-ar nccl`), not linked: cohort starts, and
// -ar host/p2p work, on machines without libnccl.so.2 (the CUDA toolkit
// ships NCCL only with some installs). The types come from the toolkit's
// nccl.h; the functions from the library the loader finds.
#pragma once

#include <nccl.h>

namespace cohort::cuda {

struct NcclApi {
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclGetErrorString) error_string;
};

// The loaded library's functions. Throws cohort::Error naming the library
// and the alternatives if it cannot be loaded. Thread safety: any thread.
const NcclApi& nccl();

// Throws cohort::Error naming `what` and NCCL's message unless r is ncclSuccess.
void nccl_check(ncclResult_t r, const char* what);

}  // namespace cohort::cuda
