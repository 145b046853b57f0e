// A FIFO ring that doubles when full and never shrinks, so a queue that has
// reached its working size stops allocating (std::deque allocates blocks as
// elements flow through it).
#ifndef ROCEMU_TESTS_SIMNET_FIFO_H_
#define ROCEMU_TESTS_SIMNET_FIFO_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace rocemu::simnet {

template <typename T>
class Fifo {
 public:
  explicit Fifo(size_t initial_capacity = 16)
      : items_(initial_capacity ? initial_capacity : 1) {}
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  void push_back(T v) {
    if (size_ == items_.size()) Grow();
    items_[(head_ + size_) % items_.size()] = std::move(v);
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) % items_.size();
    --size_;
  }

 private:
  void Grow() {
    std::vector<T> bigger(items_.size() * 2);
    for (size_t i = 0; i < size_; ++i) {
      bigger[i] = std::move(items_[(head_ + i) % items_.size()]);
    }
    items_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<T> items_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_FIFO_H_
