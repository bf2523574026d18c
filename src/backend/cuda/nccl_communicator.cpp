#include "backend/cuda/nccl_communicator.h"

#include "backend/cuda/group_state.h"
#include "backend/cuda/nccl_library.h"
#include "backend/cuda/rank_fence.h"
#include "common/error.h"

namespace cohort::cuda {

NcclCommunicator::NcclCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream)
    : host_(group, rank), stream_(stream) {
  const NcclApi& api = nccl();
  id_ = group_state<ncclUniqueId>(group, [&api] {
    auto id = std::make_shared<ncclUniqueId>();
    nccl_check(api.get_unique_id(id.get()), "ncclGetUniqueId");
    return id;
  });
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ == nullptr) return;
  (void)cudaStreamSynchronize(stream_);
  // Abort, not destroy: with nothing left in flight it only frees this
  // rank's resources, while ncclCommDestroy may wait for the peers'
  // communicators, which the same thread destroys one after another.
  (void)nccl().comm_abort(comm_);
}

void NcclCommunicator::reduce(comm::Buffer x, comm::Queue) {
  if (x.n <= 0) return;
  if (comm_ == nullptr) {
    nccl_check(nccl().comm_init_rank(&comm_, world_size(), *id_, rank()), "ncclCommInitRank");
  }
  const ncclDataType_t type = x.type == comm::DType::bf16 ? ncclBfloat16 : ncclFloat32;
  fenced_launch(host_, stream_, [&] {
    nccl_check(nccl().all_reduce(x.data, x.data, static_cast<size_t>(x.n), type, ncclSum, comm_, stream_),
               "ncclAllReduce");
  });
}

void NcclCommunicator::gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts,
                              int64_t n_rows, comm::Queue queue) {
  host_.all_gather(send, recv, counts, n_rows, queue);
}

}  // namespace cohort::cuda
