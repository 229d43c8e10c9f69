// The llama-runtime programs' codec (harness/programs/llama/codec.h): a program as JSON, both ways. A written
// program encodes and decodes back to itself with the model's predictions and states; every input of
// llama_memory_differential (seeds, regression corpus, reproducers) round-trips; every Flaw has a name that
// round-trips; what the format cannot express is refused, naming the op and the operand.
#include "harness/programs/llama/codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/programs/llama/format.h"
#include "tests/testing/codec_roundtrip.h"

namespace lifeline::llama {
namespace {

// llama-kv-seq-keep-other-streams' shape: two streams (kv_unified off), both decoded, sequence 0 kept.
constexpr char kKeepProgram[] = R"({"format": "llama", "arch": "llama", "n_seq_max": 2, "kv_unified": false,
  "n_ubatch": 8, "n_batch": 8, "flash_attn": "auto", "type_k": "f16", "type_v": "f16", "threads": 1, "ops": [
  {"id": 0, "op": "decode", "seqs": [0, 1], "steps": 3, "shared": false, "all_logits": false, "tokens": 5, "flaw": "none"},
  {"id": 1, "op": "seq-keep", "seq": 0},
  {"id": 2, "op": "decode", "seqs": [1], "steps": 1, "shared": false, "all_logits": false, "tokens": 9, "flaw": "none"}]})";

TEST(LlamaCodec, AWrittenProgramEncodesAndDecodesBack) {
  auto codec = MakeCodec();
  const std::vector<uint8_t> bytes = codec->Encode(kKeepProgram);
  EXPECT_EQ(Describe(llama::Decode(bytes.data(), bytes.size())),
            "context model=llama n_seq_max=2 per-sequence n_ubatch=8 n_batch=8 flash_attn=auto type_k=f16 type_v=f16 "
            "threads=1\n"
            "#0 decode seqs=0x3 steps=3 tokens@5 -> 0\n"
            "#1 seq-keep seq=0\n"
            "#2 decode seqs=0x2 steps=1 tokens@9 -> 0\n");
  const nlohmann::json back = nlohmann::json::parse(codec->Decode(bytes.data(), bytes.size()));
  EXPECT_EQ(back["kv_unified"], false);
  EXPECT_EQ(back["ops"][0]["seqs"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(back["ops"][0]["model"], nlohmann::json({{"expect", 0}, {"state", "kv/empty"}}));
  EXPECT_EQ(back["ops"][1]["model"], nlohmann::json({{"state", "kv/holding"}}));
  // The model keeps only sequence 0's cells (llama.h's contract): sequence 1 is empty before op #2.
  EXPECT_EQ(back["ops"][2]["model"], nlohmann::json({{"expect", 0}, {"state", "kv/empty"}}));
}

TEST(LlamaCodec, EveryFlawHasANameThatRoundTrips) {
  auto codec = MakeCodec();
  for (int f = 0; f <= static_cast<int>(Flaw::kMaxValue); ++f) {
    SCOPED_TRACE(f);
    Program p;
    p.params.n_seq_max = 1;
    Op warm;
    warm.steps = 2;
    Op flawed;
    flawed.steps = 2;
    flawed.flaw = static_cast<Flaw>(f);
    p.ops = {warm, flawed};
    const std::vector<uint8_t> bytes = Encode(p);
    const nlohmann::json j = nlohmann::json::parse(codec->Decode(bytes.data(), bytes.size()));
    ASSERT_TRUE(j["ops"][1]["flaw"].is_string());
    EXPECT_FALSE(j["ops"][1]["flaw"].get<std::string>().empty());
    EXPECT_EQ(codec->Encode(j.dump()), bytes);
  }
}

TEST(LlamaCodec, ProgramsTheFormatCannotExpressAreRefusedByOp) {
  auto codec = MakeCodec();
  auto refusal = [&](const std::string& header, const std::string& ops) {
    return testing::RefusalOf(*codec, R"({"format": "llama", )" + header + R"(, "ops": [)" + ops + "]}");
  };
  const std::string two = R"("arch": "llama", "n_seq_max": 2, "kv_unified": true, "n_ubatch": 8, "n_batch": 8)";
  const std::string split = R"("arch": "llama", "n_seq_max": 2, "kv_unified": false, "n_ubatch": 8, "n_batch": 8)";
  EXPECT_EQ(refusal(two, R"({"id": 0, "op": "rewind", "seq": 0})"),
            "op #0 (rewind): 'op' is \"rewind\", not a name this format knows");
  EXPECT_EQ(refusal(two, R"({"id": 0, "op": "decode", "seqs": [0], "steps": 1, "shared": false,
                             "all_logits": false, "tokens": 1, "flaw": "sideways"})"),
            "op #0 (decode): 'flaw' is \"sideways\", not a name this format knows");
  EXPECT_EQ(refusal(two, R"({"id": 0, "op": "decode", "seqs": [4], "steps": 1, "shared": false,
                             "all_logits": false, "tokens": 1})"),
            "op #0 (decode): 'seqs' holds sequence ids 0..3");
  EXPECT_EQ(refusal(two, R"({"id": 0, "op": "seq-keep"})"), "op #0 (seq-keep): missing 'seq'");
  // A sequence the context does not have; seq_cp between streams (kv_unified off), which the model never draws.
  EXPECT_EQ(refusal(two, R"({"id": 0, "op": "seq-keep", "seq": 2})"), "op #0: value 2 outside [0, 1]");
  EXPECT_EQ(refusal(split, R"({"id": 0, "op": "seq-cp", "seq": 0, "dst": 1, "p0": -1, "p1": -1})"),
            "op #0: this kind of op is not legal here");
  EXPECT_EQ(refusal(R"("arch": "llama", "n_seq_max": 1, "kv_unified": true, "n_ubatch": 8, "n_batch": 12)", ""),
            "n_batch is not a multiple of n_ubatch");
  EXPECT_EQ(refusal(R"("arch": "falcon", "n_seq_max": 1, "kv_unified": true, "n_ubatch": 8, "n_batch": 8)", ""),
            "'arch' is \"falcon\", not a name this format knows");
}

TEST(LlamaCodecRoundTrip, EveryInput) {
  testing::ExpectEveryInputRoundTrips(*MakeCodec(), LIFELINE_SOURCE_DIR, "llama_memory_differential", 9);
}

// Seeds are encoder output: each decodes and encodes back to its own bytes.
TEST(LlamaCodecRoundTrip, EverySeedEncodesToItsOwnBytes) {
  auto codec = MakeCodec();
  const auto seeds = testing::InputsOf(LIFELINE_SOURCE_DIR, "llama_memory_differential");
  for (const auto& p : seeds) {
    if (p.parent_path().filename() != "llama_memory_differential") continue;
    SCOPED_TRACE(p.string());
    const std::vector<uint8_t> bytes = testing::ReadBytes(p);
    EXPECT_EQ(codec->Encode(codec->Decode(bytes.data(), bytes.size())), bytes);
  }
}

}  // namespace
}  // namespace lifeline::llama
