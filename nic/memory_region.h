// A registered memory region: a range [iova, iova + length) of the
// application's address space, backed either by a list of host buffer
// chunks laid end to end (the daemon maps the application's pages as they
// come, so a region is generally not contiguous in the daemon), or by the
// same range of another process's address space, reached with
// process_vm_readv/writev (nic/process_memory.h). Copies branch once on the
// kind (no virtual call) and allocate nothing; host copies cannot fail,
// process copies may (kFault).
#ifndef ROCEMU_NIC_MEMORY_REGION_H_
#define ROCEMU_NIC_MEMORY_REGION_H_

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "nic/access.h"
#include "nic/handles.h"
#include "nic/mr_status.h"

namespace rocemu::nic {

// A piece of host memory backing part of a region.
struct HostChunk {
  uint8_t* host = nullptr;
  uint64_t length = 0;
};

// A piece of the host memory behind a translated range.
struct HostSegment {
  uint8_t* host = nullptr;
  uint64_t length = 0;
};

// What backs a region.
enum class MrKind : uint8_t {
  kHost,     // chunks of this process's memory
  kProcess,  // [iova, iova + length) of process pid()
};

class MemoryRegion {
 public:
  // `chunks` must be non-empty in total length `length` (checked by the
  // table that creates regions).
  MemoryRegion(PdHandle pd, uint64_t iova, uint64_t length, AccessFlags access,
               std::span<const HostChunk> chunks);
  // A process region: the range at address `iova` of process `pid`.
  MemoryRegion(PdHandle pd, pid_t pid, uint64_t iova, uint64_t length,
               AccessFlags access);
  // A memory window (ibv_alloc_mw) of type 1 or 2, unbound: its key
  // grants nothing until a bind gives it a range of a region.
  MemoryRegion(PdHandle pd, uint8_t mw_type);

  PdHandle pd() const { return pd_; }
  uint64_t iova() const { return iova_; }
  uint64_t length() const { return length_; }
  AccessFlags access() const { return access_; }
  uint32_t key() const { return key_; }  // L_Key == R_Key
  uint32_t lkey() const { return key_; }
  uint32_t rkey() const { return key_; }
  bool valid() const { return valid_; }
  // A fast-registration region (IB_MR_TYPE_MEM_REG) that SEND_WITH_INV may
  // invalidate; ibv_reg_mr regions may not (rxe and mlx5 refuse them).
  bool remote_invalidate() const { return remote_invalidate_; }
  size_t num_chunks() const { return chunks_.size(); }
  MrKind kind() const { return kind_; }
  // Memory windows (IBTA 10.6.7): 0 for a region, else the window type.
  // A window's iova/length/access are what it is bound to, within
  // `parent()`; valid() says it is bound. Type 2 windows are bound to
  // one QP.
  uint8_t mw_type() const { return mw_type_; }
  const MemoryRegion* parent() const { return parent_; }
  uint32_t bound_qpn() const { return bound_qpn_; }
  uint32_t windows_bound() const { return windows_bound_; }
  pid_t pid() const { return pid_; }  // 0 for a host region

  // [va, va + len) lies inside the region without wrapping. len == 0 is
  // inside when va is within [iova, iova + length].
  bool Contains(uint64_t va, uint64_t len) const {
    if (va < iova_) return false;
    const uint64_t off = va - iova_;
    return off <= length_ && len <= length_ - off;
  }

  // Host segments behind [va, va + len), which must be Contained. Fills at
  // most out.size() segments and returns how many; *covered (if given) is
  // the number of bytes they span, less than len when out is too small.
  // A process region has no host segments: 0, *covered = 0.
  size_t Translate(uint64_t va, uint64_t len, std::span<HostSegment> out,
                   uint64_t* covered = nullptr) const;

  // Copies between the region and a flat buffer; the range must be
  // Contained (the caller checked the key). kOk, or kFault when a process
  // region's pages could not be reached (nothing is guaranteed about the
  // bytes then).
  MrStatus CopyOut(uint64_t va, std::span<uint8_t> dst) const {
    if (kind_ != MrKind::kHost) return ProcessCopyOut(va, dst);
    HostCopyOut(va, dst);
    return MrStatus::kOk;
  }
  MrStatus CopyIn(uint64_t va, std::span<const uint8_t> src) const {
    if (kind_ != MrKind::kHost) return ProcessCopyIn(va, src);
    HostCopyIn(va, src);
    return MrStatus::kOk;
  }

  // Atomic operand access in host byte order (the target may straddle two
  // chunks). A process region's operand is 8-byte aligned, so it lies in
  // one page: a load or store moves all 8 bytes or none.
  MrStatus Load64(uint64_t va, uint64_t* value) const;
  MrStatus Store64(uint64_t va, uint64_t value) const;
  // RDMA ATOMIC WRITE's store: one aligned 8-byte store, with release
  // order after what the responder placed before (no reader sees half of
  // it). The host address must be 8-byte aligned as well as `va` (an iova
  // region may shift it): kMisaligned otherwise, as rxe checks both. A
  // process region's 8 aligned bytes go in one process_vm_writev.
  MrStatus AtomicStore64(uint64_t va, uint64_t value) const;

 private:
  friend class MrTable;
  // The chunk holding region offset `off` (< length_).
  size_t ChunkAt(uint64_t off) const;
  void HostCopyOut(uint64_t va, std::span<uint8_t> dst) const;
  void HostCopyIn(uint64_t va, std::span<const uint8_t> src) const;
  MrStatus ProcessCopyOut(uint64_t va, std::span<uint8_t> dst) const;
  MrStatus ProcessCopyIn(uint64_t va, std::span<const uint8_t> src) const;

  PdHandle pd_;
  uint64_t iova_;
  uint64_t length_;
  AccessFlags access_;
  uint32_t key_ = 0;
  bool valid_ = true;
  bool remote_invalidate_ = false;
  MrKind kind_ = MrKind::kHost;
  pid_t pid_ = 0;
  uint8_t mw_type_ = 0;
  MemoryRegion* parent_ = nullptr;  // windows: the region bound to
  uint32_t bound_qpn_ = 0;          // type 2 windows
  uint32_t windows_bound_ = 0;      // regions: windows bound into them
  std::vector<HostChunk> chunks_;
  std::vector<uint64_t> starts_;  // region offset of each chunk
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_MEMORY_REGION_H_
