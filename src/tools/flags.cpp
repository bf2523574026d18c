#include "tools/flags.h"

#include <array>
#include <string_view>
#include <utility>

namespace cohort::tools {

std::vector<std::string> normalize_flags(int argc, char** argv) {
  // ref: llama.cpp common/arg.cpp and tools/llama-bench
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 15> kLong = {{
      {"-ub", "--ubatch-size"}, {"-np", "--parallel"}, {"-ngl", "--n-gpu-layers"},
      {"-sm", "--split-mode"},  {"-ts", "--tensor-split"}, {"-fa", "--flash-attn"},
      {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}, {"-ar", "--allreduce"},
      {"-pg", "--pg"}, {"-nkvo", "--no-kv-offload"}, {"-dev", "--device"}, {"-bs", "--backend-sampling"},
      {"-cb", "--cont-batching"}, {"-nocb", "--no-cont-batching"},
  }};
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(argc));
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string replaced(arg);
    for (const auto& [from, to] : kLong) {
      if (arg == from) replaced = to;
    }
    out.push_back(std::move(replaced));
  }
  return out;
}

}  // namespace cohort::tools
