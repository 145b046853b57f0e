// The rocemu C API: protection domains, shared buffers and memory regions.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <span>

#include "verbs/client/client_control.h"
#include "verbs/client/client_memory.h"
#include "verbs/client/client_objects.h"
#include "verbs/client/client_remap.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/ring_slots.h"

namespace wire = rocemu::verbs::wire;
using namespace rocemu::verbs::client;  // NOLINT: the library's own internals

extern "C" {

rocemu_pd* rocemu_alloc_pd(rocemu_context* ctx) {
  wire::HandleResp resp{};
  const int err = Call(ctx, wire::MsgType::kAllocPd, wire::Empty{}, &resp);
  if (err != 0) return Fail<rocemu_pd>(err);
  return new rocemu_pd{ctx, resp.handle};
}

int rocemu_alloc_mw(rocemu_pd* pd, int type, uint32_t* rkey) {
  wire::AllocMwReq req{pd->handle, static_cast<uint32_t>(type)};
  wire::HandleResp resp{};
  const int err = Call(pd->ctx, wire::MsgType::kAllocMw, req, &resp);
  if (err == 0) *rkey = resp.handle;
  return err;
}

int rocemu_dealloc_mw(rocemu_pd* pd, uint32_t rkey) {
  return Released(pd->ctx, Handle(pd->ctx, wire::MsgType::kDeallocMw, rkey));
}

int rocemu_dealloc_pd(rocemu_pd* pd) {
  const int err =
      Released(pd->ctx, Handle(pd->ctx, wire::MsgType::kDeallocPd, pd->handle));
  if (err == 0) delete pd;
  return err;
}

rocemu_buf* rocemu_alloc_buf(rocemu_context* ctx, size_t length) {
  if (length == 0) return Fail<rocemu_buf>(EINVAL);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t map_len = (length + page - 1) / page * page;
  const int fd = memfd_create("rocemu-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return nullptr;
  // Sealed so the daemon's mapping can never lose its pages under it.
  if (ftruncate(fd, static_cast<off_t>(map_len)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int e = errno;
    close(fd);
    return Fail<rocemu_buf>(e);
  }
  void* p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return Fail<rocemu_buf>(e);
  }
  auto* impl = new BufImpl{{p, length}, fd, map_len};
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->bufs.push_back(&impl->pub);
  return &impl->pub;
}

int rocemu_free_buf(rocemu_buf* buf) {
  // The bookkeeping stays in the context's list (freed with it); the daemon
  // keeps its own mapping for regions still registered in the buffer.
  BufImpl* impl = ImplOf(buf);
  if (impl->pub.addr == nullptr) return EINVAL;
  munmap(impl->pub.addr, impl->map_len);
  close(impl->fd);
  impl->fd = -1;
  impl->pub.addr = nullptr;
  impl->pub.length = 0;
  return 0;
}

rocemu_mr* rocemu_reg_mr(rocemu_pd* pd, void* addr, size_t length, int access) {
  return rocemu_reg_mr_iova(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                            access);
}

}  // extern "C"

namespace rocemu::verbs::client {

rocemu_mr* RegMr(rocemu_pd* pd, void* addr, size_t length, uint64_t iova,
                 int access, bool device_memory) {
  rocemu_context* ctx = pd->ctx;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  BufImpl* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    for (rocemu_buf* b : ctx->bufs) {
      const auto base = reinterpret_cast<uintptr_t>(b->addr);
      if (b->addr != nullptr && a >= base && length <= b->length &&
          a - base <= b->length - length) {
        found = ImplOf(b);
        break;
      }
    }
  }
  // Empty regions only inside a library buffer: a zero-length DM MR.
  if (length == 0 && found == nullptr) return Fail<rocemu_mr>(EINVAL);
  wire::RegMrReq req{};
  req.pd = pd->handle;
  req.access = static_cast<uint32_t>(access) |
               (device_memory ? wire::kRegMrDeviceMemory : 0u);
  req.iova = iova;
  req.length = length;
  // Inside a library buffer: the daemon maps its memfd. Ordinary private
  // memory is moved onto a memfd of its own (client_remap.h) so the daemon
  // maps that. Anything else: no fd, the daemon reaches this process's
  // memory with process_vm_*.
  int fd = -1;
  // On-demand paging: the daemon reaches the pages as they are at each
  // access, so nothing is moved.
  if ((access & ROCEMU_ACCESS_ON_DEMAND) == 0) {
    if (found != nullptr) {
      fd = found->fd;
      req.offset = a - reinterpret_cast<uintptr_t>(found->pub.addr);
    } else if (std::optional<SharedRange> shared = ShareRange(addr, length)) {
      fd = shared->fd;
      req.offset = shared->offset;
    }
  }
  // A process region is read at the addresses the daemon is given.
  if (fd < 0 && iova != a) return Fail<rocemu_mr>(EOPNOTSUPP);
  wire::RegMrResp resp{};
  const int err = Call(ctx, wire::MsgType::kRegMr, req, &resp,
                       std::span<const int>(&fd, fd >= 0 ? 1u : 0u));
  if (err != 0) return Fail<rocemu_mr>(err);
  return new rocemu_mr{pd, addr, length, resp.lkey, resp.rkey, access};
}

}  // namespace rocemu::verbs::client

extern "C" {

rocemu_mr* rocemu_reg_mr_iova(rocemu_pd* pd, void* addr, size_t length,
                              uint64_t iova, int access) {
  // kRegMrDeviceMemory is the library's own word, never the caller's.
  if ((static_cast<uint32_t>(access) & wire::kRegMrDeviceMemory) != 0) {
    return Fail<rocemu_mr>(EINVAL);
  }
  return RegMr(pd, addr, length, iova, access, /*device_memory=*/false);
}

int rocemu_rereg_mr(rocemu_mr* mr, int flags, rocemu_pd* pd, int access) {
  if (flags == 0 || (flags & ~(ROCEMU_REREG_PD | ROCEMU_REREG_ACCESS)) != 0 ||
      ((flags & ROCEMU_REREG_PD) != 0 && pd == nullptr)) {
    return EINVAL;
  }
  wire::ReregMrReq req{};
  req.key = mr->lkey;
  req.flags = static_cast<uint32_t>(flags);
  req.pd = (flags & ROCEMU_REREG_PD) != 0 ? pd->handle : 0;
  req.access = static_cast<uint32_t>(access);
  const int err = Call<wire::ReregMrReq, wire::Empty>(
      mr->pd->ctx, wire::MsgType::kReregMr, req, nullptr);
  if (err != 0) return err;
  if ((flags & ROCEMU_REREG_PD) != 0) mr->pd = pd;
  if ((flags & ROCEMU_REREG_ACCESS) != 0) mr->access = access;
  return 0;
}

int rocemu_dereg_mr(rocemu_mr* mr) {
  const int err = Released(
      mr->pd->ctx, Handle(mr->pd->ctx, wire::MsgType::kDeregMr, mr->lkey));
  if (err == 0) delete mr;
  return err;
}

}  // extern "C"
