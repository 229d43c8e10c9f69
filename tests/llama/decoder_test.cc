// The llama-runtime decoder is a file format: these tests pin how bytes become a context and ops. If one fails
// after a deliberate decoder change, every file in corpus/llama_memory_differential/ means something else:
// regenerate them (LIFELINE_WRITE_SEEDS=<dir>) in the same change.
#include "harness/programs/llama/format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness/programs/common/source.h"
#include "harness/programs/llama/model.h"
#include "tests/llama/seed_programs.h"

namespace lifeline::llama {
namespace {

std::vector<uint8_t> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(LlamaDecoder, EverySeedEncodesRoundTripsAndIsInTheCorpus) {
  const char* write = std::getenv("LIFELINE_WRITE_SEEDS");
  const std::filesystem::path corpus = LIFELINE_SOURCE_DIR "/corpus/llama_memory_differential";
  for (const auto& [name, program] : SeedPrograms()) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> bytes;
    ASSERT_NO_THROW(bytes = Encode(program));
    const Program back = Decode(bytes.data(), bytes.size());
    EXPECT_EQ(Describe(back), Describe(Decode(bytes.data(), bytes.size())));
    const std::string& file = name;  // a seed is named by what it does
    if (write != nullptr) {
      std::ofstream(std::filesystem::path(write) / file, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      continue;
    }
    EXPECT_EQ(ReadFile(corpus / file), bytes) << "corpus/llama_memory_differential/" << file << " is missing or stale";
  }
}

TEST(LlamaDecoderGolden, TheFragmentedRestoreSeedDecodesToThePinnedProgram) {
  const Program p = SeedPrograms()[0].second;
  const std::vector<uint8_t> bytes = Encode(p);
  EXPECT_EQ(Describe(Decode(bytes.data(), bytes.size())),
            "context model=llama n_seq_max=3 unified n_ubatch=32 n_batch=128 flash_attn=auto type_k=f16 "
            "type_v=f16 threads=1\n"
            "#0 decode seqs=0x7 steps=70 tokens@1 -> 0\n"
            "#1 save-seq seq=1 slot=0\n"
            "#2 seq-rm seq=1 [-1, -1) -> true\n"
            "#3 load-seq slot=0 seq=1 -> restored\n"
            "#4 decode seqs=0x2 steps=2 tokens@9 -> 0\n");
}

// repro/llama-state-restore-needs-contiguous-cells/restore-into-holes (llama.cpp #17527): written with
// LIFELINE_WRITE_REPRO=1, checked otherwise.
TEST(LlamaDecoderGolden, TheReproducerInputDecodesToTheProgramInBugJson) {
  const Program want{Params(ModelKind::kLlama, 3, 32, 128),
                     {DecodeOp(0b111, 70, 1), SlotOp(OpKind::kSaveSeq, 0, 1), SeqOp(OpKind::kSeqRm, 1),
                      SlotOp(OpKind::kLoadSeq, 0, 1)}};
  const std::filesystem::path file =
      LIFELINE_SOURCE_DIR "/repro/llama-state-restore-needs-contiguous-cells/restore-into-holes";
  const std::vector<uint8_t> bytes = Encode(want);
  if (std::getenv("LIFELINE_WRITE_REPRO") != nullptr)
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const std::vector<uint8_t> in = ReadFile(file);
  EXPECT_EQ(Describe(Decode(in.data(), in.size())),
            "context model=llama n_seq_max=3 unified n_ubatch=32 n_batch=128 flash_attn=auto type_k=f16 "
            "type_v=f16 threads=1\n"
            "#0 decode seqs=0x7 steps=70 tokens@1 -> 0\n"
            "#1 save-seq seq=1 slot=0\n"
            "#2 seq-rm seq=1 [-1, -1) -> true\n"
            "#3 load-seq slot=0 seq=1 -> restored\n");
}

TEST(LlamaDecoder, TheModelPredictsTheBatchChecks) {
  // A gap after the memory's last position, and a token outside the vocabulary: -1 (llama_batch_allocr).
  Program p{Params(ModelKind::kLlama, 1, 4, 8), {DecodeOp(1, 3, 0), DecodeOp(1, 1, 0, false, false, Flaw::kGap),
                                                 DecodeOp(1, 1, 0, false, false, Flaw::kBadToken)}};
  const std::vector<uint8_t> bytes = Encode(p);
  const Program back = Decode(bytes.data(), bytes.size());
  ASSERT_EQ(back.ops.size(), 3u);
  EXPECT_EQ(back.ops[0].expect_ret, 0);
  EXPECT_EQ(back.ops[1].expect_ret, -1);
  EXPECT_EQ(back.ops[2].expect_ret, -1);
}

TEST(LlamaDecoder, AGetOneDecodeIsSequenceZeroWithAnOutputPerCall) {
  // llama_batch_get_one's batch fills sequence 0 and an output for the last token of each call: 6 tokens in calls
  // of 4 have outputs at 3 and 5. The decoder makes every get-one op so (the bytes drawn for its set are not read).
  const Program p{Params(ModelKind::kLlama, 2, 2, 4), {DecodeOp(1, 6, 0, false, false, Flaw::kGetOne)}};
  const std::vector<uint8_t> bytes = Encode(p);
  const Program back = Decode(bytes.data(), bytes.size());
  ASSERT_EQ(back.ops.size(), 1u);
  EXPECT_EQ(Describe(back.ops[0]), "decode seqs=0x1 steps=6 tokens@0 get-one -> 0");
  Model m(back.params);
  std::vector<bool> outputs;
  for (const Model::Placed& t : m.Place(back.ops[0])) outputs.push_back(t.logits);
  EXPECT_EQ(outputs, (std::vector<bool>{false, false, false, true, false, true}));
  // A get-one op on sequence 1, shared, or with every logit cannot be written.
  for (const Op& op : {DecodeOp(2, 2, 0, false, false, Flaw::kGetOne), DecodeOp(1, 2, 0, false, true, Flaw::kGetOne)})
    EXPECT_THROW(Encode(Program{Params(ModelKind::kLlama, 2, 2, 4), {op}}), programs::Unencodable);
}

TEST(LlamaDecoder, TheRecurrentMemoryRefusesAPartialRemoval) {
  Program p{Params(ModelKind::kMamba, 1, 4, 8), {DecodeOp(1, 5, 0), SeqOp(OpKind::kSeqRm, 0, 2),
                                                 SeqOp(OpKind::kSeqRm, 0, 0)}};
  const std::vector<uint8_t> bytes = Encode(p);
  const Program back = Decode(bytes.data(), bytes.size());
  ASSERT_EQ(back.ops.size(), 3u);
  EXPECT_EQ(back.ops[1].expect_ret, 0);  // [2, end) cuts the state
  EXPECT_EQ(back.ops[2].expect_ret, 1);  // [0, end) removes it whole
}

TEST(LlamaDecoder, EmptyInputIsTheFirstModelWithNoOps) {
  const Program p = Decode(nullptr, 0);
  EXPECT_TRUE(p.ops.empty());
}

TEST(LlamaDecoder, ProgramIsBoundedByMaxOps) {
  std::vector<uint8_t> bytes(100000, 0x5a);
  EXPECT_LE(Decode(bytes.data(), bytes.size()).ops.size(), kMaxOps);
}

}  // namespace
}  // namespace lifeline::llama
