// Prompt reuse through the decoder: a prompt sent again after its sequence
// ended computes only its last token, its shared blocks read in place and
// its partly filled block copied (kv::BlockManager's copy-on-write, done by
// the backend at the next step), and that token's logits are the ones the
// whole prompt gave; on one CPU rank and on two.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/decoder.h"
#include "engine/decoder_testing.h"
#include "model/model.h"

namespace cohort::engine {
namespace decoder_prefix_test {

class DecoderPrefixReuse : public ModelFileTest<gguf::TensorType::Q8_0> {};

DecoderOptions reuse_options(const std::string& devices) {
  DecoderOptions o = options_on(devices);
  o.n_ctx = 256;
  o.n_batch = 64;
  o.n_ubatch = 64;
  o.n_threads = 2;
  return o;
}

// Decodes `n` more tokens of `seq` (its positions reserved here).
void generate(Decoder& dec, kv::SeqId seq, int from, int n, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> tok(3, dec.n_vocab() - 1);
  dec.reserve(seq, from + n);
  for (int i = 0; i < n; ++i) {
    Batch b;
    b.add(tok(rng), from + i, seq, true);
    dec.decode(b);
  }
}

TEST_F(DecoderPrefixReuse, ARepeatedPromptComputesOneTokenAndGivesTheSameLogits) {
  // 26 tokens: one full block of 16 and 10 rows of the next. The first
  // sequence ends right after its prompt (its open block is kept partly
  // filled) or after 8 generated tokens (the block filled and registered:
  // its first 10 rows still agree with the prompt).
  for (const std::string dev : {"cpu", "cpu,cpu"}) {
    for (int generated : {0, 8}) {
      SCOPED_TRACE(dev + ", " + std::to_string(generated) + " generated");
      Decoder dec(*model_, reuse_options(dev));
      std::mt19937 rng(7);
      std::uniform_int_distribution<int32_t> tok(3, dec.n_vocab() - 1);
      std::vector<int32_t> prompt(26);
      for (int32_t& t : prompt) t = tok(rng);
      ASSERT_EQ(dec.blocks().allocate(0, prompt), 0);
      const std::vector<float> whole = prompt_last_logits(dec, 0, prompt, 0);
      generate(dec, 0, 26, generated, rng);
      dec.free_sequence(0);
      ASSERT_EQ(dec.blocks().allocate(1, prompt), 25);
      EXPECT_EQ(prompt_last_logits(dec, 1, prompt, 25), whole);
      // And a third time while the second is still live: its block is the
      // second's open block (not kept), so the rows come from the first's.
      ASSERT_EQ(dec.blocks().allocate(2, prompt), 25);
      EXPECT_EQ(prompt_last_logits(dec, 2, prompt, 25), whole);
      EXPECT_EQ(dec.blocks().audit(), "");
    }
  }
}

// The same step over the same cache rows, computed in place and copied,
// with every KV cache type.
TEST_F(DecoderPrefixReuse, CopiedRowsAreTheComputedOnesInEveryCacheType) {
  for (const char* type : {"f32", "f16", "bf16", "q8_0"}) {
    SCOPED_TRACE(type);
    DecoderOptions o = reuse_options("cpu");
    o.cache_type_k = o.cache_type_v = type;
    Decoder dec(*model_, o);
    const ReusedPrompt r = reused_prompt_logits(dec, 3);
    EXPECT_EQ(r.n_cached, 25);
    EXPECT_EQ(r.reused, r.computed);
  }
}

// The copied rows must be in the cache before the step reads them, also
// when the step that follows the admission is another sequence's.
TEST_F(DecoderPrefixReuse, CopiesAreDoneByTheNextStepWhateverItRuns) {
  Decoder dec(*model_, reuse_options("cpu"));
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> tok(3, dec.n_vocab() - 1);
  std::vector<int32_t> prompt(20), other(30);
  for (int32_t& t : prompt) t = tok(rng);
  for (int32_t& t : other) t = tok(rng);
  dec.blocks().allocate(0, prompt);
  const std::vector<float> whole = prompt_last_logits(dec, 0, prompt, 0);
  dec.free_sequence(0);
  ASSERT_EQ(dec.blocks().allocate(1, prompt), 19);  // copy pending
  ASSERT_EQ(dec.blocks().allocate(2, other), 0);
  prompt_last_logits(dec, 2, other, 0);  // this step performs the copy
  EXPECT_EQ(prompt_last_logits(dec, 1, prompt, 19), whole);
}

}  // namespace decoder_prefix_test
}  // namespace cohort::engine
