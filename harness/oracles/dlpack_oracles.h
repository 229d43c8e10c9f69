// The accounting oracle of DLPack ownership, shared by the capsule executor
// (harness/programs/capsule/) and the DLPack tests: what a lifetime model says must be alive is exactly
// what is alive. Producer bytes held after every user is gone are a leak (iree-dlpack-import-leak);
// bytes freed while a user still holds them are a premature release (turbine-capsule-rename-back). Each
// check returns OK when its property holds, else an INTERNAL status whose message names the violation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"

namespace lifeline::oracles {

// Text for a failure message, built only when the check fails (what holds an object, what is live).
using Detail = std::function<std::string()>;

// One producer-side object: whether the model says a user still holds it, whether it is alive; `name()`
// ("storage #3 (64 B)", "NumPy array #1") and `why_alive()` (after "is alive") make the message. The
// executor checks every object after every op, so nothing is built unless the check fails.
Status CheckHeldExactly(const Detail& name, bool held, bool alive, const Detail& why_alive);

// The producer's totals (its ledger) equal the model's: live storages and their bytes. `live()` describes
// the live storages for the message.
Status CheckProducerTotals(uint64_t storages, uint64_t bytes, uint64_t model_storages, uint64_t model_bytes,
                           const Detail& live);

// The consumer's live imported buffers and views equal the model's: more is a leak, fewer a premature
// release.
Status CheckConsumerTotals(uint64_t buffers, uint64_t views, uint64_t model_buffers, uint64_t model_views);

// Every export's deleter ran once the program dropped everything and the ledger was reset.
Status CheckExportsReleased(uint64_t exports_live);

}  // namespace lifeline::oracles
