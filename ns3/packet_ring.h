// A FIFO ring of small trivially copyable entries that allocates nothing
// until its first push, doubles when full and never shrinks: a fabric has
// eight of these per switch port, most of which never hold a frame. A
// popped slot keeps its bytes: entries that own something (a packet
// reference) are released by whoever pops them.
#ifndef ROCEMU_NS3_PACKET_RING_H_
#define ROCEMU_NS3_PACKET_RING_H_

#include <cstddef>
#include <memory>
#include <type_traits>

namespace rocemu::ns3sim {

template <typename T>
class Ring {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return items_[head_]; }
  void push_back(T v) {
    if (size_ == capacity_) Grow();
    items_[(head_ + size_) & (capacity_ - 1)] = v;
    ++size_;
  }
  // Moves the front element out.
  T pop_front() {
    const T v = items_[head_];
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
    return v;
  }

 private:
  void Grow() {
    const size_t bigger = capacity_ == 0 ? 8 : capacity_ * 2;
    auto items = std::make_unique<T[]>(bigger);
    for (size_t i = 0; i < size_; ++i) {
      items[i] = items_[(head_ + i) & (capacity_ - 1)];
    }
    items_ = std::move(items);
    capacity_ = bigger;
    head_ = 0;
  }

  std::unique_ptr<T[]> items_;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_PACKET_RING_H_
