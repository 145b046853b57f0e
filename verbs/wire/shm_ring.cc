#include "verbs/wire/shm_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <new>
#include <utility>

#include "absl/strings/str_format.h"

namespace rocemu::verbs {
namespace {

constexpr uint32_t kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
constexpr uint32_t kMaxSlotSize = 1u << 16;
constexpr uint32_t kMaxEntries = 1u << 20;

size_t PageRound(size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

size_t MapLength(uint32_t slot_size, uint32_t capacity) {
  return PageRound(sizeof(RingHeader) +
                   static_cast<size_t>(slot_size) * capacity);
}

absl::Status Errno(const char* what) {
  return absl::ErrnoToStatus(errno, what);
}

}  // namespace

ShmRing::~ShmRing() { Reset(); }

ShmRing::ShmRing(ShmRing&& o) noexcept { *this = std::move(o); }

ShmRing& ShmRing::operator=(ShmRing&& o) noexcept {
  if (this == &o) return *this;
  Reset();
  hdr_ = std::exchange(o.hdr_, nullptr);
  slots_ = std::exchange(o.slots_, nullptr);
  map_len_ = std::exchange(o.map_len_, 0);
  fd_ = std::exchange(o.fd_, -1);
  capacity_ = o.capacity_;
  slot_size_ = o.slot_size_;
  head_ = o.head_;
  tail_ = o.tail_;
  cached_head_ = o.cached_head_;
  cached_tail_ = o.cached_tail_;
  result_ = o.result_;
  return *this;
}

void ShmRing::Reset() {
  if (hdr_ != nullptr) munmap(hdr_, map_len_);
  hdr_ = nullptr;
  slots_ = nullptr;
  CloseFd();
}

void ShmRing::CloseFd() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

absl::StatusOr<ShmRing> ShmRing::Create(const char* name, uint32_t slot_size,
                                        uint32_t min_entries) {
  if (slot_size == 0 || slot_size > kMaxSlotSize || min_entries == 0 ||
      min_entries > kMaxEntries) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ring of %u slots of %u bytes is out of range",
                        min_entries, slot_size));
  }
  slot_size = (slot_size + 7) & ~7u;
  const uint32_t capacity = std::bit_ceil(min_entries);
  const size_t len = MapLength(slot_size, capacity);
  const int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Errno("memfd_create");
  ShmRing r;
  r.fd_ = fd;
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) return Errno("ftruncate");
  if (fcntl(fd, F_ADD_SEALS, kRequiredSeals) != 0) return Errno("F_ADD_SEALS");
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Errno("mmap");
  r.map_len_ = len;
  // A fresh memfd reads as zeros; construct the header in place so the
  // atomics are properly started.
  r.hdr_ = new (p) RingHeader{};
  r.hdr_->magic = kRingMagic;
  r.hdr_->layout_version = kRingLayoutVersion;
  r.hdr_->slot_size = slot_size;
  r.hdr_->capacity = capacity;
  r.slots_ = static_cast<uint8_t*>(p) + sizeof(RingHeader);
  r.capacity_ = capacity;
  r.slot_size_ = slot_size;
  return r;
}

absl::StatusOr<ShmRing> ShmRing::Attach(int fd, uint32_t slot_size,
                                        uint32_t max_entries) {
  ShmRing r;
  r.fd_ = fd;
  slot_size = (slot_size + 7) & ~7u;
  struct stat st;
  if (fstat(fd, &st) != 0) return Errno("fstat");
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError("ring fd is not a memory file");
  }
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 ||
      (static_cast<uint32_t>(seals) & kRequiredSeals) != kRequiredSeals) {
    return absl::InvalidArgumentError("ring memfd is not sealed");
  }
  if (static_cast<size_t>(st.st_size) < sizeof(RingHeader)) {
    return absl::InvalidArgumentError("ring file too small");
  }
  const size_t len = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Errno("mmap");
  r.map_len_ = len;
  r.hdr_ = static_cast<RingHeader*>(p);
  // Copy the geometry once: the peer may change the header later, this
  // side keeps using what it validated.
  const uint32_t cap = r.hdr_->capacity;
  if (r.hdr_->magic != kRingMagic ||
      r.hdr_->layout_version != kRingLayoutVersion ||
      r.hdr_->slot_size != slot_size || cap == 0 || !std::has_single_bit(cap) ||
      cap > max_entries || MapLength(slot_size, cap) != len) {
    return absl::InvalidArgumentError(
        "ring header does not match the expected layout");
  }
  r.slots_ = static_cast<uint8_t*>(p) + sizeof(RingHeader);
  r.capacity_ = cap;
  r.slot_size_ = slot_size;
  r.head_ = r.cached_head_ = r.hdr_->head.load(std::memory_order_acquire);
  r.tail_ = r.cached_tail_ = r.hdr_->tail.load(std::memory_order_acquire);
  if (r.head_ - r.tail_ > cap) {
    return absl::InvalidArgumentError("ring indices are inconsistent");
  }
  return r;
}

EventFd::~EventFd() {
  if (fd_ >= 0) close(fd_);
}

EventFd& EventFd::operator=(EventFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

absl::StatusOr<EventFd> EventFd::Create() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Errno("eventfd");
  return EventFd(fd);
}

void EventFd::Signal() const {
  const uint64_t one = 1;
  // EAGAIN only when the counter is saturated, which means the reader is
  // already due to wake: nothing is lost by ignoring it.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
}

uint64_t EventFd::Wait(int timeout_ms) const {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return 0;
  uint64_t v = 0;
  if (read(fd_, &v, sizeof(v)) != sizeof(v)) return 0;
  return v;
}

}  // namespace rocemu::verbs
