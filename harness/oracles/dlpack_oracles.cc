#include "harness/oracles/dlpack_oracles.h"

namespace lifeline::oracles {

Status CheckHeldExactly(const Detail& name, bool held, bool alive, const Detail& why_alive) {
  if (alive && !held) {
    return Internal("accounting oracle: producer bytes still held after every user is gone: " + name() + " is alive" +
                    why_alive());
  }
  if (!alive && held) {
    return Internal("accounting oracle: " + name() + " was freed while the program still holds a user of it");
  }
  return Status::Ok();
}

Status CheckProducerTotals(uint64_t storages, uint64_t bytes, uint64_t model_storages, uint64_t model_bytes,
                           const Detail& live) {
  if (storages == model_storages && bytes == model_bytes) return Status::Ok();
  return Internal("accounting oracle: the producer holds " + std::to_string(storages) + " storages / " +
                  std::to_string(bytes) + " B, the model " + std::to_string(model_storages) + " / " +
                  std::to_string(model_bytes) + " B (live: " + live() + ")");
}

Status CheckConsumerTotals(uint64_t buffers, uint64_t views, uint64_t model_buffers, uint64_t model_views) {
  const std::string counts = std::to_string(buffers) + " imported buffers / " + std::to_string(views) +
                             " views alive, the model expects " + std::to_string(model_buffers) + " / " +
                             std::to_string(model_views);
  if (buffers > model_buffers || views > model_views) {
    return Internal("accounting oracle: consumer buffers still held after every user is gone: " + counts);
  }
  if (buffers != model_buffers || views != model_views) {
    return Internal("accounting oracle: consumer buffers or views were freed while the program still holds them: " +
                    counts);
  }
  return Status::Ok();
}

Status CheckExportsReleased(uint64_t exports_live) {
  if (exports_live == 0) return Status::Ok();
  return Internal("DLPack ownership: " + std::to_string(exports_live) +
                  " exports were never released (their deleter never ran)");
}

}  // namespace lifeline::oracles
