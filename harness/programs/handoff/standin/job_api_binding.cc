#include "harness/programs/handoff/standin/job_api_binding.h"

#include "harness/programs/handoff/format.h"
#include "layers/interop/job_api.h"

namespace lifeline::handoff {
namespace {

static_assert(kSlots == interop::JobApi::kSlots && kMaxJobs == interop::JobApi::kMaxJobs,
              "the program's model and the API agree on their limits");

WorkerReport Report(const interop::JobResult& r) {
  return WorkerReport{r.cancelled, r.language_seen, r.lang_id, r.n_threads, r.translate, r.checksum};
}

StatusOr<WorkerReport> Report(StatusOr<interop::JobResult> r) {
  if (!r.ok()) return r.status();
  return Report(r.value());
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

class JobApiBinding final : public JobBinding {
 public:
  StatusOr<size_t> Init(bool multilingual) override { return api_.Init(multilingual); }
  Status Free(size_t slot) override { return api_.Free(slot); }
  StatusOr<uint32_t> SubmitAsync(size_t slot, const std::vector<float>& audio, const std::string& language,
                                 int n_threads, bool translate) override {
    return interop::CallFullDefaultFromJs(api_, slot, audio, Bytes(language), language.size(), n_threads, translate);
  }
  StatusOr<WorkerReport> SubmitSync(size_t slot, const std::vector<float>& audio, const std::string& language,
                                    int n_threads, bool translate) override {
    return Report(
        interop::CallFullSyncFromJs(api_, slot, audio, Bytes(language), language.size(), n_threads, translate));
  }
  Status Start(uint32_t job) override { return api_.Start(job); }
  Status Cancel(uint32_t job) override { return api_.Cancel(job); }
  StatusOr<WorkerReport> Join(uint32_t job) override { return Report(api_.Join(job)); }
  size_t JobsInFlight() const override { return api_.jobs_in_flight(); }
  std::optional<int64_t> LiveLanguageCopies() const override { return interop::JobApi::live_language_copies(); }
  int LangId(std::string_view language) const override { return interop::LangId(language); }

 private:
  interop::JobApi api_;
};

}  // namespace

std::unique_ptr<JobBinding> MakeJobApiBinding() { return std::make_unique<JobApiBinding>(); }

}  // namespace lifeline::handoff
