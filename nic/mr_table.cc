#include "nic/mr_table.h"

#include <memory>

#include "absl/strings/str_format.h"
#include "nic/process_memory.h"

namespace rocemu::nic {

const char* MrStatusName(MrStatus s) {
  switch (s) {
    case MrStatus::kOk:
      return "ok";
    case MrStatus::kInvalidKey:
      return "invalid key";
    case MrStatus::kInvalidated:
      return "region invalidated";
    case MrStatus::kPdMismatch:
      return "protection domain mismatch";
    case MrStatus::kAccessDenied:
      return "access right missing";
    case MrStatus::kOutOfBounds:
      return "out of bounds";
    case MrStatus::kMisaligned:
      return "misaligned atomic";
    case MrStatus::kLengthExceeded:
      return "length exceeds the buffer";
    case MrStatus::kFault:
      return "memory not reachable";
  }
  return "unknown";
}

MrTable::MrTable(PdTable& pds, uint32_t max_mr, uint64_t max_mr_size)
    : pds_(pds), max_mr_size_(max_mr_size), mrs_("MR", max_mr) {}

absl::Status MrTable::ValidateRange(uint64_t iova, uint64_t length,
                                    AccessFlags access,
                                    bool allow_empty) const {
  if (!AccessFlagsConsistent(access)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "access flags 0x%x: unknown bits, or remote write/atomic without "
        "local write",
        access));
  }
  if ((length == 0 && !allow_empty) || length > max_mr_size_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MR length %u outside [%u, %u]", length,
                        allow_empty ? 0 : 1, max_mr_size_));
  }
  if (iova + length < iova) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MR [0x%x, +%u) wraps the address space", iova, length));
  }
  return absl::OkStatus();
}

absl::Status MrTable::ValidateLayout(uint64_t iova, uint64_t length,
                                     AccessFlags access,
                                     std::span<const HostChunk> chunks) const {
  // A host region may be empty: a zero-length device-memory MR
  // (ibv_reg_dm_mr), which mlx5 registers; it grants no byte.
  if (absl::Status s =
          ValidateRange(iova, length, access, /*allow_empty=*/true);
      !s.ok()) {
    return s;
  }
  uint64_t total = 0;
  for (const HostChunk& c : chunks) {
    if (c.length != 0 && c.host == nullptr) {
      return absl::InvalidArgumentError("MR chunk with a null host pointer");
    }
    if (total + c.length < total) {
      return absl::InvalidArgumentError("MR chunk lengths overflow");
    }
    total += c.length;
  }
  if (total != length) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MR chunks back %u bytes, the region has %u", total, length));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> MrTable::Register(ClientId client, PdHandle pd,
                                           uint64_t iova, uint64_t length,
                                           AccessFlags access,
                                           std::span<const HostChunk> chunks) {
  if (!pds_.OwnedBy(pd, client)) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  if (absl::Status s = ValidateLayout(iova, length, access, chunks); !s.ok()) {
    return s;
  }
  return Insert(
      client, pd,
      std::make_unique<MemoryRegion>(pd, iova, length, access, chunks));
}

absl::StatusOr<uint32_t> MrTable::RegisterProcess(ClientId client, PdHandle pd,
                                                  pid_t pid, uint64_t iova,
                                                  uint64_t length,
                                                  AccessFlags access) {
  if (!pds_.OwnedBy(pd, client)) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  if (absl::Status s = ValidateRange(iova, length, access); !s.ok()) return s;
  const absl::Status probed =
      (access & access::kOnDemand) != 0
          ? ProbeProcessAccess(pid, iova)
          : ProbeProcessRange(pid, iova, length,
                              (access & access::kLocalWrite) != 0);
  if (!probed.ok()) return probed;
  return Insert(client, pd,
                std::make_unique<MemoryRegion>(pd, pid, iova, length, access));
}

uint32_t MrTable::InvalidateProcess(pid_t pid) {
  uint32_t n = 0;
  mrs_.ForEach([&](uint32_t, MemoryRegion& mr) {
    if (mr.kind_ == MrKind::kProcess && mr.pid_ == pid) {
      mr.valid_ = false;
      ++n;
    }
  });
  return n;
}

absl::StatusOr<uint32_t> MrTable::Insert(ClientId client, PdHandle pd,
                                         std::unique_ptr<MemoryRegion> mr) {
  MemoryRegion* raw = mr.get();
  absl::StatusOr<uint32_t> key = mrs_.Insert(client, std::move(mr));
  if (!key.ok()) return key.status();
  raw->key_ = *key;
  // Cannot fail: the caller checked the PD and nothing ran in between.
  (void)pds_.Retain(pd);
  return *key;
}

absl::Status MrTable::Deregister(ClientId client, uint32_t key) {
  const MemoryRegion* mr = mrs_.Get(key, client);
  if (mr == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no MR with key 0x%08x", key));
  }
  if (mr->mw_type() != 0) {
    return absl::NotFoundError(
        absl::StrFormat("0x%08x is a memory window, not an MR", key));
  }
  // IBTA 10.6.7.2.5: a region with windows bound into it stays.
  if (mr->windows_bound() > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "MR 0x%08x has %u memory window(s) bound", key, mr->windows_bound()));
  }
  const PdHandle pd = mr->pd();
  absl::Status s = mrs_.Erase(key);
  if (s.ok()) pds_.Release(pd);
  return s;
}

absl::StatusOr<uint32_t> MrTable::Reregister(ClientId client, uint32_t key,
                                             uint32_t flags, PdHandle pd,
                                             uint64_t iova, uint64_t length,
                                             AccessFlags access,
                                             std::span<const HostChunk> chunks,
                                             bool keep_key) {
  MemoryRegion* mr = mrs_.Get(key, client);
  if (mr == nullptr || mr->mw_type() != 0) {
    return absl::NotFoundError(absl::StrFormat("no MR with key 0x%08x", key));
  }
  if (mr->windows_bound() > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "MR 0x%08x has %u memory window(s) bound", key, mr->windows_bound()));
  }
  constexpr uint32_t kAll =
      rereg::kChangeTranslation | rereg::kChangePd | rereg::kChangeAccess;
  if (flags == 0 || (flags & ~kAll) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rereg flags 0x%x invalid", flags));
  }
  const PdHandle new_pd = (flags & rereg::kChangePd) ? pd : mr->pd();
  if ((flags & rereg::kChangePd) && !pds_.OwnedBy(new_pd, client)) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  const AccessFlags new_access =
      (flags & rereg::kChangeAccess) ? access : mr->access();
  if (flags & rereg::kChangeTranslation) {
    if (absl::Status s = ValidateLayout(iova, length, new_access, chunks);
        !s.ok()) {
      return s;
    }
  } else if (!AccessFlagsConsistent(new_access)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("access flags 0x%x inconsistent", new_access));
  }
  if (new_pd != mr->pd()) {
    (void)pds_.Retain(new_pd);
    pds_.Release(mr->pd());
  }
  if (flags & rereg::kChangeTranslation) {
    MemoryRegion fresh(new_pd, iova, length, new_access, chunks);
    mr->iova_ = fresh.iova_;
    mr->length_ = fresh.length_;
    mr->chunks_ = std::move(fresh.chunks_);
    mr->starts_ = std::move(fresh.starts_);
    mr->kind_ = MrKind::kHost;
    mr->pid_ = 0;
  }
  mr->pd_ = new_pd;
  mr->access_ = new_access;
  mr->valid_ = true;
  if (!keep_key) mr->key_ = mrs_.Rekey(key);
  return mr->key_;
}

MrStatus MrTable::Check(uint32_t key, PdHandle pd, uint32_t qpn, uint64_t va,
                        uint64_t len, AccessFlags need, bool atomic,
                        bool remote, const MemoryRegion** out) const {
  *out = nullptr;
  if (len == 0 && !atomic) return MrStatus::kOk;
  const MemoryRegion* mr = mrs_.Get(key);
  if (mr == nullptr) return MrStatus::kInvalidKey;
  if (mr->mw_type() != 0 && !remote) return MrStatus::kInvalidKey;
  if (!mr->valid()) return MrStatus::kInvalidated;
  if (mr->pd() != pd) return MrStatus::kPdMismatch;
  if ((mr->access() & need) != need) return MrStatus::kAccessDenied;
  if (atomic) {
    if (len != 8) return MrStatus::kOutOfBounds;
    if (va & 7) return MrStatus::kMisaligned;
  }
  if (!mr->Contains(va, len)) return MrStatus::kOutOfBounds;
  if (mr->mw_type() != 0) {
    // A type 2 window serves only the QP it is bound to (IBTA 10.6.7.2.2);
    // the region behind a window must itself still be usable.
    if (mr->mw_type() == 2 && mr->bound_qpn() != qpn) {
      return MrStatus::kAccessDenied;
    }
    mr = mr->parent();
    if (!mr->valid()) return MrStatus::kInvalidated;
  }
  *out = mr;
  return MrStatus::kOk;
}

MrStatus MrTable::CheckRemoteFlush(uint32_t rkey, PdHandle pd, uint32_t qpn,
                                   uint64_t va, uint64_t len, bool whole_region,
                                   AccessFlags need,
                                   const MemoryRegion** out) const {
  if (whole_region || len == 0) {
    // The key alone: check it over the region's (or window's) first byte.
    const MemoryRegion* key = mrs_.Get(rkey);
    if (key == nullptr) {
      *out = nullptr;
      return MrStatus::kInvalidKey;
    }
    va = key->iova();
    len = 1;
  }
  return Check(rkey, pd, qpn, va, len, need, /*atomic=*/false,
               /*remote=*/true, out);
}

MrStatus MrTable::Invalidate(uint32_t key, PdHandle pd, uint32_t qpn) {
  MemoryRegion* mr = mrs_.Get(key);
  if (mr == nullptr) return MrStatus::kInvalidKey;
  if (mr->pd() != pd) return MrStatus::kPdMismatch;
  if (mr->mw_type() == 2) {
    if (!mr->valid() || mr->bound_qpn() != qpn) return MrStatus::kAccessDenied;
    Unbind(*mr);
    return MrStatus::kOk;
  }
  if (mr->mw_type() != 0 || !mr->remote_invalidate_) {
    return MrStatus::kAccessDenied;
  }
  mr->valid_ = false;
  return MrStatus::kOk;
}

absl::Status MrTable::AllowRemoteInvalidate(ClientId client, uint32_t key) {
  MemoryRegion* mr = mrs_.Get(key, client);
  if (mr == nullptr) return absl::NotFoundError("no such memory region");
  mr->remote_invalidate_ = true;
  return absl::OkStatus();
}

}  // namespace rocemu::nic
