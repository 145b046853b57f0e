// Objects named by handles (see handles.h): a slot array indexed by the
// handle's upper 24 bits, so lookup is one index and one compare, and a
// generation byte that changes each time a slot is reused or re-keyed, so a
// stale handle is refused. Objects live behind stable pointers: engines may
// keep a pointer for as long as the handle is valid.
#ifndef ROCEMU_NIC_HANDLE_TABLE_H_
#define ROCEMU_NIC_HANDLE_TABLE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "nic/handles.h"

namespace rocemu::nic {

template <typename T>
class HandleTable {
 public:
  // `what` names the object in error messages ("MR", "CQ").
  HandleTable(const char* what, uint32_t max_objects)
      : what_(what), max_objects_(max_objects) {
    slots_.emplace_back();  // index 0 is never used: handle 0 is invalid
  }

  // Control path. ResourceExhausted (ENOMEM) beyond max_objects.
  absl::StatusOr<uint32_t> Insert(ClientId owner, std::unique_ptr<T> obj) {
    if (live_ >= max_objects_) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s limit reached (%u objects)", what_, max_objects_));
    }
    uint32_t index;
    // Reuse slots in FIFO order so a freed handle stays stale as long as
    // possible before its index comes back.
    if (!free_.empty() && (slots_.size() > kMaxIndex || free_.size() > 64)) {
      index = free_.front();
      free_.pop_front();
    } else if (slots_.size() <= kMaxIndex) {
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    } else if (!free_.empty()) {
      index = free_.front();
      free_.pop_front();
    } else {
      return absl::ResourceExhaustedError(
          absl::StrFormat("%s index space exhausted", what_));
    }
    Slot& s = slots_[index];
    s.obj = std::move(obj);
    s.owner = owner;
    ++live_;
    return MakeHandle(index, s.generation);
  }

  // Hot path: the object behind `handle`, or nullptr if the handle is
  // unknown, freed or stale.
  T* Get(uint32_t handle) const {
    const uint32_t index = HandleIndex(handle);
    if (index >= slots_.size()) return nullptr;
    const Slot& s = slots_[index];
    if (s.generation != HandleGeneration(handle)) return nullptr;
    return s.obj.get();
  }
  // As Get, and the object must belong to `client`.
  T* Get(uint32_t handle, ClientId client) const {
    T* obj = Get(handle);
    if (obj == nullptr || slots_[HandleIndex(handle)].owner != client) {
      return nullptr;
    }
    return obj;
  }
  // The owner of a live handle.
  ClientId Owner(uint32_t handle) const {
    return slots_[HandleIndex(handle)].owner;
  }

  // Gives the slot a new generation (a new key byte) and returns the new
  // handle; the old one becomes stale. `handle` must be live.
  uint32_t Rekey(uint32_t handle) {
    Slot& s = slots_[HandleIndex(handle)];
    ++s.generation;
    return MakeHandle(HandleIndex(handle), s.generation);
  }

  // As Rekey, with the generation (key byte) chosen by the caller, as a
  // type 2 memory window bind does; returns the new handle.
  uint32_t Rekey(uint32_t handle, uint8_t generation) {
    Slot& s = slots_[HandleIndex(handle)];
    s.generation = generation;
    return MakeHandle(HandleIndex(handle), s.generation);
  }

  // The live handle with `handle`'s index, whatever its generation; 0 if
  // the slot is empty.
  uint32_t Current(uint32_t handle) const {
    const uint32_t index = HandleIndex(handle);
    if (index == 0 || index >= slots_.size() || !slots_[index].obj) return 0;
    return MakeHandle(index, slots_[index].generation);
  }

  // Destroys the object; NotFound for an unknown or stale handle.
  absl::Status Erase(uint32_t handle) {
    if (Get(handle) == nullptr) {
      return absl::NotFoundError(
          absl::StrFormat("no %s with handle 0x%08x", what_, handle));
    }
    Slot& s = slots_[HandleIndex(handle)];
    s.obj.reset();
    ++s.generation;
    free_.push_back(HandleIndex(handle));
    --live_;
    return absl::OkStatus();
  }

  uint32_t size() const { return live_; }
  const char* what() const { return what_; }
  uint32_t max_objects() const { return max_objects_; }

  // Calls f(handle, T&) for every live object (control path).
  template <typename F>
  void ForEach(F&& f) const {
    for (uint32_t i = 1; i < slots_.size(); ++i) {
      if (slots_[i].obj) f(MakeHandle(i, slots_[i].generation), *slots_[i].obj);
    }
  }

 private:
  static constexpr uint32_t kMaxIndex = (1u << 24) - 1;
  struct Slot {
    std::unique_ptr<T> obj;
    ClientId owner = kKernelClient;
    uint8_t generation = 1;
  };
  const char* what_;
  uint32_t max_objects_;
  uint32_t live_ = 0;
  std::vector<Slot> slots_;
  std::deque<uint32_t> free_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_HANDLE_TABLE_H_
