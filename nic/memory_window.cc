// Memory windows (IBTA 10.6.7): keys that grant remote access to part of a
// region, bound and re-bound by work requests at the speed of the send
// queue instead of a registration. They live in the region table so that
// one R_Key lookup finds either.
#include "absl/strings/str_format.h"
#include "nic/mr_table.h"

namespace rocemu::nic {

absl::StatusOr<uint32_t> MrTable::AllocMw(ClientId client, PdHandle pd,
                                          uint8_t type) {
  if (type != 1 && type != 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("memory window type %u", type));
  }
  if (!pds_.OwnedBy(pd, client)) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  return Insert(client, pd, std::make_unique<MemoryRegion>(pd, type));
}

void MrTable::Unbind(MemoryRegion& mw) {
  if (mw.parent_ != nullptr) --mw.parent_->windows_bound_;
  mw.parent_ = nullptr;
  mw.valid_ = false;
  mw.iova_ = 0;
  mw.length_ = 0;
  mw.access_ = 0;
  mw.bound_qpn_ = 0;
}

absl::Status MrTable::DeallocMw(ClientId client, uint32_t rkey) {
  // The application may hold an older key byte (a type 2 bind it never
  // saw complete): the window is named by its index.
  rkey = mrs_.Current(rkey);
  MemoryRegion* mw = mrs_.Get(rkey, client);
  if (mw == nullptr || mw->mw_type() == 0) {
    return absl::NotFoundError(
        absl::StrFormat("no memory window with key 0x%08x", rkey));
  }
  Unbind(*mw);
  const PdHandle pd = mw->pd();
  absl::Status s = mrs_.Erase(rkey);
  if (s.ok()) pds_.Release(pd);
  return s;
}

MrStatus MrTable::BindMw(const MwBind& b, PdHandle pd, uint32_t qpn) {
  MemoryRegion* mw = mrs_.Get(b.mw_rkey);
  if (mw == nullptr || mw->mw_type() == 0) return MrStatus::kInvalidKey;
  // Type 1 windows are bound by ibv_bind_mw, type 2 by a posted WR; a type
  // 2 window must be free (invalidated) before it is bound again.
  if (mw->mw_type() != b.type) return MrStatus::kAccessDenied;
  if (b.type == 2 && mw->valid()) return MrStatus::kAccessDenied;
  if (mw->pd() != pd) return MrStatus::kPdMismatch;
  if ((b.new_rkey >> 8) != (b.mw_rkey >> 8)) return MrStatus::kInvalidKey;
  // Local write in a window's rights means nothing and is ignored, as
  // rxe and mlx5 do; anything else but remote rights is refused.
  if ((b.access & ~(access::kRemoteAny | access::kLocalWrite)) != 0) {
    return MrStatus::kAccessDenied;
  }
  MemoryRegion* mr = nullptr;
  if (b.length != 0) {
    mr = mrs_.Get(b.mr_lkey);
    if (mr == nullptr || mr->mw_type() != 0) return MrStatus::kInvalidKey;
    if (!mr->valid()) return MrStatus::kInvalidated;
    if (mr->pd() != pd) return MrStatus::kPdMismatch;
    if ((mr->access() & access::kMwBind) == 0) return MrStatus::kAccessDenied;
    // A window that lets peers write needs a region the RNIC may write.
    if ((b.access & (access::kRemoteWrite | access::kRemoteAtomic)) != 0 &&
        (mr->access() & access::kLocalWrite) == 0) {
      return MrStatus::kAccessDenied;
    }
    if (!mr->Contains(b.addr, b.length)) return MrStatus::kOutOfBounds;
  } else if (b.type == 1) {
    // A zero-length bind of a type 1 window unbinds it.
    Unbind(*mw);
    mw->key_ = mrs_.Rekey(b.mw_rkey, static_cast<uint8_t>(b.new_rkey));
    return MrStatus::kOk;
  }
  Unbind(*mw);
  mw->parent_ = mr;
  if (mr != nullptr) ++mr->windows_bound_;
  mw->iova_ = b.addr;
  mw->length_ = b.length;
  mw->access_ = b.access & access::kRemoteAny;
  mw->bound_qpn_ = b.type == 2 ? qpn : 0;
  mw->valid_ = true;  // a zero-length type 2 window is bound to nothing
  mw->key_ = mrs_.Rekey(b.mw_rkey, static_cast<uint8_t>(b.new_rkey));
  return MrStatus::kOk;
}

MrStatus MrTable::LocalInvalidate(uint32_t key, PdHandle pd, uint32_t qpn) {
  MemoryRegion* mr = mrs_.Get(key);
  if (mr == nullptr) return MrStatus::kInvalidKey;
  if (mr->pd() != pd) return MrStatus::kPdMismatch;
  switch (mr->mw_type()) {
    case 1:
      return MrStatus::kAccessDenied;  // type 1 windows are not invalidated
    case 2:
      if (!mr->valid()) return MrStatus::kInvalidated;
      if (mr->bound_qpn() != qpn) return MrStatus::kAccessDenied;
      Unbind(*mr);
      return MrStatus::kOk;
    default:
      if (!mr->remote_invalidate()) return MrStatus::kAccessDenied;
      mr->valid_ = false;
      return MrStatus::kOk;
  }
}

}  // namespace rocemu::nic
