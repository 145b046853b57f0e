// Device memory (ibv_alloc_dm, ibv_memcpy_to/from_dm, ibv_reg_dm_mr): on a
// ConnectX this is on-chip memory (MEMIC) that WQEs reach without a trip
// over PCIe. A software RNIC's own memory is what it maps from a library
// buffer, so a DM is a rocemu_alloc_buf buffer the program only reaches
// through the copy verbs, and a DM MR is a zero-based registration of part
// of it. The rules programs meet on hardware are kept: 4-byte granular
// copies, bounds, zero-based MRs only, no free while an MR uses it.
// Another context of the session may import a DM by handle (import.h):
// both handles reach the same buffer.
#include <atomic>
#include <cstring>
#include <memory>
#include <utility>

#include "verbs/client/client_memory.h"
#include "verbs/client/client_objects.h"
#include "verbs/ibverbs/dropin.h"
#include "verbs/ibverbs/import.h"

namespace rocemu::ibverbs {
namespace {

// What a device reports as max_dm_size, the most one allocation may take
// (a ConnectX-6's MEMIC). Allocations are not drawn from a shared pool.
constexpr uint64_t kMaxDmSize = 256 * 1024;
// Alignment a DM allocation can promise: its buffer starts on a page.
constexpr uint32_t kMaxDmLogAlign = 12;

// Access bits a DM MR may carry (mlx5's set); ZERO_BASED is required.
constexpr unsigned kDmAccess = static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE) |
                               static_cast<unsigned>(IBV_ACCESS_REMOTE_WRITE) |
                               static_cast<unsigned>(IBV_ACCESS_REMOTE_READ) |
                               static_cast<unsigned>(IBV_ACCESS_REMOTE_ATOMIC) |
                               static_cast<unsigned>(IBV_ACCESS_ZERO_BASED) |
                               static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
constexpr unsigned kZeroBasedAndHints =
    static_cast<unsigned>(IBV_ACCESS_ZERO_BASED) |
    static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);

std::atomic<uint32_t> g_next_dm_handle{1};

DmImpl* Dm(ibv_dm* dm) { return reinterpret_cast<DmImpl*>(dm); }

int MemcpyToDm(ibv_dm* dm, uint64_t dm_offset, const void* host_addr,
               size_t length);
int MemcpyFromDm(void* host_addr, ibv_dm* dm, uint64_t dm_offset,
                 size_t length);

// A handle on `shared` for `context`: the one allocated or one imported.
ibv_dm* NewDm(ibv_context* context, std::shared_ptr<DmShared> shared,
              uint32_t handle) {
  auto* d = new DmImpl{};
  d->shared = std::move(shared);
  ibv_dm& dm = d->dm;
  dm.context = context;
  dm.memcpy_to_dm = MemcpyToDm;
  dm.memcpy_from_dm = MemcpyFromDm;
  dm.handle = handle;
  dm.comp_mask = IBV_DM_MASK_HANDLE;
  return &dm;
}

// EFAULT outside the allocation, EINVAL off the 4-byte grain (what mlx5
// returns: the hardware moves whole dwords) or once the DM was freed
// through another handle.
int CheckDmRange(const DmShared& d, uint64_t offset, size_t length) {
  if (d.freed.load(std::memory_order_acquire)) return EINVAL;
  if (offset > d.length || length > d.length - offset) return EFAULT;
  if ((offset & 3) != 0 || (length & 3) != 0) return EINVAL;
  return 0;
}

int MemcpyToDm(ibv_dm* dm, uint64_t dm_offset, const void* host_addr,
               size_t length) {
  const DmShared& d = *Dm(dm)->shared;
  if (const int err = CheckDmRange(d, dm_offset, length); err != 0) {
    return err;
  }
  std::memcpy(static_cast<uint8_t*>(d.buf->addr) + dm_offset, host_addr,
              length);
  return 0;
}

int MemcpyFromDm(void* host_addr, ibv_dm* dm, uint64_t dm_offset,
                 size_t length) {
  const DmShared& d = *Dm(dm)->shared;
  if (const int err = CheckDmRange(d, dm_offset, length); err != 0) {
    return err;
  }
  std::memcpy(host_addr, static_cast<const uint8_t*>(d.buf->addr) + dm_offset,
              length);
  return 0;
}

ibv_dm* AllocDm(ibv_context* context, ibv_alloc_dm_attr* attr) {
  if (attr == nullptr || attr->comp_mask != 0 || attr->length == 0 ||
      attr->length > kMaxDmSize || attr->log_align_req > kMaxDmLogAlign) {
    return FailNull<ibv_dm>(EINVAL);
  }
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_dm>(EIO);
  rocemu_buf* buf = rocemu_alloc_buf(ctx->rc, attr->length);
  if (buf == nullptr) return nullptr;
  auto shared = std::make_shared<DmShared>();
  shared->buf = buf;
  shared->length = attr->length;
  const uint32_t handle =
      g_next_dm_handle.fetch_add(1, std::memory_order_relaxed);
  RegisterDm(ctx->rc, handle, shared);
  return NewDm(context, std::move(shared), handle);
}

int FreeDm(ibv_dm* dm) {
  DmImpl* d = Dm(dm);
  DmShared& s = *d->shared;
  // The kernel holds a DM while an MR uses it.
  if (s.mrs.load(std::memory_order_relaxed) != 0) return EBUSY;
  if (s.freed.exchange(true, std::memory_order_acq_rel)) return EINVAL;
  const int err = rocemu_free_buf(s.buf);
  if (err != 0) {
    s.freed.store(false, std::memory_order_release);
    return err;
  }
  ForgetDm(Ctx(dm->context)->rc, dm->handle);
  delete d;
  return 0;
}

ibv_mr* RegDmMr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length,
                unsigned int access) {
  const std::shared_ptr<DmShared>& d = Dm(dm)->shared;
  if (d->freed.load(std::memory_order_acquire)) return FailNull<ibv_mr>(EINVAL);
  // DM regions are zero-based: the program never sees where the memory
  // is (rdma-core refuses the call without the flag).
  // A zero length is allowed (mlx5 registers it; pyverbs does so).
  if ((access & IBV_ACCESS_ZERO_BASED) == 0 || (access & ~kDmAccess) != 0 ||
      dm_offset > d->length || length > d->length - dm_offset) {
    return FailNull<ibv_mr>(EINVAL);
  }
  // The daemon checks the rest as for any region (remote write or atomic
  // access needs local write).
  const unsigned plain = access & ~kZeroBasedAndHints;
  rocemu_mr* rm = verbs::client::RegMr(
      Pd(pd)->rp, static_cast<uint8_t*>(d->buf->addr) + dm_offset, length,
      /*iova=*/0, static_cast<int>(plain), /*device_memory=*/true);
  if (rm == nullptr) return nullptr;
  auto* m = new MrImpl{};
  m->dm = d;
  SetMr(m, pd, rm, /*addr=*/nullptr, length);  // as ibv_cmd_reg_dm_mr
  d->mrs.fetch_add(1, std::memory_order_relaxed);
  return &m->mr;
}

}  // namespace

uint64_t MaxDmSize() { return kMaxDmSize; }

void FillDmOps(CtxImpl* ctx) {
  ctx->vctx.alloc_dm = AllocDm;
  ctx->vctx.free_dm = FreeDm;
  ctx->vctx.reg_dm_mr = RegDmMr;
}

}  // namespace rocemu::ibverbs

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

extern "C" {

ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_dm>(EIO);
  std::shared_ptr<DmShared> shared = FindDm(ctx->rc, dm_handle);
  if (shared == nullptr) return FailNull<ibv_dm>(EINVAL);
  return NewDm(context, std::move(shared), dm_handle);
}

// Drops this handle only; the DM stays for its other handles.
void ibv_unimport_dm(ibv_dm* dm) {
  if (dm != nullptr) delete Dm(dm);
}

}  // extern "C"
