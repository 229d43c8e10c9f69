// The whisper.wasm-shaped job API (layers/interop/job_api.h). Each test names its scenario; the
// NegativeControl suite is also run with LIFELINE_REINTRODUCE=wasm-lang-dangling and must stay clean.
#include "layers/interop/job_api.h"

#include <gtest/gtest.h>

#include <string>

namespace lifeline::interop {
namespace {

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// Submits `lang` through the JS-glue frame (so the caller's string is gone when the worker reads) and
// returns what the worker saw.
JobResult SubmitAndJoin(JobApi& api, size_t slot, const std::string& lang) {
  StatusOr<JobId> id = CallFullDefaultFromJs(api, slot, {0.5f, 0.25f}, Bytes(lang), lang.size(), 2, false);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  StatusOr<JobResult> r = api.Join(id.value());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.value();
}

TEST(LangId, ResolvesCodesAndNamesAndRejectsTheRest) {
  EXPECT_EQ(LangId("en"), 0);
  EXPECT_EQ(LangId("de"), 2);
  EXPECT_EQ(LangId("german"), 2);
  EXPECT_EQ(LangId(""), -1);
  EXPECT_EQ(LangId("xx"), -1);
  EXPECT_EQ(LangCode(2), "de");
}

// The worker of a multilingual context reads the language after the binding returned: with the fix it
// reads its own copy, for inline (SSO) and heap strings alike.
TEST(AsyncHandoff, WorkerSeesShortLanguageAfterCallerReturned) {
  JobApi api;
  ASSERT_EQ(api.Init(true).value(), 0u);
  JobResult r = SubmitAndJoin(api, 0, "de");
  EXPECT_EQ(r.language_seen, "de");
  EXPECT_EQ(r.lang_id, 2);
  EXPECT_EQ(r.checksum, 0.75f);
  EXPECT_EQ(r.n_threads, 2);
}

TEST(AsyncHandoff, WorkerSeesLongLanguageAfterCallerReturned) {
  JobApi api;
  ASSERT_TRUE(api.Init(true).ok());
  const std::string lang(40, 'q');
  JobResult r = SubmitAndJoin(api, 0, lang);
  EXPECT_EQ(r.language_seen, lang);
  EXPECT_EQ(r.lang_id, -1);
}

TEST(AsyncHandoff, EmbeddedNulEndsTheCString) {
  JobApi api;
  ASSERT_TRUE(api.Init(true).ok());
  JobResult r = SubmitAndJoin(api, 0, std::string("fr\0ench", 7));
  EXPECT_EQ(r.language_seen, "fr");
  EXPECT_EQ(r.lang_id, 6);
}

TEST(AsyncHandoff, EnglishOnlyModelIgnoresTheLanguage) {
  JobApi api;
  ASSERT_TRUE(api.Init(false).ok());
  JobResult r = SubmitAndJoin(api, 0, "de");
  EXPECT_EQ(r.language_seen, "en");
  EXPECT_EQ(r.lang_id, 0);
}

TEST(AsyncHandoff, SeveralJobsInFlightEachSeeTheirOwnLanguage) {
  JobApi api;
  ASSERT_TRUE(api.Init(true).ok());
  const std::string langs[] = {"ja", "spanish", std::string(20, 'z'), "\xc3\xa9t\xc3\xa9"};
  JobId ids[4];
  for (int i = 0; i < 4; ++i) {
    ids[i] = CallFullDefaultFromJs(api, 0, {}, Bytes(langs[i]), langs[i].size(), 1, false).value();
  }
  EXPECT_EQ(api.jobs_in_flight(), 4u);
  ASSERT_TRUE(api.Start(ids[2]).ok());
  for (int i = 3; i >= 0; --i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(api.Join(ids[i]).value().language_seen, langs[i]);
  }
  EXPECT_EQ(JobApi::live_language_copies(), 0);
}

// A multilingual context in slot 0 with one job for "it" submitted through the JS glue and not started.
struct PendingJob {
  JobApi api;
  std::string lang = "it";
  JobId id = 0;
  void Submit() {
    ASSERT_TRUE(api.Init(true).ok());
    id = CallFullDefaultFromJs(api, 0, {}, Bytes(lang), lang.size(), 1, false).value();
  }
};

TEST(AsyncHandoff, CancelBeforeStartMeansTheWorkerDoesNothing) {
  PendingJob job;
  ASSERT_NO_FATAL_FAILURE(job.Submit());
  ASSERT_TRUE(job.api.Cancel(job.id).ok());
  JobResult r = job.api.Join(job.id).value();
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.language_seen, "");
  EXPECT_EQ(JobApi::live_language_copies(), 0) << "a cancelled job still frees its copy";
}

TEST(AsyncHandoff, CancelAfterStartIsRefused) {
  PendingJob job;
  ASSERT_NO_FATAL_FAILURE(job.Submit());
  ASSERT_TRUE(job.api.Start(job.id).ok());
  EXPECT_EQ(job.api.Cancel(job.id).code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(job.api.Join(job.id).value().cancelled);
}

TEST(AsyncHandoff, FreeJoinsTheSlotsJobsAndRebindReusesTheSlot) {
  JobApi api;
  ASSERT_EQ(api.Init(true).value(), 0u);
  ASSERT_EQ(api.Init(false).value(), 1u);
  std::string lang = "nl";
  ASSERT_TRUE(CallFullDefaultFromJs(api, 0, {}, Bytes(lang), lang.size(), 1, false).ok());
  ASSERT_TRUE(CallFullDefaultFromJs(api, 1, {}, Bytes(lang), lang.size(), 1, false).ok());
  ASSERT_TRUE(api.Free(0).ok());
  EXPECT_EQ(api.jobs_in_flight(), 1u);
  EXPECT_EQ(api.Init(false).value(), 0u);
}

TEST(AsyncHandoff, DestructorJoinsPendingWorkers) {
  {
    JobApi api;
    ASSERT_TRUE(api.Init(true).ok());
    std::string lang = "pl";
    ASSERT_TRUE(CallFullDefaultFromJs(api, 0, {}, Bytes(lang), lang.size(), 1, false).ok());
  }
  EXPECT_EQ(JobApi::live_language_copies(), 0);
}

TEST(JobApiErrors, BadRequestsReturnStatusesThatNameTheProblem) {
  JobApi api;
  std::string lang = "en";
  StatusOr<JobId> unbound = CallFullDefaultFromJs(api, 1, {}, Bytes(lang), 2, 1, false);
  EXPECT_EQ(unbound.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unbound.status().message().find("slot 1 is not bound"), std::string::npos);
  EXPECT_EQ(api.Free(9).code(), StatusCode::kNotFound);
  ASSERT_TRUE(api.Init(true).ok());
  EXPECT_EQ(CallFullDefaultFromJs(api, 0, {}, Bytes(lang), 2, 0, false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(api.Join(77).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(api.Cancel(77).code(), StatusCode::kNotFound);
  EXPECT_EQ(api.Start(77).code(), StatusCode::kNotFound);
  for (size_t i = 1; i < JobApi::kSlots; ++i) ASSERT_TRUE(api.Init(false).ok());
  EXPECT_EQ(api.Init(false).status().code(), StatusCode::kResourceExhausted);
  for (size_t i = 0; i < JobApi::kMaxJobs; ++i) {
    ASSERT_TRUE(CallFullDefaultFromJs(api, 0, {}, Bytes(lang), 2, 1, false).ok());
  }
  EXPECT_EQ(CallFullDefaultFromJs(api, 0, {}, Bytes(lang), 2, 1, false).status().code(),
            StatusCode::kResourceExhausted);
}

// The negative control of wasm-lang-dangling: a synchronous caller uses the borrowed pointer before it
// returns. Correct with or without the switch; ctest runs this suite a second time with
// LIFELINE_REINTRODUCE=wasm-lang-dangling, where any report is a false positive of the harness.
TEST(NegativeControl, SynchronousCallerWithShortLanguageIsClean) {
  JobApi api;
  ASSERT_TRUE(api.Init(true).ok());
  std::string lang = "de";
  JobResult r = CallFullSyncFromJs(api, 0, {1.0f}, Bytes(lang), lang.size(), 1, false).value();
  EXPECT_EQ(r.language_seen, "de");
  EXPECT_EQ(r.lang_id, 2);
}

TEST(NegativeControl, SynchronousCallerWithLongLanguageIsClean) {
  JobApi api;
  ASSERT_TRUE(api.Init(true).ok());
  std::string lang(33, 'k');
  JobResult r = CallFullSyncFromJs(api, 0, {}, Bytes(lang), lang.size(), 1, false).value();
  EXPECT_EQ(r.language_seen, lang);
}

}  // namespace
}  // namespace lifeline::interop
