// Device memory (ibv_alloc_dm, ibv_memcpy_to/from_dm, ibv_reg_dm_mr): on a
// ConnectX this is on-chip memory (MEMIC) that WQEs reach without a trip
// over PCIe. A software RNIC's own memory is what it maps from a library
// buffer, so a DM is a rocemu_alloc_buf buffer the program only reaches
// through the copy verbs, and a DM MR is a zero-based registration of part
// of it. The rules programs meet on hardware are kept: 4-byte granular
// copies, bounds, zero-based MRs only, no free while an MR uses it.
#include <atomic>
#include <cstring>

#include "verbs/client/client_memory.h"
#include "verbs/client/client_objects.h"
#include "verbs/ibverbs/dropin.h"

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

// EFAULT outside the allocation, EINVAL off the 4-byte grain (what mlx5
// returns: the hardware moves whole dwords).
int CheckDmRange(const DmImpl* d, uint64_t offset, size_t length) {
  if (offset > d->length || length > d->length - offset) return EFAULT;
  if ((offset & 3) != 0 || (length & 3) != 0) return EINVAL;
  return 0;
}

int MemcpyToDm(ibv_dm* dm, uint64_t dm_offset, const void* host_addr,
               size_t length) {
  DmImpl* d = Dm(dm);
  if (const int err = CheckDmRange(d, dm_offset, length); err != 0) {
    return err;
  }
  std::memcpy(static_cast<uint8_t*>(d->buf->addr) + dm_offset, host_addr,
              length);
  return 0;
}

int MemcpyFromDm(void* host_addr, ibv_dm* dm, uint64_t dm_offset,
                 size_t length) {
  DmImpl* d = Dm(dm);
  if (const int err = CheckDmRange(d, dm_offset, length); err != 0) {
    return err;
  }
  std::memcpy(host_addr, static_cast<const uint8_t*>(d->buf->addr) + dm_offset,
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
  auto* d = new DmImpl{};
  d->buf = buf;
  d->length = attr->length;
  ibv_dm& dm = d->dm;
  dm.context = context;
  dm.memcpy_to_dm = MemcpyToDm;
  dm.memcpy_from_dm = MemcpyFromDm;
  dm.handle = g_next_dm_handle.fetch_add(1, std::memory_order_relaxed);
  dm.comp_mask = IBV_DM_MASK_HANDLE;
  return &dm;
}

int FreeDm(ibv_dm* dm) {
  DmImpl* d = Dm(dm);
  // The kernel holds a DM while an MR uses it.
  if (d->mrs.load(std::memory_order_relaxed) != 0) return EBUSY;
  const int err = rocemu_free_buf(d->buf);
  if (err != 0) return err;
  delete d;
  return 0;
}

ibv_mr* RegDmMr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length,
                unsigned int access) {
  DmImpl* d = Dm(dm);
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
  SetMr(m, pd, rm, /*addr=*/nullptr, length);  // as ibv_cmd_reg_dm_mr
  m->dm = d;
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
