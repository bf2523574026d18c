// `cohort tokenize` and `cohort detokenize`: the tokenizer of a GGUF file.
//
//   cohort tokenize -m FILE [--ids|--pieces] [--no-bos] [--parse-special] (TEXT | -f FILE)
//       prints the ids as one line "[1, 2, 3]", or "id<TAB>piece" lines;
//   cohort tokenize -m FILE --jsonl
//       reads JSON lines from stdin and answers each with one line:
//         {"text": S | "hex": H, "add_special": B, "parse_special": B} -> [ids]
//         {"ids": [...], "special": B} -> {"hex": H, "stream": [H, ...]}
//         {"op": "pieces", "special": B} -> [H per token id]
//         {"op": "info"} -> {"n_vocab", "bos", "eos", "eot", "eog": [...]}
//       (H: hex of bytes, so that ill-formed UTF-8 travels intact; "stream"
//       holds what the streaming decoder emitted per token, then at finish);
//   cohort detokenize -m FILE [--special] IDS...   prints the text.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_file.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tools/commands.h"

namespace cohort::tools {
namespace {

using tokenizer::Tokenizer;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time of this thread, in ms: throughput that other processes on the
// machine do not disturb.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

Tokenizer load(const std::string& path, bool timing) {
  const auto t0 = Clock::now();
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const auto t1 = Clock::now();
  const double cpu1 = thread_cpu_ms();
  Tokenizer tok = Tokenizer::from_gguf(file.metadata());
  if (timing) {
    fmt::print(stderr, "load: gguf {:.1f} ms, tokenizer {:.1f} ms ({:.1f} ms cpu; {} tokens)\n",
               std::chrono::duration<double, std::milli>(t1 - t0).count(), ms_since(t1),
               thread_cpu_ms() - cpu1, tok.n_vocab());
  }
  return tok;
}

std::string to_hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += fmt::format("{:02x}", static_cast<uint8_t>(c));
  return out;
}

std::string from_hex(const std::string& hex) {
  if (hex.size() % 2 != 0) fail("odd-length hex string");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// A piece as one line of valid UTF-8: control characters and backslash
// escaped, and so is every byte that is not part of a whole, well-formed
// character (a token may hold half of one), as \xNN.
std::string printable(std::string_view piece) {
  std::string out;
  for (size_t pos = 0; pos < piece.size();) {
    const char c = piece[pos];
    const auto b = static_cast<uint8_t>(c);
    if (b >= 0x80) {
      const tokenizer::LenientCodepoint cp = tokenizer::decode_lenient(piece, pos);
      const std::string_view bytes = piece.substr(pos, cp.length);
      const bool whole = cp.valid && tokenizer::is_valid_utf8(bytes);
      out += whole ? std::string(bytes) : fmt::format("\\x{:02x}", b);
      pos += whole ? bytes.size() : 1;
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (b < 0x20 || b == 0x7F) {
      out += fmt::format("\\x{:02x}", b);
    } else {
      out += c;
    }
    ++pos;
  }
  return out;
}

std::string ids_line(const std::vector<int32_t>& ids) { return fmt::format("[{}]", fmt::join(ids, ", ")); }

nlohmann::json info(const Tokenizer& tok) {
  nlohmann::json eog = nlohmann::json::array();
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) eog.push_back(id);
  }
  return {{"n_vocab", tok.n_vocab()}, {"bos", tok.bos()}, {"eos", tok.eos()}, {"eot", tok.eot()},
          {"eog", eog}};
}

nlohmann::json answer(const Tokenizer& tok, const nlohmann::json& req) {
  const std::string op = req.value("op", "");
  if (op == "info") return info(tok);
  if (op == "pieces") {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
      pieces.push_back(to_hex(tok.token_to_piece(id, req.value("special", false))));
    }
    return pieces;
  }
  if (req.contains("ids")) {
    const std::vector<int32_t> ids = req.at("ids").get<std::vector<int32_t>>();
    const bool special = req.value("special", false);
    nlohmann::json stream = nlohmann::json::array();
    tokenizer::Detokenizer detok = tok.detokenizer(special);
    for (int32_t id : ids) {
      if (id < 0 || id >= tok.n_vocab()) fail("token id {} is outside the vocabulary", id);
      stream.push_back(to_hex(detok.push(id)));
    }
    stream.push_back(to_hex(detok.finish()));
    return {{"hex", to_hex(tok.decode(ids, special))}, {"stream", stream}};
  }
  const std::string text = req.contains("hex") ? from_hex(req.at("hex").get<std::string>())
                                               : req.at("text").get<std::string>();
  return tok.encode(text, req.value("add_special", true), req.value("parse_special", false));
}

void run_jsonl(const Tokenizer& tok) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json req;
    try {
      req = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("--jsonl: bad JSON line: {}", e.what());
    }
    try {
      std::cout << answer(tok, req).dump() << '\n';
    } catch (const nlohmann::json::exception& e) {
      fail("--jsonl: bad request {}: {}", line.substr(0, 200), e.what());
    }
  }
  std::cout.flush();
}


}  // namespace

void register_tokenize(CLI::App& app) {
  struct Options {
    std::string model, text, file;
    bool pieces = false, ids = false, no_bos = false, parse_special = false, jsonl = false;
    bool timing = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("tokenize", "text to token ids with a GGUF file's tokenizer");
  cmd->add_option("-m,--model", opt->model, "GGUF file")->required();
  cmd->add_option("text", opt->text, "text to tokenize");
  cmd->add_option("-f,--file", opt->file, "read the text from a file");
  cmd->add_flag("--ids", opt->ids, "print the ids as [1, 2, 3] (default)");
  cmd->add_flag("--pieces", opt->pieces, "print id<TAB>piece per line");
  cmd->add_flag("--no-bos", opt->no_bos, "do not add BOS/EOS tokens");
  cmd->add_flag("--parse-special", opt->parse_special, "turn control-token text into those tokens");
  cmd->add_flag("--jsonl", opt->jsonl, "batch mode: JSON lines on stdin (see cmd_tokenize.cpp)");
  cmd->add_flag("--timing", opt->timing, "print load time and encode throughput to stderr");
  cmd->callback([opt] {
    const Tokenizer tok = load(opt->model, opt->timing);
    if (opt->jsonl) return run_jsonl(tok);
    const std::string text = opt->file.empty() ? opt->text : read_text_file(opt->file);
    const auto t0 = Clock::now();
    const double cpu0 = thread_cpu_ms();
    const std::vector<int32_t> ids = tok.encode(text, !opt->no_bos, opt->parse_special);
    if (opt->timing) {
      const double ms = ms_since(t0), cpu = thread_cpu_ms() - cpu0;
      auto mbs = [&](double t) { return t > 0 ? static_cast<double>(text.size()) / t / 1e3 : 0.0; };
      fmt::print(stderr, "encode: {} bytes -> {} tokens in {:.2f} ms ({:.1f} MB/s; {:.1f} MB/s of cpu time)\n",
                 text.size(), ids.size(), ms, mbs(ms), mbs(cpu));
    }
    if (!opt->pieces) {
      fmt::print("{}\n", ids_line(ids));
      return;
    }
    for (int32_t id : ids) fmt::print("{}\t{}\n", id, printable(tok.token_to_piece(id, true)));
  });
}

void register_detokenize(CLI::App& app) {
  struct Options {
    std::string model;
    std::vector<int32_t> ids;
    bool special = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("detokenize", "token ids to text with a GGUF file's tokenizer");
  cmd->add_option("-m,--model", opt->model, "GGUF file")->required();
  cmd->add_option("ids", opt->ids, "token ids")->required();
  cmd->add_flag("--special", opt->special, "render control tokens too");
  cmd->callback([opt] {
    const Tokenizer tok = load(opt->model, false);
    const std::string text = tok.decode(opt->ids, opt->special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  });
}

}  // namespace cohort::tools
