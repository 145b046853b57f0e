// Fixed-size frame buffers recycled through a free list. The pool grows in
// chunks while a run warms up and then stops allocating; buffers never move,
// so a pointer handed to an endpoint stays valid until the buffer is freed.
#ifndef ROCEMU_TESTS_SIMNET_FRAME_POOL_H_
#define ROCEMU_TESTS_SIMNET_FRAME_POOL_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace rocemu::simnet {

class FramePool {
 public:
  explicit FramePool(uint32_t buffer_size, uint32_t chunk_buffers = 256)
      : buffer_size_(buffer_size), chunk_buffers_(chunk_buffers) {}
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  uint32_t Get() {
    if (free_.empty()) Grow();
    const uint32_t id = free_.back();
    free_.pop_back();
    return id;
  }
  void Put(uint32_t id) { free_.push_back(id); }
  uint8_t* data(uint32_t id) { return ptrs_[id]; }
  const uint8_t* data(uint32_t id) const { return ptrs_[id]; }
  uint32_t buffer_size() const { return buffer_size_; }
  // Buffers ever allocated (the high-water mark of frames held at once).
  size_t allocated() const { return ptrs_.size(); }
  size_t in_use() const { return ptrs_.size() - free_.size(); }

 private:
  void Grow() {
    chunks_.push_back(std::make_unique<uint8_t[]>(
        static_cast<size_t>(buffer_size_) * chunk_buffers_));
    uint8_t* base = chunks_.back().get();
    const uint32_t first = static_cast<uint32_t>(ptrs_.size());
    ptrs_.reserve(ptrs_.size() + chunk_buffers_);
    free_.reserve(ptrs_.size() + chunk_buffers_);
    for (uint32_t i = 0; i < chunk_buffers_; ++i) {
      ptrs_.push_back(base + static_cast<size_t>(i) * buffer_size_);
    }
    // Hand out low ids first so that runs are easy to read in a debugger.
    for (uint32_t i = chunk_buffers_; i > 0; --i)
      free_.push_back(first + i - 1);
  }

  uint32_t buffer_size_;
  uint32_t chunk_buffers_;
  std::vector<std::unique_ptr<uint8_t[]>> chunks_;
  std::vector<uint8_t*> ptrs_;
  std::vector<uint32_t> free_;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_FRAME_POOL_H_
