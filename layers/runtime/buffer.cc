#include "layers/runtime/buffer.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/bugs.h"

namespace lifeline::runtime {
namespace {

std::atomic<int64_t> g_wrappers{0}, g_wrapper_bytes{0};

struct Registry {
  std::mutex mutex;
  bool enabled = false;
  std::vector<std::weak_ptr<Backing>> weak;      // fixed
  std::vector<std::shared_ptr<Backing>> strong;  // igl-capture-retains-buffers
};

Registry& R() {
  static Registry* r = new Registry;  // process lifetime, like a capture layer
  return *r;
}

}  // namespace

Backing::~Backing() {
  FreeMemory();
  if (buffer_ != VK_NULL_HANDLE) {
    device_->TrackBuffer(-1);
    vkDestroyBuffer(device_->device(), buffer_, nullptr);
  }
}

void Backing::FreeMemory() {
  if (memory_ == VK_NULL_HANDLE) return;
  device_->TrackMemory(-1, static_cast<int64_t>(bytes_));
  if (mapped_) vkUnmapMemory(device_->device(), memory_);  // a failed bind or map leaves it unmapped
  vkFreeMemory(device_->device(), memory_, nullptr);
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

StatusOr<std::unique_ptr<Buffer>> Buffer::Create(Device* device, size_t bytes) {
  if (bytes == 0 || bytes % sizeof(float) != 0 || bytes > kMaxBufferBytes)
    return InvalidArgument("buffer size " + std::to_string(bytes) + " is not a multiple of 4 in 4.." +
                           std::to_string(kMaxBufferBytes));
  std::shared_ptr<Backing> b(new Backing(device, bytes));
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  LIFELINE_VK_RETURN_IF_ERROR(vkCreateBuffer(device->device(), &bci, nullptr, &b->buffer_));
  device->TrackBuffer(+1);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device->device(), b->buffer_, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = device->host_memory_type();
  LIFELINE_VK_RETURN_IF_ERROR(vkAllocateMemory(device->device(), &mai, nullptr, &b->memory_));
  device->TrackMemory(+1, static_cast<int64_t>(bytes));
  LIFELINE_VK_RETURN_IF_ERROR(vkBindBufferMemory(device->device(), b->buffer_, b->memory_, 0));
  LIFELINE_VK_RETURN_IF_ERROR(vkMapMemory(device->device(), b->memory_, 0, VK_WHOLE_SIZE, 0, &b->mapped_));
  std::memset(b->mapped_, 0, bytes);
  {
    Registry& r = R();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.enabled) {
      if (Reintroduced(Bug::kIglCaptureRetainsBuffers)) {
        r.strong.push_back(b);  // igl #179: the capture layer keeps the backing alive
      } else {
        r.weak.push_back(b);
      }
    }
  }
  return std::unique_ptr<Buffer>(new Buffer(std::move(b)));
}

Buffer::Buffer(std::shared_ptr<Backing> backing) : backing_(std::move(backing)) {
  ++g_wrappers;
  g_wrapper_bytes += static_cast<int64_t>(backing_->bytes());
}

Buffer::~Buffer() {
  --g_wrappers;
  g_wrapper_bytes -= static_cast<int64_t>(backing_->bytes());
  std::lock_guard<std::mutex> lock(R().mutex);
  backing_->wrapped_ = false;
  backing_.reset();  // the last reference destroys the VkBuffer and its memory
}

WrapperCounts GetWrapperCounts() { return {g_wrappers.load(), g_wrapper_bytes.load()}; }

void SetCaptureEnabled(bool on) {
  std::lock_guard<std::mutex> lock(R().mutex);
  R().enabled = on;
}

bool CaptureEnabled() {
  std::lock_guard<std::mutex> lock(R().mutex);
  return R().enabled;
}

size_t CapturedAlive() {
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mutex);
  size_t n = r.strong.size();
  for (const auto& w : r.weak) n += !w.expired();
  return n;
}

void PurgeCapture() {
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& b : r.strong)
    if (!b->wrapped_) b->FreeMemory();  // bytes go; the VkBuffer object stays
  r.weak.erase(std::remove_if(r.weak.begin(), r.weak.end(), [](const auto& w) { return w.expired(); }), r.weak.end());
}

void ClearCapture() {
  std::vector<std::shared_ptr<Backing>> release;
  {
    Registry& r = R();
    std::lock_guard<std::mutex> lock(r.mutex);
    release.swap(r.strong);
    r.weak.clear();
  }
  // `release` dies here, outside the lock: destroying a backing does not take the registry lock.
}

}  // namespace lifeline::runtime
