#include "layers/runtime/encoder.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/bugs.h"
#include "core/check.h"

namespace lifeline::runtime {
namespace {

thread_local TransientPool* t_innermost = nullptr;
thread_local int t_depth = 0;
std::atomic<int64_t> g_live_descriptors{0};

// The encode callback as upstream stored it before the fix: a block literal on the stack of
// SetEncodeThreads, capturing the context and n_cb by value.
struct EncodeBlock {
  Context* context;
  int n_cb;
};

// The encode threads: up to kMaxEncodeThreads workers that live for the process and run every frame's
// shares, as the Metal backend hands its command buffers to a GCD queue (dispatch_apply) rather than to
// threads of its own. A thread per share per frame cost a thread start each: 579 against about 1,550 exec/s
// for the encoder target without sanitizers (docs/benchmarks.md, issue 15). Frames from several threads may
// run at once; each Run() returns when its own shares are done.
class EncodeWorkers {
 public:
  static EncodeWorkers& Get() {
    static EncodeWorkers workers;
    return workers;
  }

  // Calls task(arg, i) for every i in [0, n), each on a worker thread, and waits for all of them.
  void Run(int n, void (*task)(void* arg, int index), void* arg) {
    Frame frame{task, arg, n};
    std::unique_lock<std::mutex> lock(mu_);
    // Threads first: if one cannot start, the exception leaves no share queued that points into this frame.
    const size_t wanted = std::min<size_t>(queue_.size() + static_cast<size_t>(n), kMaxEncodeThreads);
    while (threads_.size() < wanted) threads_.emplace_back([this] { Work(); });
    queue_.reserve(queue_.size() + static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      queue_.push_back({&frame, i});  // capacity is kept: no allocation once warm
      work_cv_.notify_one();          // one worker per share; the others sleep on
    }
    done_cv_.wait(lock, [&] { return frame.remaining == 0; });
  }

  ~EncodeWorkers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  struct Frame {
    void (*task)(void*, int);
    void* arg;
    int remaining;
  };
  struct Share {
    Frame* frame;
    int index;
  };

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_, and nothing left to run
      const Share share = queue_.front();
      queue_.erase(queue_.begin());
      lock.unlock();
      share.frame->task(share.frame->arg, share.index);
      lock.lock();
      if (--share.frame->remaining == 0) done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::vector<Share> queue_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

}  // namespace

void PassDescriptor::Retain() {
  LIFELINE_CHECK(refs_ > 0, "retain of a released pass descriptor");
  ++refs_;
}

void PassDescriptor::Release() {
  LIFELINE_CHECK(refs_ > 0, "release of a released pass descriptor");
  if (--refs_ == 0) delete this;
}

TransientPool::TransientPool() : outer_(t_innermost) {
  t_innermost = this;
  ++t_depth;
}

TransientPool::~TransientPool() {
  LIFELINE_PRECONDITION(t_innermost == this, "TransientPools must be drained innermost first");
  t_innermost = outer_;
  --t_depth;
  for (const Entry& e : objects_) e.release(e.object);
}

int TransientPool::Depth() { return t_depth; }

bool TransientPool::Autorelease(void* object, void (*release)(void*)) {
  if (!t_innermost) return false;
  t_innermost->objects_.push_back({object, release});
  return true;
}

PassDescriptor::PassDescriptor(DispatchType type)
    : dispatch_type_(type), label_(type == DispatchType::kSerial ? "serial compute pass" : "concurrent compute pass") {
  ++g_live_descriptors;
}

PassDescriptor::~PassDescriptor() { --g_live_descriptors; }

PassDescriptor* PassDescriptor::Create(DispatchType type) {
  if (TransientPool::Depth() == 0) return nullptr;
  auto* d = new PassDescriptor(type);
  TransientPool::Autorelease(d, [](void* o) { static_cast<PassDescriptor*>(o)->Release(); });
  return d;
}

PassDescriptor* PassDescriptor::New(DispatchType type) { return new PassDescriptor(type); }

int64_t PassDescriptor::Live() { return g_live_descriptors.load(); }

StatusOr<std::unique_ptr<Context>> Context::Create(Device* device, int n_cb, DescriptorOwnership ownership) {
  if (n_cb < 1 || n_cb > kMaxEncodeThreads)
    return InvalidArgument("n_cb " + std::to_string(n_cb) + " is outside 1.." + std::to_string(kMaxEncodeThreads));
  if (Reintroduced(Bug::kMetalEdescAutorelease)) ownership = DescriptorOwnership::kBorrowed;
  std::unique_ptr<Context> ctx(new Context(device));
  ctx->ownership_ = ownership;
  if (ownership == DescriptorOwnership::kBorrowed) {
    // metal-edesc-autorelease (llama.cpp #9698): the convenience constructor's +0 object is stored without
    // a retain; the pool active during init owns it.
    ctx->descriptor_ = PassDescriptor::Create(DispatchType::kSerial);
    if (!ctx->descriptor_) return FailedPrecondition("Context::Create needs a TransientPool on this thread");
  } else {
    ctx->descriptor_ = PassDescriptor::New(DispatchType::kSerial);  // fix (llama.cpp #9718): owned
  }
  LIFELINE_RETURN_IF_ERROR(ctx->SetEncodeThreads(n_cb));
  return ctx;
}

Context::~Context() {
  DestroyPools(&pools_);
  if (ownership_ == DescriptorOwnership::kOwned) descriptor_->Release();
  // kBorrowed: the pool releases it; kCopiedNeverReleased: nobody does (a leak LSan reports).
}

Status Context::MakePools(int n, Pools* pools) {
  VkDevice dev = device_->device();
  for (int i = 0; i < n; ++i) {
    VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.queueFamilyIndex = device_->queue_family();
    VkCommandPool pool;
    LIFELINE_VK_RETURN_IF_ERROR(vkCreateCommandPool(dev, &cpi, nullptr, &pool));
    device_->TrackCommandPool(+1);
    pools->command.push_back(pool);
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3 * kMaxFrameOps};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = kMaxFrameOps;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &size;
    VkDescriptorPool dpool;
    LIFELINE_VK_RETURN_IF_ERROR(vkCreateDescriptorPool(dev, &dpi, nullptr, &dpool));
    device_->TrackDescriptorPool(+1);
    pools->descriptor.push_back(dpool);
  }
  return Status::Ok();
}

void Context::DestroyPools(Pools* pools) {
  VkDevice dev = device_->device();
  for (VkCommandPool p : pools->command) {
    device_->TrackCommandPool(-1);
    vkDestroyCommandPool(dev, p, nullptr);
  }
  for (VkDescriptorPool p : pools->descriptor) {
    device_->TrackDescriptorPool(-1);
    vkDestroyDescriptorPool(dev, p, nullptr);
  }
  pools->command.clear();
  pools->descriptor.clear();
}

Status Context::SetEncodeThreads(int n_cb) {
  if (n_cb < 1) return InvalidArgument("n_cb " + std::to_string(n_cb) + " is below 1");
  const int clamped = std::min(n_cb, kMaxEncodeThreads);
  // New pools first: if Vulkan refuses, the context keeps its old pools and n_cb and stays usable.
  Pools fresh;
  Status made = MakePools(clamped, &fresh);
  if (!made.ok()) {
    DestroyPools(&fresh);
    return made;
  }
  DestroyPools(&pools_);
  pools_ = std::move(fresh);
  n_cb_ = clamped;
  EncodeBlock block{this, n_cb};  // lives in this stack frame, like the Objective-C block literal, and
                                  // captured the raw argument as that block did
  if (Reintroduced(Bug::kMetalEncodeAsyncBlock)) {
    // llama.cpp #9698: the block is stored without Block_copy; worker threads call it after this frame
    // is gone.
    encode_owned_.reset();
    encode_ref_.object = &block;
    encode_ref_.call = [](const void* object, int cb_index) {
      const auto* b = static_cast<const EncodeBlock*>(object);
      b->context->EncodeShare(cb_index, b->n_cb);
    };
  } else {
    // Fix (llama.cpp #9747): an owning copy, replacing (and freeing) the previous one; it reads n_cb_
    // from the context when it runs.
    encode_owned_ = std::make_unique<std::function<void(int)>>([this](int cb_index) { EncodeShare(cb_index, n_cb_); });
    encode_ref_ = {};
  }
  return Status::Ok();
}

void Context::EncodeShare(int cb_index, int n_cb) {
  const std::vector<FrameOp>& ops = *frame_;
  VkCommandBuffer cmd = command_buffers_[cb_index];
  // Every command buffer starts its pass from the descriptor, as the Metal backend asks it for an encoder.
  const DispatchType type = descriptor_->dispatch_type();
  const size_t begin = ops.size() * static_cast<size_t>(cb_index) / static_cast<size_t>(n_cb);
  const size_t end = ops.size() * static_cast<size_t>(cb_index + 1) / static_cast<size_t>(n_cb);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = vkBeginCommandBuffer(cmd, &bi); r != VK_SUCCESS) {
    worker_status_[cb_index] = VkError("vkBeginCommandBuffer", r, __FILE__, __LINE__);
    return;
  }
  // Earlier command buffers of the frame come first in submission order: wait for their writes.
  ComputeBarrier(cmd, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  for (size_t i = begin; i < end; ++i) {
    const FrameOp& op = ops[i];
    if (i > begin && type == DispatchType::kSerial)
      ComputeBarrier(cmd, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pools_.descriptor[cb_index];
    ai.descriptorSetCount = 1;
    VkDescriptorSetLayout layout = device_->set_layout();
    ai.pSetLayouts = &layout;
    VkDescriptorSet set;
    if (VkResult r = vkAllocateDescriptorSets(device_->device(), &ai, &set); r != VK_SUCCESS) {
      worker_status_[cb_index] = VkError("vkAllocateDescriptorSets", r, __FILE__, __LINE__);
      vkEndCommandBuffer(cmd);
      return;
    }
    const VkBuffer bound[3] = {(op.a ? op.a : op.out)->handle(), (op.b ? op.b : op.out)->handle(), op.out->handle()};
    WriteKernelBindings(device_->device(), set, bound);
    device_->RecordDispatch(cmd, op.kernel, set, op.n, op.value);
  }
  if (cb_index == n_cb - 1)  // the host reads results after the fence
    ComputeBarrier(cmd, VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_HOST_BIT);
  if (VkResult r = vkEndCommandBuffer(cmd); r != VK_SUCCESS)
    worker_status_[cb_index] = VkError("vkEndCommandBuffer", r, __FILE__, __LINE__);
}

void Context::EncodeThrough(int cb_index) {
  if (encode_owned_) {
    (*encode_owned_)(cb_index);
  } else {
    encode_ref_.call(encode_ref_.object, cb_index);
  }
}

Status Context::Compute(const std::vector<FrameOp>& ops) {
  if (ops.size() > static_cast<size_t>(kMaxFrameOps))
    return InvalidArgument("a frame holds at most " + std::to_string(kMaxFrameOps) + " ops, got " +
                           std::to_string(ops.size()));
  for (size_t i = 0; i < ops.size(); ++i) {
    const FrameOp& op = ops[i];
    const bool needs_a = op.kernel != Kernel::kFill, needs_b = op.kernel == Kernel::kAdd;
    std::string where = "op " + std::to_string(i) + " (" + KernelName(op.kernel) + "): ";
    if (!op.out || (needs_a && !op.a) || (needs_b && !op.b)) return InvalidArgument(where + "a buffer is missing");
    for (const Buffer* b : {op.out, needs_a ? op.a : nullptr, needs_b ? op.b : nullptr})
      if (b && b->floats() < op.n)
        return InvalidArgument(where + std::to_string(op.n) + " elements exceed a buffer of " +
                               std::to_string(b->floats()));
  }
  VkDevice dev = device_->device();
  const int n_cb = n_cb_;
  command_buffers_.assign(static_cast<size_t>(n_cb), VK_NULL_HANDLE);
  for (int i = 0; i < n_cb; ++i) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pools_.command[i];
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    LIFELINE_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(dev, &ai, &command_buffers_[i]));
  }
  frame_ = &ops;
  worker_status_.assign(static_cast<size_t>(n_cb), Status::Ok());
  // Every share through the stored callback, on the encode threads; all done before anything else.
  EncodeWorkers::Get().Run(n_cb, [](void* self, int i) { static_cast<Context*>(self)->EncodeThrough(i); }, this);
  frame_ = nullptr;
  Status result = Status::Ok();
  for (const Status& s : worker_status_)
    if (!s.ok() && result.ok()) result = s;
  VkFence fence = VK_NULL_HANDLE;
  if (result.ok()) {
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult r = vkCreateFence(dev, &fci, nullptr, &fence);
    if (r == VK_SUCCESS) {
      device_->TrackFence(+1);
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = static_cast<uint32_t>(n_cb);
      si.pCommandBuffers = command_buffers_.data();
      {
        std::lock_guard<std::mutex> lock(device_->queue_mutex());
        r = vkQueueSubmit(device_->queue(), 1, &si, fence);
      }
      if (r == VK_SUCCESS) r = vkWaitForFences(dev, 1, &fence, VK_TRUE, uint64_t{30} * 1000 * 1000 * 1000);
      if (r != VK_SUCCESS) result = VkError("vkQueueSubmit/vkWaitForFences", r, __FILE__, __LINE__);
      if (r == VK_TIMEOUT) vkDeviceWaitIdle(dev);  // nothing may still run when the pools are reset
      device_->TrackFence(-1);
      vkDestroyFence(dev, fence, nullptr);
    } else {
      result = VkError("vkCreateFence", r, __FILE__, __LINE__);
    }
  }
  // The frame drains: command buffers and descriptor sets go back to their pools.
  for (int i = 0; i < n_cb; ++i) {
    vkFreeCommandBuffers(dev, pools_.command[i], 1, &command_buffers_[i]);
    vkResetDescriptorPool(dev, pools_.descriptor[i], 0);
  }
  command_buffers_.clear();
  return result;
}

}  // namespace lifeline::runtime
