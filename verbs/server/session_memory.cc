// Session handlers: protection domains and memory regions.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "verbs/server/memlock.h"
#include "verbs/server/session_convert.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

absl::Status SessionServer::OnAllocPd(Client& c, wire::HandleResp* out) {
  if (absl::Status st = Charge(c, {.pds = 1}); !st.ok()) return st;
  absl::StatusOr<nic::PdHandle> pd = rnic_.AllocPd();
  if (!pd.ok()) {
    Uncharge(c, {.pds = 1});
    return pd.status();
  }
  pds_[*pd] = c.id;
  out->handle = *pd;
  return absl::OkStatus();
}

absl::Status SessionServer::OnDeallocPd(Client& c, uint32_t pd) {
  auto it = pds_.find(pd);
  if (it == pds_.end() || it->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  for (const auto& [k, mr] : mrs_) {
    if (mr->pd == pd) return absl::UnavailableError("PD has memory regions");
  }
  for (const auto& [k, qp] : qps_) {
    if (qp->pd == pd) return absl::UnavailableError("PD has queue pairs");
  }
  for (const auto& [k, srq] : srqs_) {
    if (srq->pd == pd) return absl::UnavailableError("PD has SRQs");
  }
  for (const auto& [k, ah] : ahs_) {
    if (ah.pd == pd) return absl::UnavailableError("PD has address handles");
  }
  for (const auto& [k, mw] : mws_) {
    if (mw.pd == pd) return absl::UnavailableError("PD has memory windows");
  }
  pds_.erase(it);
  ReleaseNicPd(pd);
  Uncharge(c, {.pds = 1});
  return absl::OkStatus();
}

absl::Status SessionServer::OnRegMr(Client& c, const wire::RegMrReq& r, int fd,
                                    wire::RegMrResp* out) {
  auto pd = pds_.find(r.pd);
  if (pd == pds_.end() || pd->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  const bool device_memory = (r.access & wire::kRegMrDeviceMemory) != 0;
  const uint32_t access = r.access & ~wire::kRegMrDeviceMemory;
  if (!nic::AccessFlagsConsistent(access)) {
    return absl::InvalidArgumentError("inconsistent access flags");
  }
  if (device_memory && fd < 0) {
    return absl::InvalidArgumentError("device memory is a library buffer");
  }
  // Pages pinned as rxe and mlx5 pin them (ib_umem_get): what the range
  // touches, unless the region pages on demand or is device memory.
  const uint64_t pages =
      (access & nic::access::kOnDemand) != 0 || device_memory
          ? 0
          : PagesSpanned(fd < 0 ? r.iova : r.offset, r.length, PageSize());
  if (absl::Status st = Charge(c, {.mrs = 1}); !st.ok()) return st;
  if (absl::Status st = PinPages(c, pages); !st.ok()) {
    Uncharge(c, {.mrs = 1});
    return st;
  }
  absl::StatusOr<uint32_t> key = RegisterMr(c, r, access, fd);
  if (!key.ok()) {
    UnpinPages(c, pages);
    Uncharge(c, {.mrs = 1});
    return key.status();
  }
  mrs_.at(*key)->pinned_pages = pages;
  out->lkey = out->rkey = *key;
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> SessionServer::RegisterMr(Client& c,
                                                   const wire::RegMrReq& r,
                                                   uint32_t access, int fd) {
  if (fd < 0) {
    // Arbitrary memory of the client process itself: the pid is the one
    // the kernel vouched for at accept (SO_PEERCRED), never one the client
    // names.
    if (r.offset != 0 || r.length == 0) {
      return absl::InvalidArgumentError("process region: offset 0, length > 0");
    }
    absl::StatusOr<uint32_t> key = rnic_.mr_table().RegisterProcess(
        nic::kKernelClient, r.pd, c.cred.pid, r.iova, r.length, access);
    if (!key.ok()) return key.status();
    auto mr = std::make_unique<Mr>();
    mr->owner = c.id;
    mr->pd = r.pd;
    mr->iova = r.iova;
    mr->length = r.length;
    mr->access = access;
    mr->process = true;
    mrs_[*key] = std::move(mr);
    return *key;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError("MR buffer is not a memory file");
  }
  // Without this seal the client could truncate the file under the
  // daemon's mapping and crash it with SIGBUS.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return absl::InvalidArgumentError(
        "MR buffer must be sealed against shrinking (rocemu_alloc_buf)");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (r.offset > size || r.length > size - r.offset) {
    return absl::InvalidArgumentError(
        absl::StrFormat("range [%u, +%u) outside the %u-byte buffer", r.offset,
                        r.length, size));
  }
  // An empty region (a zero-length DM MR) maps nothing and grants no byte.
  void* map = nullptr;
  size_t map_len = 0;
  nic::HostChunk chunk{};
  if (r.length != 0) {
    const size_t page = PageSize();
    const uint64_t start = r.offset / page * page;
    const uint64_t end = (r.offset + r.length + page - 1) / page * page;
    map = mmap(nullptr, end - start, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
               static_cast<off_t>(start));
    if (map == MAP_FAILED) return absl::ErrnoToStatus(errno, "mmap MR buffer");
    map_len = end - start;
    chunk = {static_cast<uint8_t*>(map) + (r.offset - start), r.length};
  }
  absl::StatusOr<uint32_t> key = rnic_.mr_table().Register(
      nic::kKernelClient, r.pd, r.iova, r.length, access, {&chunk, 1});
  if (!key.ok()) {
    if (map != nullptr) munmap(map, map_len);
    return key.status();
  }
  auto mr = std::make_unique<Mr>();
  mr->owner = c.id;
  mr->pd = r.pd;
  mr->map = map;
  mr->map_len = map_len;
  mr->iova = r.iova;
  mr->length = r.length;
  mr->access = access;
  mrs_[*key] = std::move(mr);
  return *key;
}

absl::Status SessionServer::OnDeregMr(Client& c, uint32_t key) {
  auto it = mrs_.find(key);
  if (it == mrs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such memory region");
  }
  // A region with memory windows bound into it stays (EBUSY).
  if (const nic::MemoryRegion* m = rnic_.mr_table().Find(key);
      m != nullptr && m->windows_bound() > 0) {
    return absl::UnavailableError("memory windows are bound to the region");
  }
  UnpinPages(c, it->second->pinned_pages);
  Uncharge(c, {.mrs = 1});
  ReleaseMr(key, *it->second);
  mrs_.erase(it);
  return absl::OkStatus();
}

absl::Status SessionServer::OnAllocMw(Client& c, const wire::AllocMwReq& r,
                                      wire::HandleResp* out) {
  auto pd = pds_.find(r.pd);
  if (pd == pds_.end() || pd->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  if (r.type != 1 && r.type != 2) {
    return absl::InvalidArgumentError("memory window type is 1 or 2");
  }
  absl::StatusOr<uint32_t> key = rnic_.mr_table().AllocMw(
      nic::kKernelClient, r.pd, static_cast<uint8_t>(r.type));
  if (!key.ok()) return key.status();
  mws_[*key >> 8] = {c.id, r.pd};
  out->handle = *key;
  return absl::OkStatus();
}

absl::Status SessionServer::OnDeallocMw(Client& c, uint32_t rkey) {
  auto it = mws_.find(rkey >> 8);
  if (it == mws_.end() || it->second.owner != c.id) {
    return absl::NotFoundError("no such memory window");
  }
  (void)rnic_.mr_table().DeallocMw(nic::kKernelClient, rkey);
  mws_.erase(it);
  return absl::OkStatus();
}

absl::Status SessionServer::OnReregMr(Client& c, const wire::ReregMrReq& r) {
  auto it = mrs_.find(r.key);
  if (it == mrs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such memory region");
  }
  constexpr uint32_t kAllowed =
      nic::rereg::kChangePd | nic::rereg::kChangeAccess;
  if (r.flags == 0 || (r.flags & ~kAllowed) != 0) {
    return absl::InvalidArgumentError(
        "rereg_mr: only the PD and the access flags change in place");
  }
  if ((r.flags & nic::rereg::kChangePd) != 0) {
    auto pit = pds_.find(r.pd);
    if (pit == pds_.end() || pit->second != c.id) {
      return absl::NotFoundError("no such PD");
    }
  }
  Mr& mr = *it->second;
  absl::StatusOr<uint32_t> key = rnic_.mr_table().Reregister(
      nic::kKernelClient, r.key, r.flags, r.pd, 0, 0, r.access, {},
      /*keep_key=*/true);
  if (!key.ok()) return key.status();
  if ((r.flags & nic::rereg::kChangePd) != 0) mr.pd = r.pd;
  if ((r.flags & nic::rereg::kChangeAccess) != 0) mr.access = r.access;
  return absl::OkStatus();
}

void SessionServer::ReleaseMr(uint32_t key, Mr& mr) {
  ++mr_releases_;
  (void)rnic_.mr_table().Deregister(nic::kKernelClient, key);
  if (mr.map != nullptr) munmap(mr.map, mr.map_len);
}

// The RNIC's destroy calls cannot fail here: the server checks ownership
// and use counts first, so an error would be a server bug, not the
// client's; it is not reported to the client.
void SessionServer::ReleaseNicCq(nic::CqHandle cq) {
  (void)rnic_.DestroyCq(cq);
}

void SessionServer::ReleaseNicPd(nic::PdHandle pd) {
  (void)rnic_.DeallocPd(pd);
}

void SessionServer::ReleaseNicAh(nic::AhHandle ah) {
  (void)rnic_.DestroyAh(ah);
}

}  // namespace rocemu::verbs
