// Decoder hidden rows (embeddings): rows that want them get the final hidden
// state after the output norm, the vector their logits are made of (logits
// = output · hidden), beside logits rows and across micro-batches; submit()
// and wait() give decode()'s rows bit for bit, and tensor-parallel CPU ranks
// the same rows up to their BF16 reductions.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/decoder.h"
#include "engine/decoder_testing.h"
#include "model/model.h"
#include "quant/quant.h"

namespace cohort::engine {
namespace decoder_hidden_test {

constexpr int kTokens = 21;

class DecoderHidden : public ModelFileTest<gguf::TensorType::F16> {
 protected:
  // -ub 8: the rows span three micro-batches. exact: F32 activations, so
  // that the logits are the output matrix times the hidden rows in F32.
  static DecoderOptions options(const std::string& devices = "cpu") {
    DecoderOptions o = options_on(devices);
    o.n_ubatch = 8;
    o.exact = true;
    return o;
  }
  // One sequence of kTokens; every third row wants logits, every second its
  // hidden state.
  static Batch batch() {
    Batch b;
    for (int i = 0; i < kTokens; ++i) b.add((i * 37 + 5) % 200, i, 0, i % 3 == 0, i % 2 == 0);
    return b;
  }
  // The hidden rows of batch() through decode(), or submit() and wait().
  static std::vector<float> hidden_rows(const DecoderOptions& o, bool submit) {
    Decoder dec(*model_, o);
    dec.reserve(0, kTokens);
    if (submit) {
      dec.submit(batch());
      dec.wait();
    } else {
      dec.decode(batch());
    }
    return {dec.hidden().begin(), dec.hidden().end()};
  }
};

TEST_F(DecoderHidden, LogitsAreTheOutputMatrixTimesTheHiddenRows) {
  const model::HParams& hp = model_->hparams();
  const gguf::GgufFile& file = model_->file();
  const gguf::TensorInfo* out = file.find_tensor("output.weight");
  if (out == nullptr) out = file.find_tensor("token_embd.weight");  // tied embeddings
  ASSERT_NE(out, nullptr);
  std::vector<float> w(static_cast<size_t>(out->n_elements));  // [n_vocab, n_embd]
  quant::dequantize(out->type, file.tensor_data(*out).data(), w.data(), static_cast<int64_t>(w.size()));

  Decoder dec(*model_, options());
  dec.reserve(0, kTokens);
  const Batch b = batch();
  const std::span<const float> logits = dec.decode(b);
  const std::span<const float> hidden = dec.hidden();
  ASSERT_EQ(hidden.size(), static_cast<size_t>(b.n_embd_outputs() * hp.n_embd));
  const auto n_embd = static_cast<size_t>(hp.n_embd), n_vocab = static_cast<size_t>(hp.n_vocab);
  size_t j = 0, k = 0;  // the row's logits row and hidden row
  int checked = 0;
  for (int i = 0; i < kTokens; ++i) {
    if (b.want_logits[static_cast<size_t>(i)] && b.want_embd[static_cast<size_t>(i)]) {
      double max_err = 0, max_logit = 0;
      for (size_t v = 0; v < n_vocab; ++v) {
        double dot = 0;
        for (size_t d = 0; d < n_embd; ++d) dot += double{w[v * n_embd + d]} * hidden[k * n_embd + d];
        max_err = std::max(max_err, std::fabs(dot - logits[j * n_vocab + v]));
        max_logit = std::max(max_logit, std::fabs(dot));
      }
      // F32 sums of n_embd products against F64 ones.
      EXPECT_LE(max_err, 1e-4 * max_logit) << "row " << i;
      ++checked;
    }
    j += b.want_logits[static_cast<size_t>(i)];
    k += b.want_embd[static_cast<size_t>(i)];
  }
  EXPECT_EQ(checked, 4);  // rows 0, 6, 12, 18
}

TEST_F(DecoderHidden, SubmitGivesDecodesRowsBitForBit) {
  EXPECT_EQ(hidden_rows(options(), true), hidden_rows(options(), false));
}

TEST_F(DecoderHidden, TensorParallelRanksGiveTheSameRows) {
  const std::vector<float> one = hidden_rows(options(), false);
  const std::vector<float> three = hidden_rows(options("cpu,cpu,cpu"), true);
  ASSERT_EQ(one.size(), three.size());
  const size_t n_embd = static_cast<size_t>(model_->hparams().n_embd);
  for (size_t r = 0; r < one.size() / n_embd; ++r) {
    double dot = 0, a2 = 0, b2 = 0;
    for (size_t d = r * n_embd; d < (r + 1) * n_embd; ++d) {
      dot += double{one[d]} * three[d];
      a2 += double{one[d]} * one[d];
      b2 += double{three[d]} * three[d];
    }
    EXPECT_GE(dot / std::sqrt(a2 * b2), 0.9999) << "row " << r;  // the reductions round to BF16
  }
}

}  // namespace decoder_hidden_test
}  // namespace cohort::engine
