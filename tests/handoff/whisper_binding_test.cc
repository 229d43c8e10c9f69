// whisper_string_handoff's parts, on the pinned whisper.cpp: the generated models (scripts/make-whisper-model.py)
// load and run, the embind stand-in answers as JavaScript would, and the whisper.wasm binding (upstream's
// emscripten.cpp) through the handoff binding gives the statuses and reports the programs' model predicts.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "harness/programs/handoff/executor.h"
#include "harness/programs/handoff/upstream/embind/emscripten/bind.h"
#include "harness/programs/handoff/upstream/whisper_caller.h"
#include "harness/programs/handoff/upstream/whisper_capi_binding.h"
#include "harness/programs/handoff/upstream/whisper_wasm_binding.h"
#include "tests/handoff/pinned_program.h"
#include "whisper.h"

namespace lifeline::handoff {
namespace {

class WhisperModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { QuietWhisperLog(); }
};

whisper_context* Load(const std::string& path) {
  whisper_context_params params = whisper_context_default_params();
  params.use_gpu = false;
  return whisper_init_from_file_with_params(path.c_str(), params);
}

std::vector<float> OneSecond() {
  std::vector<float> audio(WHISPER_SAMPLE_RATE);
  for (size_t i = 0; i < audio.size(); ++i) audio[i] = 0.25f * static_cast<float>((i * 37) % 101) / 101.0f - 0.125f;
  return audio;
}

TEST_F(WhisperModel, TheMultilingualModelLoadsFromAFileAndFromABuffer) {
  whisper_context* ctx = Load(WhisperModelPath(true));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(whisper_is_multilingual(ctx), 1);
  EXPECT_EQ(whisper_n_vocab(ctx), 51865);
  whisper_free(ctx);

  std::ifstream in(WhisperModelPath(true), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  whisper_context_params params = whisper_context_default_params();
  params.use_gpu = false;
  ctx = whisper_init_from_buffer_with_params(bytes.data(), bytes.size(), params);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(whisper_is_multilingual(ctx), 1);
  whisper_free(ctx);
}

TEST_F(WhisperModel, TheEnglishModelIsNotMultilingual) {
  whisper_context* ctx = Load(WhisperModelPath(false));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(whisper_is_multilingual(ctx), 0);
  whisper_free(ctx);
}

TEST_F(WhisperModel, WhisperFullRunsToItsEndOnASecondOfAudio) {
  for (const bool multilingual : {true, false}) {
    const std::string name = WhisperModelPath(multilingual);
    whisper_context* ctx = Load(name);
    ASSERT_NE(ctx, nullptr) << name;
    whisper_full_params params = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);
    params.n_threads = 2;
    params.language = "de";
    const std::vector<float> audio = OneSecond();
    EXPECT_EQ(whisper_full(ctx, params, audio.data(), static_cast<int>(audio.size())), 0) << name;
    EXPECT_GE(whisper_full_n_segments(ctx), 0) << name;
    if (whisper_is_multilingual(ctx)) {
      EXPECT_EQ(whisper_full_lang_id(ctx), whisper_lang_id("de"));
    }
    whisper_free(ctx);
  }
}

TEST_F(WhisperModel, EveryLanguageHasAnIdBothWays) {
  ASSERT_GE(whisper_lang_max_id(), 98);
  for (int id = 0; id <= whisper_lang_max_id(); ++id) {
    const char* code = whisper_lang_str(id);
    ASSERT_NE(code, nullptr) << id;
    EXPECT_EQ(whisper_lang_id(code), id) << code;
    EXPECT_EQ(whisper_lang_id(whisper_lang_str_full(id)), id) << whisper_lang_str_full(id);
  }
  EXPECT_EQ(whisper_lang_id("xx"), -1);
}

// ---- the embind stand-in: JavaScript's answers ----

TEST(Embind, AFloat32ArrayOverTheHeapNeedsAnOffsetThatIsAMultipleOfFour) {
  emscripten::val memory = emscripten::val::module_property("HEAPU8")["buffer"];
  emscripten::val audio = emscripten::val::Float32Array({1.0f, 2.0f});
  float out[2] = {0, 0};
  const uintptr_t at = reinterpret_cast<uintptr_t>(out);
  emscripten::val view = audio["constructor"].new_(memory, at, 2);
  view.call<void>("set", audio);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_EQ(audio["length"].as<int>(), 2);
  try {
    (void)audio["constructor"].new_(memory, at + 2, 1);
    ADD_FAILURE() << "a misaligned Float32Array was constructed";
  } catch (const emscripten::JsError& e) {
    EXPECT_STREQ(e.what(), "RangeError: start offset of Float32Array should be a multiple of 4");
  }
  emscripten::val short_view = audio["constructor"].new_(memory, at, 1);
  EXPECT_THROW(short_view.call<void>("set", audio), emscripten::JsError);
  EXPECT_THROW(emscripten::val::module_property("HEAPF32"), emscripten::JsError);
}

TEST(Embind, TheBindingRegisteredItsThreeFunctions) {
  using emscripten::internal::Lookup;
  EXPECT_NO_THROW(Lookup<size_t(const std::string&)>("init"));
  EXPECT_NO_THROW(Lookup<void(size_t)>("free"));
  EXPECT_NO_THROW((Lookup<int(size_t, const emscripten::val&, const std::string&, int, bool)>("full_default")));
  EXPECT_THROW(Lookup<void(size_t)>("init"), std::logic_error);
  EXPECT_THROW(Lookup<void(size_t)>("transcribe"), emscripten::JsError);
}

// ---- the binding, as the programs drive it ----

// Both bindings answer the programs' model alike; they differ in what they can count.
struct Binding {
  const char* name;
  std::unique_ptr<JobBinding> (*make)();
  std::optional<int64_t> live_copies_at_rest;
};

class WhisperBinding : public ::testing::TestWithParam<Binding> {};

INSTANTIATE_TEST_SUITE_P(Both, WhisperBinding,
                         ::testing::Values(Binding{"wasm", &MakeWhisperWasmBinding, std::nullopt},
                                           Binding{"capi", &MakeWhisperCApiBinding, 0}),
                         [](const ::testing::TestParamInfo<Binding>& info) { return std::string(info.param.name); });

TEST_P(WhisperBinding, SlotsJobsAndReportsAreWhatTheModelPredicts) {
  std::unique_ptr<JobBinding> api = GetParam().make();
  ASSERT_EQ(api->Init(true).value(), 0u);
  ASSERT_EQ(api->Init(false).value(), 1u);
  EXPECT_EQ(api->SubmitAsync(2, {0.5f}, "de", 1, false).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(api->SubmitAsync(0, {0.5f}, "de", 0, false).status().code(), StatusCode::kInvalidArgument);

  const std::vector<float> audio = {0.5f, -0.25f, 0.125f, 0.0f, 0.75f};  // 5 x 400 samples: whisper_full decodes
  const std::string long_lang = "a-language-longer-than-the-inline-buffer";
  uint32_t a = api->SubmitAsync(0, audio, long_lang, 2, true).value();
  uint32_t b = api->SubmitAsync(1, {0.25f}, "fr", 1, false).value();
  uint32_t c = api->SubmitAsync(0, {}, "de", 1, false).value();
  EXPECT_EQ(api->JobsInFlight(), 3u);
  EXPECT_TRUE(api->Cancel(c).ok());
  EXPECT_TRUE(api->Start(a).ok());
  EXPECT_EQ(api->Cancel(a).code(), StatusCode::kFailedPrecondition);

  WorkerReport ra = api->Join(a).value();
  EXPECT_FALSE(ra.cancelled);
  EXPECT_EQ(ra.language_seen, long_lang);
  EXPECT_EQ(ra.lang_id, -1);
  EXPECT_EQ(ra.n_threads, 2);
  EXPECT_TRUE(ra.translate);
  EXPECT_EQ(ra.checksum, 1.125f);

  WorkerReport rb = api->Join(b).value();  // never started: Join runs it first
  EXPECT_EQ(rb.language_seen, "en");       // slot 1 holds the English-only model
  EXPECT_EQ(rb.lang_id, 0);
  EXPECT_TRUE(api->Join(c).value().cancelled);
  EXPECT_EQ(api->JobsInFlight(), 0u);

  WorkerReport rs = api->SubmitSync(0, audio, "uk", 1, false).value();
  EXPECT_EQ(rs.language_seen, "uk");
  EXPECT_EQ(rs.lang_id, whisper_lang_id("uk"));

  EXPECT_TRUE(api->Init(true).ok());
  EXPECT_TRUE(api->Init(true).ok());
  EXPECT_EQ(api->Init(true).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(api->Free(1).ok());
  EXPECT_EQ(api->Init(false).value(), 1u);
  EXPECT_EQ(api->LiveLanguageCopies(), GetParam().live_copies_at_rest);
}

// The handoff programs' pinned program (every op kind) runs clean on the fixed binding.
TEST_P(WhisperBinding, ThePinnedProgramRunsClean) {
  Execute(Decode(kEveryOpKind, sizeof(kEveryOpKind)), *GetParam().make());
}

// ---- whisper.h across threads (the C-API binding) ----

// Three jobs of one slot run at once, each on its own state of the one context, and each reports its own
// language; the copies handed to the workers are live until each job is joined.
TEST(WhisperCApiBinding, JobsOfOneContextRunAtOnceOnStatesOfTheirOwn) {
  std::unique_ptr<JobBinding> api = MakeWhisperCApiBinding();
  ASSERT_EQ(api->Init(true).value(), 0u);
  const std::vector<float> audio = {0.5f, -0.25f, 0.125f, 0.0f, 0.75f};
  const std::vector<std::string> langs = {"de", "a-language-longer-than-the-inline-buffer", "ja"};
  std::vector<uint32_t> ids;
  for (const std::string& lang : langs) ids.push_back(api->SubmitAsync(0, audio, lang, 2, false).value());
  for (uint32_t id : ids) ASSERT_TRUE(api->Start(id).ok());
  EXPECT_EQ(api->LiveLanguageCopies(), 3);
  for (size_t i = 0; i < ids.size(); ++i) {
    WorkerReport r = api->Join(ids[i]).value();
    EXPECT_EQ(r.language_seen, langs[i]);
    EXPECT_EQ(r.lang_id, whisper_lang_id(langs[i].c_str()));
  }
  EXPECT_EQ(api->LiveLanguageCopies(), 0);
}

// What the oracle of handed-out texts reads is there to read: the generated model's decoder gives every clip
// that reaches it one segment, " hello world.", in a state of the caller's and per chunk of whisper_full_parallel.
TEST(WhisperCApiBinding, TheTextsItChecksAreTheModelsTranscript) {
  whisper_context_params cparams = whisper_context_default_params();
  cparams.use_gpu = false;
  whisper_context* ctx = whisper_init_from_file_with_params(WhisperModelPath(true).c_str(), cparams);
  ASSERT_NE(ctx, nullptr);
  whisper_state* state = whisper_init_state(ctx);
  whisper_full_params params = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);
  params.n_threads = 1;
  params.language = "de";
  const std::vector<float> audio = CallerSamples({0.5f, -0.25f, 0.125f, 0.0f, 0.75f});
  ASSERT_EQ(whisper_full_with_state(ctx, state, params, audio.data(), static_cast<int>(audio.size())), 0);
  ASSERT_EQ(whisper_full_n_segments_from_state(state), 1);
  EXPECT_STREQ(whisper_full_get_segment_text_from_state(state, 0), " hello world.");
  EXPECT_TRUE(CheckWhisperTexts(ctx, state).ok());
  // Two chunks that each reach the decoder (a program's longest clip, 3,200 samples, makes two of 100 ms: too
  // short to decode), merged into the context's default state.
  const std::vector<float> second = OneSecond();
  ASSERT_EQ(whisper_full_parallel(ctx, params, second.data(), static_cast<int>(second.size()), 2), 0);
  EXPECT_EQ(whisper_full_n_segments(ctx), 2);
  EXPECT_TRUE(CheckWhisperTexts(ctx, nullptr).ok());
  whisper_free_state(state);
  whisper_free(ctx);
}

}  // namespace
}  // namespace lifeline::handoff
