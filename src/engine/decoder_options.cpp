// DecoderOptions: the checks of -c -b -ub -t --poll -ctk -ctv and of the split flags
// (-sm -dev -ts -ar), and the -dev list.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "comm/ar_routing.h"
#include "common/comma_list.h"
#include "common/error.h"
#include "engine/decoder.h"

namespace cohort::engine {
namespace {

void validate_split(const DecoderOptions& o) {
  const std::string& split_mode = o.split_mode;
  const std::string& device = o.device;
  if (split_mode != "none" && split_mode != "tensor") {
    fail("-sm {}: cohort splits a model by tensor (-sm tensor) or not at all (-sm none)", split_mode);
  }
  if (split_mode == "tensor" && device.empty()) {
    fail("-sm tensor needs -dev with one device per rank (e.g. -dev cpu,cpu)");
  }
  const std::vector<std::string> devs = o.devices();
  if (split_mode == "none" && devs.size() > 1) {
    fail("-dev lists {} devices ({}); splitting a model over them needs -sm tensor", devs.size(), device);
  }
  if (split_mode == "none" && !o.tensor_split.empty()) fail("-ts needs -sm tensor");
  const std::string ar = o.transport();
  if (ar != "p2p" && ar != "host" && ar != "nccl") fail("-ar {}: unknown transport (nccl, host, p2p)", ar);
  comm::ar_routing_from_env();  // COHORT_AR_*_MIN_BYTES name their error before the model loads
  if (split_mode == "tensor") {
    std::vector<backend::DeviceChoice> where;
    for (const std::string& d : devs) where.push_back(o.device_of(d));
    for (const backend::DeviceChoice& w : where) {
      if (w.device != where.front().device) {
        fail("-sm tensor -dev {}: every rank must be on the same kind of device (all cpu or all cuda)", device);
      }
    }
    if (const int gpu = backend::repeated_gpu(where); ar == "nccl" && gpu >= 0) {
      fail("-ar nccl -dev {}: NCCL runs one rank per GPU, and cuda{} is listed twice; ranks that share a GPU "
           "reduce with -ar p2p or -ar host", device, gpu);
    }
    if (!o.tensor_split.empty() && o.tensor_split.size() != devs.size()) {
      fail("-ts has {} values for {} ranks (-dev {})", o.tensor_split.size(), devs.size(), device);
    }
  }
}

}  // namespace

backend::DeviceChoice DecoderOptions::device_of(const std::string& dev) const {
  const backend::DeviceChoice where = backend::choose_device(dev, exact && dev.empty() ? 0 : n_gpu_layers);
  if (exact && where.device != backend::Device::cpu) {
    fail("--exact is the CPU's reference path (F32 activations in every dot product); -dev {} is a GPU "
         "(use -dev cpu, or leave -dev out)", dev);
  }
  return where;
}

void DecoderOptions::validate() const {
  if (n_ctx < 1) fail("-c (context size) must be at least 1, got {}", n_ctx);
  if (n_batch < 1) fail("-b (batch size) must be at least 1, got {}", n_batch);
  if (n_ubatch < 1) fail("-ub (micro-batch size) must be at least 1, got {}", n_ubatch);
  if (n_threads < 0) fail("-t (threads) must not be negative, got {}", n_threads);
  if (poll < 0 || poll > kMaxPoll) fail("--poll must be in 0..{}, got {}", kMaxPoll, poll);
  if (block_size < 1) fail("KV block size must be at least 1, got {}", block_size);
  kv::cache_type(cache_type_k, "-ctk");
  kv::cache_type(cache_type_v, "-ctv");
  validate_split(*this);
  if (exact) {
    for (const std::string& d : devices()) device_of(d);  // names a GPU under --exact
  }
}

std::vector<std::string> DecoderOptions::devices() const {
  if (device.empty()) return {device};
  std::vector<std::string> devs = split_commas(device);
  for (const std::string& d : devs) {
    if (d.empty()) fail("-dev '{}' has an empty entry", device);
  }
  return devs;
}

std::string DecoderOptions::transport() const {
  const char* env = std::getenv("COHORT_ALLREDUCE");
  return env != nullptr && *env != '\0' ? std::string(env) : allreduce;
}

}  // namespace cohort::engine
