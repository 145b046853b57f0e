// A single-producer/single-consumer ring of fixed-size slots in shared
// memory, for the send, receive and completion queues between an
// application and the daemon.
//
// The ring lives in a sealed memfd: the creator sizes it, seals it against
// shrinking and growing (so the peer mapping it can never take a SIGBUS) and
// hands the fd to the other process over the control socket (SCM_RIGHTS).
// Head (written by the producer) and tail (written by the consumer) sit on
// their own cache lines and are published with release stores and read
// with acquire loads; each side keeps a private copy of the other's index
// and reloads it only when the ring looks full or empty. Push and pop make
// no syscall and allocate nothing.
//
// The two processes do not trust each other: indices read from shared
// memory are checked (head - tail never exceeds the capacity) and a ring
// whose peer broke that rule reports kCorrupt instead of reading garbage.
//
// Wake-ups (completion channels): the consumer arms the ring and then
// sleeps on an eventfd; the producer, after publishing, looks at the arm
// word and writes the eventfd only when armed, so nothing is paid per
// completion while nobody waits.
#ifndef ROCEMU_VERBS_WIRE_SHM_RING_H_
#define ROCEMU_VERBS_WIRE_SHM_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rocemu::verbs {

inline constexpr size_t kCacheLine = 64;
inline constexpr uint32_t kRingMagic = 0x524e4752;  // "RGNR"
inline constexpr uint32_t kRingLayoutVersion = 3;

// How a consumer wants to be woken (ibv_req_notify_cq's solicited_only).
enum class ArmMode : uint32_t {
  kNone = 0,
  kNext = 1,       // the next entry
  kSolicited = 2,  // the next solicited or unsuccessful entry
};

// The first bytes of the shared mapping. Layout is part of the daemon-
// library protocol (kRingLayoutVersion).
struct RingHeader {
  alignas(kCacheLine) uint32_t magic;
  uint32_t layout_version;
  uint32_t slot_size;
  uint32_t capacity;                               // a power of two
  alignas(kCacheLine) std::atomic<uint64_t> head;  // producer-owned
  alignas(kCacheLine) std::atomic<uint64_t> tail;  // consumer-owned
  // Consumer-owned: entries whose work is over (a receive queue's WQEs
  // completed). The producer bounds its outstanding entries by it, so a
  // queue holds at most its granted depth even though the consumer frees
  // slots as soon as it has copied them.
  std::atomic<uint64_t> retired;
  // Consumer writes an ArmMode; the producer swaps it back to kNone when it
  // signals. `signals` counts the wake-ups so a channel shared by several
  // rings can tell which of them fired.
  alignas(kCacheLine) std::atomic<uint32_t> arm;
  std::atomic<uint64_t> signals;
  // Work queues: set by the producer when it published work the consumer
  // has not been told about (verbs/wire/doorbell.h); cleared by the consumer.
  std::atomic<uint32_t> doorbell;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(RingHeader) == 4 * kCacheLine);

enum class RingResult : uint8_t {
  kOk,
  kFull,     // producer: no free slot
  kEmpty,    // consumer: nothing to take
  kCorrupt,  // the peer wrote indices that cannot be
};

// One mapping of a ring. Move-only; unmaps (and closes its fd) on
// destruction. Producer and consumer are each used by one thread.
class ShmRing {
 public:
  ShmRing() = default;
  ~ShmRing();
  ShmRing(ShmRing&& other) noexcept;
  ShmRing& operator=(ShmRing&& other) noexcept;
  ShmRing(const ShmRing&) = delete;
  ShmRing& operator=(const ShmRing&) = delete;

  // A new ring with at least `min_entries` slots of `slot_size` bytes
  // (rounded up to a multiple of 8). `name` labels the memfd (seen in
  // /proc/<pid>/fd). The fd stays open for handing over (fd()).
  static absl::StatusOr<ShmRing> Create(const char* name, uint32_t slot_size,
                                        uint32_t min_entries);
  // Maps a ring received from the peer; takes ownership of `fd`. Refuses a
  // file that is not a sealed ring of exactly `slot_size` slots, whose
  // header does not match its size, or that is larger than `max_entries`.
  static absl::StatusOr<ShmRing> Attach(int fd, uint32_t slot_size,
                                        uint32_t max_entries);

  bool valid() const { return hdr_ != nullptr; }
  int fd() const { return fd_; }
  // Closes the fd after it was handed over; the mapping stays.
  void CloseFd();
  uint32_t capacity() const { return capacity_; }
  uint32_t slot_size() const { return slot_size_; }
  // The bytes of the mapping (header and slots, whole pages).
  size_t map_bytes() const { return map_len_; }

  // --- producer ---
  // A free slot to fill, or nullptr (full or corrupt: see last result).
  void* ProducerSlot() {
    if (head_ - cached_tail_ >= capacity_) {
      cached_tail_ = hdr_->tail.load(std::memory_order_acquire);
      if (head_ - cached_tail_ > capacity_) {
        result_ = RingResult::kCorrupt;
        return nullptr;
      }
      if (head_ - cached_tail_ == capacity_) {
        result_ = RingResult::kFull;
        return nullptr;
      }
    }
    return Slot(head_);
  }
  // Publishes the slot returned by ProducerSlot().
  void Publish() {
    ++head_;
    hdr_->head.store(head_, std::memory_order_release);
  }
  // Batches: the free slot `ahead` places after the next one (ahead 0 is
  // ProducerSlot()), or nullptr; slots filled this way become visible to
  // the consumer together with one PublishN(ahead + 1), so a chain of work
  // requests costs one release store.
  void* ProducerSlotAhead(uint32_t ahead) {
    if (head_ + ahead - cached_tail_ >= capacity_) {
      cached_tail_ = hdr_->tail.load(std::memory_order_acquire);
      if (head_ - cached_tail_ > capacity_) {
        result_ = RingResult::kCorrupt;
        return nullptr;
      }
      if (head_ + ahead - cached_tail_ >= capacity_) {
        result_ = RingResult::kFull;
        return nullptr;
      }
    }
    return Slot(head_ + ahead);
  }
  void PublishN(uint32_t n) {
    if (n == 0) return;
    head_ += n;
    hdr_->head.store(head_, std::memory_order_release);
  }
  template <typename T>
  RingResult Push(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    void* s = ProducerSlot();
    if (s == nullptr) return result_;
    std::memcpy(s, &v, sizeof(T));
    Publish();
    return RingResult::kOk;
  }
  // Entries the producer may still publish (0 when full or corrupt).
  uint32_t FreeSlots() {
    cached_tail_ = hdr_->tail.load(std::memory_order_acquire);
    const uint64_t used = head_ - cached_tail_;
    return used > capacity_ ? 0 : static_cast<uint32_t>(capacity_ - used);
  }

  // --- consumer ---
  // The oldest published slot, or nullptr (empty or corrupt).
  const void* ConsumerSlot() {
    if (tail_ == cached_head_) {
      cached_head_ = hdr_->head.load(std::memory_order_acquire);
      if (cached_head_ - tail_ > capacity_) {
        result_ = RingResult::kCorrupt;
        cached_head_ = tail_;
        return nullptr;
      }
      if (tail_ == cached_head_) {
        result_ = RingResult::kEmpty;
        return nullptr;
      }
    }
    return Slot(tail_);
  }
  // Gives the slot returned by ConsumerSlot() back to the producer.
  void Release() {
    ++tail_;
    hdr_->tail.store(tail_, std::memory_order_release);
  }
  // Consumer batches: the published slot `ahead` places after the oldest
  // (ahead 0 is ConsumerSlot()), or nullptr; ReleaseN(k) gives k back with
  // one release store.
  const void* ConsumerSlotAhead(uint32_t ahead) {
    if (cached_head_ - tail_ <= ahead) {
      cached_head_ = hdr_->head.load(std::memory_order_acquire);
      if (cached_head_ - tail_ > capacity_) {
        result_ = RingResult::kCorrupt;
        cached_head_ = tail_;
        return nullptr;
      }
      if (cached_head_ - tail_ <= ahead) {
        result_ = RingResult::kEmpty;
        return nullptr;
      }
    }
    return Slot(tail_ + ahead);
  }
  void ReleaseN(uint32_t n) {
    if (n == 0) return;
    tail_ += n;
    hdr_->tail.store(tail_, std::memory_order_release);
  }
  template <typename T>
  RingResult Pop(T* out) {
    static_assert(std::is_trivially_copyable_v<T>);
    const void* s = ConsumerSlot();
    if (s == nullptr) return result_;
    std::memcpy(out, s, sizeof(T));
    Release();
    return RingResult::kOk;
  }
  // --- doorbells (verbs/wire/doorbell.h) ---
  // Producer: true when the flag was clear (the caller pushes a doorbell).
  bool RingDoorbell() {
    return hdr_->doorbell.exchange(1, std::memory_order_seq_cst) == 0;
  }
  // Consumer: clears the flag before draining the ring.
  void ClearDoorbell() { hdr_->doorbell.store(0, std::memory_order_seq_cst); }
  bool doorbell_rung() const {
    return hdr_->doorbell.load(std::memory_order_acquire) != 0;
  }
  // Consumer: anything published and not taken yet (no side effects).
  bool HasPending() const {
    return hdr_->head.load(std::memory_order_acquire) != tail_;
  }

  // --- outstanding work (receive queues) ---
  // Producer: entries published so far, and how many of them are retired.
  uint64_t produced() const { return head_; }
  uint64_t retired() const {
    return hdr_->retired.load(std::memory_order_acquire);
  }
  // Consumer: drops every published entry unread and retires them all
  // (a queue reset). A corrupt head is left alone.
  void DiscardAll() {
    const uint64_t h = hdr_->head.load(std::memory_order_acquire);
    if (h - tail_ > capacity_) return;
    tail_ = cached_head_ = h;
    hdr_->tail.store(tail_, std::memory_order_release);
    hdr_->retired.store(h, std::memory_order_release);
  }
  // Consumer: `n` more entries are done.
  void Retire(uint64_t n) {
    hdr_->retired.store(hdr_->retired.load(std::memory_order_relaxed) + n,
                        std::memory_order_release);
  }
  // Consumer: every entry up to and including the one it took as
  // `index` (the low 32 bits of consumed() then) is done; never moves
  // back (an older entry's completion may come later, e.g. after a reset
  // discarded the ring).
  void RetireThrough(uint32_t index) {
    const uint64_t r = hdr_->retired.load(std::memory_order_relaxed);
    const uint32_t ahead = index + 1 - static_cast<uint32_t>(r);
    if (static_cast<int32_t>(ahead) > 0) {
      hdr_->retired.store(r + ahead, std::memory_order_release);
    }
  }
  // Consumer: entries taken so far (the index the next one is taken at).
  uint64_t consumed() const { return tail_; }
  // Either side: the slot of entry `index`, whatever it holds now (the
  // caller knows from the indices that it was not reused).
  const void* SlotAt(uint64_t index) const { return Slot(index); }

  // Why the last ProducerSlot/ConsumerSlot returned nullptr.
  RingResult last_result() const { return result_; }

  // --- wake-ups ---
  // Consumer: ask for a signal on the next entry (or solicited entry). The
  // caller polls once more after arming, as ibv_req_notify_cq requires.
  void Arm(ArmMode mode) {
    hdr_->arm.store(static_cast<uint32_t>(mode), std::memory_order_seq_cst);
  }
  // Producer, after Publish(): true when the consumer is armed for this
  // entry; the arm is then consumed (one signal per Arm) and the caller
  // writes the eventfd. One atomic load when nobody waits.
  bool TakeArm(bool solicited_or_error) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    uint32_t a = hdr_->arm.load(std::memory_order_relaxed);
    while (a != 0) {
      if (a == static_cast<uint32_t>(ArmMode::kSolicited) &&
          !solicited_or_error) {
        return false;
      }
      if (hdr_->arm.compare_exchange_weak(a, 0, std::memory_order_acq_rel)) {
        hdr_->signals.fetch_add(1, std::memory_order_release);
        return true;
      }
    }
    return false;
  }
  uint64_t signals() const {
    return hdr_->signals.load(std::memory_order_acquire);
  }
  bool armed() const { return hdr_->arm.load(std::memory_order_acquire) != 0; }

  // --- replacing a ring (ibv_resize_cq) ---
  // Producer, while the consumer is known to be idle: entries published
  // and not consumed yet.
  uint64_t Unconsumed() const {
    return head_ - hdr_->tail.load(std::memory_order_acquire);
  }
  // Producer: publishes this ring's unconsumed entries, in order, into
  // `dst` (whose producer this caller also is) and carries the consumer's
  // arm over. False if `dst` lacks room or the consumer index is corrupt.
  bool MoveUnconsumedTo(ShmRing& dst) {
    const uint64_t tail = hdr_->tail.load(std::memory_order_acquire);
    if (head_ - tail > capacity_ || head_ - tail > dst.FreeSlots()) {
      return false;
    }
    for (uint64_t i = tail; i != head_; ++i) {
      std::memcpy(dst.ProducerSlot(), Slot(i), slot_size_);
      dst.Publish();
    }
    dst.hdr_->arm.store(hdr_->arm.load(std::memory_order_acquire),
                        std::memory_order_release);
    return true;
  }

 private:
  void* Slot(uint64_t index) const {
    return slots_ + (index & (capacity_ - 1)) * slot_size_;
  }
  void Reset();

  RingHeader* hdr_ = nullptr;
  uint8_t* slots_ = nullptr;
  size_t map_len_ = 0;
  int fd_ = -1;
  uint32_t capacity_ = 0;
  uint32_t slot_size_ = 0;
  // Private (never shared) copies: this side's index and the last seen
  // index of the other side.
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  uint64_t cached_head_ = 0;
  uint64_t cached_tail_ = 0;
  RingResult result_ = RingResult::kOk;
};

// An eventfd for completion-channel wake-ups.
class EventFd {
 public:
  EventFd() = default;
  explicit EventFd(int fd) : fd_(fd) {}
  ~EventFd();
  EventFd(EventFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  EventFd& operator=(EventFd&& o) noexcept;
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;

  static absl::StatusOr<EventFd> Create();
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Adds one to the counter (never blocks: the counter cannot realistically
  // reach its 2^64-2 limit).
  void Signal() const;
  // Blocks until signalled (timeout_ms < 0: for ever); returns the counter
  // value consumed, 0 on timeout. An interrupted wait returns 0.
  uint64_t Wait(int timeout_ms) const;

 private:
  int fd_ = -1;
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_WIRE_SHM_RING_H_
