#include "nic/memory_region.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "nic/process_memory.h"

namespace rocemu::nic {

MemoryRegion::MemoryRegion(PdHandle pd, uint64_t iova, uint64_t length,
                           AccessFlags access,
                           std::span<const HostChunk> chunks)
    : pd_(pd), iova_(iova), length_(length), access_(access) {
  uint64_t start = 0;
  for (const HostChunk& c : chunks) {
    if (c.length == 0) continue;
    chunks_.push_back(c);
    starts_.push_back(start);
    start += c.length;
  }
}

MemoryRegion::MemoryRegion(PdHandle pd, pid_t pid, uint64_t iova,
                           uint64_t length, AccessFlags access)
    : pd_(pd),
      iova_(iova),
      length_(length),
      access_(access),
      kind_(MrKind::kProcess),
      pid_(pid) {}

MemoryRegion::MemoryRegion(PdHandle pd, uint8_t mw_type)
    : pd_(pd),
      iova_(0),
      length_(0),
      access_(0),
      valid_(false),
      mw_type_(mw_type) {}

size_t MemoryRegion::ChunkAt(uint64_t off) const {
  if (chunks_.size() == 1) return 0;
  // Last chunk whose start is <= off.
  auto it = std::upper_bound(starts_.begin(), starts_.end(), off);
  return static_cast<size_t>(it - starts_.begin()) - 1;
}

size_t MemoryRegion::Translate(uint64_t va, uint64_t len,
                               std::span<HostSegment> out,
                               uint64_t* covered) const {
  uint64_t done = 0;
  size_t n = 0;
  if (len != 0 && !out.empty() && kind_ == MrKind::kHost) {
    uint64_t off = va - iova_;
    size_t c = ChunkAt(off);
    while (done < len && n < out.size()) {
      const uint64_t in_chunk = off - starts_[c];
      const uint64_t take = std::min(chunks_[c].length - in_chunk, len - done);
      out[n++] = HostSegment{chunks_[c].host + in_chunk, take};
      done += take;
      off += take;
      ++c;
    }
  }
  if (covered != nullptr) *covered = done;
  return n;
}

void MemoryRegion::HostCopyOut(uint64_t va, std::span<uint8_t> dst) const {
  if (dst.empty()) return;
  uint64_t off = va - iova_;
  if (chunks_.size() == 1) {
    // One buffer (a malloc'd or memfd region): no chunk to look up, and the
    // caller checked the bounds.
    std::memcpy(dst.data(), chunks_[0].host + off, dst.size());
    return;
  }
  size_t c = ChunkAt(off);
  size_t done = 0;
  while (done < dst.size()) {
    const uint64_t in_chunk = off - starts_[c];
    const size_t take = static_cast<size_t>(
        std::min<uint64_t>(chunks_[c].length - in_chunk, dst.size() - done));
    std::memcpy(dst.data() + done, chunks_[c].host + in_chunk, take);
    done += take;
    off += take;
    ++c;
  }
}

void MemoryRegion::HostCopyIn(uint64_t va, std::span<const uint8_t> src) const {
  if (src.empty()) return;
  uint64_t off = va - iova_;
  if (chunks_.size() == 1) {
    std::memcpy(chunks_[0].host + off, src.data(), src.size());
    return;
  }
  size_t c = ChunkAt(off);
  size_t done = 0;
  while (done < src.size()) {
    const uint64_t in_chunk = off - starts_[c];
    const size_t take = static_cast<size_t>(
        std::min<uint64_t>(chunks_[c].length - in_chunk, src.size() - done));
    std::memcpy(chunks_[c].host + in_chunk, src.data() + done, take);
    done += take;
    off += take;
    ++c;
  }
}

MrStatus MemoryRegion::ProcessCopyOut(uint64_t va,
                                      std::span<uint8_t> dst) const {
  return ProcessRead(pid_, va, dst);
}

MrStatus MemoryRegion::ProcessCopyIn(uint64_t va,
                                     std::span<const uint8_t> src) const {
  return ProcessWrite(pid_, va, src);
}

MrStatus MemoryRegion::Load64(uint64_t va, uint64_t* value) const {
  uint8_t b[8];
  const MrStatus st = CopyOut(va, b);
  if (st == MrStatus::kOk) std::memcpy(value, b, 8);
  return st;
}

MrStatus MemoryRegion::AtomicStore64(uint64_t va, uint64_t value) const {
  if (kind_ != MrKind::kHost) return Store64(va, value);
  const uint64_t off = va - iova_;
  const size_t c = ChunkAt(off);
  const uint64_t in_chunk = off - starts_[c];
  uint8_t* p = chunks_[c].host + in_chunk;
  if (in_chunk + 8 > chunks_[c].length ||
      (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    return MrStatus::kMisaligned;
  }
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p))
      .store(value, std::memory_order_release);
  return MrStatus::kOk;
}

MrStatus MemoryRegion::Store64(uint64_t va, uint64_t value) const {
  uint8_t b[8];
  std::memcpy(b, &value, 8);
  return CopyIn(va, b);
}

}  // namespace rocemu::nic
