// `cohort info -m FILE [--json]`: what a GGUF file holds.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gguf/file_type.h"
#include "gguf/gguf_file.h"
#include "tools/commands.h"

namespace cohort::tools {
namespace {

struct TypeUsage {
  int64_t n_tensors = 0;
  uint64_t n_bytes = 0;
};

nlohmann::ordered_json describe(const gguf::GgufFile& file) {
  const gguf::Metadata& md = file.metadata();
  const std::string arch = md.get_string("general.architecture").value_or("unknown");
  uint64_t n_params = 0;
  uint64_t n_bytes = 0;
  std::map<std::string, TypeUsage> by_type;
  for (const gguf::TensorInfo& t : file.tensors()) {
    n_params += t.n_elements;
    n_bytes += t.n_bytes;
    TypeUsage& u = by_type[std::string(gguf::type_name(t.type))];
    u.n_tensors += 1;
    u.n_bytes += t.n_bytes;
  }
  int64_t n_vocab = 0;
  if (const gguf::Array* tokens = md.get_array("tokenizer.ggml.tokens")) {
    n_vocab = static_cast<int64_t>(tokens->items.size());
  } else {
    n_vocab = md.get_int(arch + ".vocab_size").value_or(0);
  }
  nlohmann::ordered_json types = nlohmann::ordered_json::object();
  for (const auto& [name, u] : by_type) types[name] = {{"tensors", u.n_tensors}, {"bytes", u.n_bytes}};

  nlohmann::ordered_json j;
  j["file"] = file.name();
  j["gguf_version"] = file.version();
  j["architecture"] = arch;
  j["name"] = md.get_string("general.name").value_or("");
  j["n_params"] = n_params;
  j["tensor_bytes"] = n_bytes;
  auto ftype = md.get_int("general.file_type");
  j["file_type"] = ftype ? gguf::file_type_name(*ftype) : "unknown";
  j["context_length"] = md.get_int(arch + ".context_length").value_or(0);
  j["n_embd"] = md.get_int(arch + ".embedding_length").value_or(0);
  j["n_layer"] = md.get_int(arch + ".block_count").value_or(0);
  j["n_vocab"] = n_vocab;
  j["tokenizer"] = md.get_string("tokenizer.ggml.model").value_or("none");
  j["chat_template"] = md.contains("tokenizer.chat_template");
  j["n_tensors"] = file.tensors().size();
  j["n_metadata"] = md.size();
  j["types"] = types;
  return j;
}

std::string human_count(uint64_t n) {
  if (n >= 1000000000ull) return fmt::format("{:.2f} B", static_cast<double>(n) / 1e9);
  if (n >= 1000000ull) return fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
  return fmt::format("{}", n);
}

std::string human_bytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(n) / (1ull << 20));
  return fmt::format("{:.2f} KiB", static_cast<double>(n) / 1024.0);
}

void print_text(const nlohmann::ordered_json& j) {
  fmt::print("file:           {}\n", j["file"].get<std::string>());
  fmt::print("architecture:   {}\n", j["architecture"].get<std::string>());
  fmt::print("name:           {}\n", j["name"].get<std::string>());
  fmt::print("parameters:     {}\n", human_count(j["n_params"].get<uint64_t>()));
  fmt::print("file type:      {}\n", j["file_type"].get<std::string>());
  fmt::print("tensor bytes:   {}\n", human_bytes(j["tensor_bytes"].get<uint64_t>()));
  fmt::print("context length: {}\n", j["context_length"].get<int64_t>());
  fmt::print("layers:         {}  embedding: {}\n", j["n_layer"].get<int64_t>(),
             j["n_embd"].get<int64_t>());
  fmt::print("vocabulary:     {} ({})\n", j["n_vocab"].get<int64_t>(),
             j["tokenizer"].get<std::string>());
  fmt::print("chat template:  {}\n", j["chat_template"].get<bool>() ? "yes" : "no");
  fmt::print("gguf version:   {}  tensors: {}  metadata: {}\n", j["gguf_version"].get<uint32_t>(),
             j["n_tensors"].get<size_t>(), j["n_metadata"].get<size_t>());
  fmt::print("{:<10} {:>8} {:>14}\n", "type", "tensors", "bytes");
  for (const auto& [name, u] : j["types"].items()) {
    fmt::print("{:<10} {:>8} {:>14}\n", name, u["tensors"].get<int64_t>(),
               human_bytes(u["bytes"].get<uint64_t>()));
  }
}

// Every metadata value and tensor, for scripts that compare readers.
nlohmann::ordered_json value_json(const gguf::Value& v) {
  if (const gguf::Array* a = v.as_array()) {
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    for (const gguf::Value& item : a->items) items.push_back(value_json(item));
    return items;
  }
  if (auto s = v.as_string()) return *s;
  if (auto b = v.as_bool()) return *b;
  if (v.type() == gguf::ValueType::UINT64) return std::get<uint64_t>(v.storage());
  if (auto i = v.as_int()) return *i;
  return *v.as_double();
}

void add_full(const gguf::GgufFile& file, nlohmann::ordered_json& j) {
  nlohmann::ordered_json md = nlohmann::ordered_json::object();
  for (const auto& [key, value] : file.metadata().entries()) {
    nlohmann::ordered_json e;
    e["type"] = gguf::value_type_name(value.type());
    if (const gguf::Array* a = value.as_array()) e["elem_type"] = gguf::value_type_name(a->elem_type);
    e["value"] = value_json(value);
    md[key] = std::move(e);
  }
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const gguf::TensorInfo& t : file.tensors()) {
    tensors.push_back({{"name", t.name}, {"type", gguf::type_name(t.type)}, {"shape", t.shape},
                       {"offset", file.data_offset() + t.offset}, {"n_bytes", t.n_bytes}});
  }
  j["alignment"] = file.alignment();
  j["data_offset"] = file.data_offset();
  j["metadata"] = std::move(md);
  j["tensors"] = std::move(tensors);
}

}  // namespace

void register_info(CLI::App& app) {
  struct Options {
    std::string model;
    bool json = false;
    bool full = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("info", "describe a GGUF model file");
  cmd->add_option("-m,--model", opt->model, "GGUF file")->required();
  cmd->add_flag("--json", opt->json, "print JSON");
  cmd->add_flag("--full", opt->full, "with --json: every metadata value and tensor");
  cmd->callback([opt] {
    auto t0 = std::chrono::steady_clock::now();
    gguf::GgufFile file = gguf::GgufFile::open(opt->model);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::ordered_json j = describe(file);
    if (opt->json) {
      if (opt->full) add_full(file, j);
      // Strings in a file need not be valid UTF-8; show such bytes as U+FFFD.
      fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    } else {
      print_text(j);
    }
    fmt::print(stderr, "info: opened and validated in {:.1f} ms\n", ms);
  });
}

}  // namespace cohort::tools
