// Protection domains, memory regions (any memory of the process: the
// daemon maps library buffers and reaches everything else itself, see
// docs/verbs.md), re-registration and fork support (imports: import.cc).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "verbs/client/client_objects.h"
#include "verbs/ibverbs/dropin.h"
#include "verbs/ibverbs/import.h"

namespace rocemu::ibverbs {
namespace {

std::atomic<bool> g_fork_initialized{false};

// Access bits a rocemu MR understands; the optional range
// (IBV_ACCESS_OPTIONAL_RANGE, e.g. RELAXED_ORDERING) is a hint a device may
// ignore, as libibverbs documents.
constexpr unsigned kSupportedAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_HUGETLB |
    IBV_ACCESS_ON_DEMAND | kAccessFlushGlobal;

int CheckAccess(unsigned access) {
  access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  if ((access & IBV_ACCESS_ZERO_BASED) != 0) {
    return EOPNOTSUPP;  // zero-based windows are not offered
  }
  if ((access & ~kSupportedAccess) != 0) return EINVAL;
  // IBTA 10.6.3.1: remote write or atomic access needs local write.
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
      (access & IBV_ACCESS_LOCAL_WRITE) == 0) {
    return EINVAL;
  }
  return 0;
}

int RocemuAccess(unsigned access) {
  static_assert(static_cast<int>(IBV_ACCESS_ON_DEMAND) ==
                static_cast<int>(ROCEMU_ACCESS_ON_DEMAND));
  return static_cast<int>(access &
                          (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                           IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND |
                           kAccessFlushGlobal));
}

ibv_mr* RegMr(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
              unsigned access) {
  if (const int err = CheckAccess(access); err != 0) {
    return FailNull<ibv_mr>(err);
  }
  // Implicit ODP (the whole address space) is the only region at NULL.
  if (addr == nullptr &&
      !((access & IBV_ACCESS_ON_DEMAND) != 0 && length == SIZE_MAX)) {
    return FailNull<ibv_mr>(EINVAL);
  }
  PdImpl* p = Pd(pd);
  rocemu_mr* rm =
      rocemu_reg_mr_iova(p->rp, addr, length, iova, RocemuAccess(access));
  if (rm == nullptr) return nullptr;
  auto* m = new MrImpl{};
  SetMr(m, pd, rm, addr, length);
  return &m->mr;
}

}  // namespace

void SetMr(MrImpl* m, ibv_pd* pd, rocemu_mr* rm, void* addr, size_t length) {
  m->rm = rm;
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->mr.handle = rm->lkey;
  m->mr.lkey = rm->lkey;
  m->mr.rkey = rm->rkey;
  RegisterMr(m);
}

// ibv_advise_mr: a prefetch of ODP pages. The pages are this process's
// own, so the library faults them in itself (MADV_POPULATE_READ/WRITE,
// what a page fault would do, contents untouched); NO_FAULT asks for
// nothing to be faulted and is done at once. Ranges nothing maps fail
// with EFAULT, as the kernel's prefetch does.
int AdviseMr(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags,
             ibv_sge* sg_list, uint32_t num_sge) {
  (void)pd;
  if (num_sge == 0 || sg_list == nullptr ||
      (flags & ~static_cast<uint32_t>(IBV_ADVISE_MR_FLAG_FLUSH)) != 0) {
    return EINVAL;
  }
  int populate;
  switch (advice) {
    case IBV_ADVISE_MR_ADVICE_PREFETCH:
      populate = MADV_POPULATE_READ;
      break;
    case IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE:
      populate = MADV_POPULATE_WRITE;
      break;
    case IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT:
      return 0;
    default:
      return EOPNOTSUPP;
  }
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (uint32_t i = 0; i < num_sge; ++i) {
    if (sg_list[i].length == 0) continue;
    const uintptr_t start = sg_list[i].addr / page * page;
    const uintptr_t end =
        (sg_list[i].addr + sg_list[i].length + page - 1) / page * page;
    if (madvise(reinterpret_cast<void*>(start), end - start, populate) != 0) {
      return errno == EINVAL ? EOPNOTSUPP : EFAULT;  // EINVAL: old kernel
    }
  }
  return 0;
}

// The allocators are accepted and never called: a provider calls them for
// the buffers it allocates, and rocemu's queue buffers are not the
// library's to allocate (they are the daemon's shared memory, mapped at
// creation). No thread domains exist (ibv_alloc_td refuses), so `td` must
// be null.
ibv_pd* AllocParentDomain(ibv_context* context,
                          ibv_parent_domain_init_attr* attr) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_pd>(EIO);
  constexpr uint32_t kKnownMask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                  IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  if (attr == nullptr || attr->pd == nullptr || attr->pd->context != context ||
      attr->td != nullptr || (attr->comp_mask & ~kKnownMask) != 0) {
    return FailNull<ibv_pd>(EINVAL);
  }
  PdImpl* base = Pd(attr->pd);
  if (base->protection_domain != nullptr) {
    return FailNull<ibv_pd>(EINVAL);  // over a PD, not a parent domain
  }
  auto* p = new PdImpl{};
  p->rp = base->rp;
  p->protection_domain = base;
  p->pd.context = context;
  p->pd.handle = attr->pd->handle;
  base->parent_domains.fetch_add(1, std::memory_order_relaxed);
  return &p->pd;
}

void FillMemoryOps(CtxImpl* ctx) {
  ctx->vctx.alloc_parent_domain = AllocParentDomain;
  FillMwOps(ctx);
  ctx->vctx.advise_mr = AdviseMr;
  FillDmOps(ctx);
}

}  // namespace rocemu::ibverbs

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

extern "C" {

ibv_pd* rocemu_ibv_alloc_pd(ibv_context* context) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_pd>(EIO);
  rocemu_pd* rp = rocemu_alloc_pd(ctx->rc);
  if (rp == nullptr) return nullptr;
  auto* p = new PdImpl{};
  p->rp = rp;
  p->pd.context = context;
  p->pd.handle = rp->handle;
  RegisterPd(p);
  return &p->pd;
}

int rocemu_ibv_dealloc_pd(ibv_pd* pd) {
  PdImpl* p = Pd(pd);
  if (p->protection_domain != nullptr) {  // a parent domain
    pthread_mutex_lock(&pd->context->mutex);
    const bool twice = p->retired;
    if (!twice) {
      p->retired = true;
      p->protection_domain->parent_domains.fetch_sub(1,
                                                     std::memory_order_relaxed);
      Ctx(pd->context)->retired_parent_domains.push_back(pd);
    }
    pthread_mutex_unlock(&pd->context->mutex);
    return twice ? EINVAL : 0;
  }
  if (p->parent_domains.load(std::memory_order_relaxed) > 0) return EBUSY;
  rocemu_context* rc = p->rp->ctx;
  const uint32_t handle = p->rp->handle;
  const int err = rocemu_dealloc_pd(p->rp);
  if (err != 0) return err;
  ForgetPd(rc, handle);
  delete p;
  return 0;
}

ibv_mr* rocemu_ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return RegMr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
               static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                        int access) {
  return RegMr(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  return RegMr(pd, addr, length, iova, access);
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length,
                          uint64_t iova, int fd, int access) {
  (void)pd;
  (void)offset;
  (void)length;
  (void)iova;
  (void)fd;
  (void)access;
  return FailNull<ibv_mr>(EOPNOTSUPP);
}

int rocemu_ibv_dereg_mr(ibv_mr* mr) {
  MrImpl* m = Mr(mr);
  rocemu_context* rc = m->rm->pd->ctx;
  const uint32_t lkey = m->rm->lkey;
  const int err = rocemu_dereg_mr(m->rm);
  if (err != 0) return err;
  ForgetMr(rc, lkey);
  if (m->dm != nullptr) m->dm->mrs.fetch_sub(1, std::memory_order_relaxed);
  delete m;
  return 0;
}

// A new translation is a new registration (made first, so a failure leaves
// the old region intact), then the old one is released: the keys change,
// as on mlx5. A PD or access change alone happens in place and keeps the
// keys (rxe and ConnectX do), so a peer holding the R_Key goes on using it.
int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length,
                 int access) {
  constexpr int kKnown = IBV_REREG_MR_CHANGE_TRANSLATION |
                         IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
  if (flags == 0 || (flags & ~kKnown) != 0) return IBV_REREG_MR_ERR_INPUT;
  MrImpl* m = Mr(mr);
  // A DM MR's translation is its DM's (mlx5 offers no rereg for it).
  if (m->dm != nullptr) return IBV_REREG_MR_ERR_INPUT;
  if ((flags & IBV_REREG_MR_CHANGE_PD) != 0 && pd == nullptr) {
    return IBV_REREG_MR_ERR_INPUT;
  }
  const unsigned new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) != 0
                                  ? static_cast<unsigned>(access)
                                  : static_cast<unsigned>(m->rm->access);
  if (CheckAccess(new_access) != 0) return IBV_REREG_MR_ERR_INPUT;
  if (Dead(Ctx(mr->context))) {
    errno = EIO;
    return IBV_REREG_MR_ERR_CMD;
  }
  ibv_pd* new_pd = (flags & IBV_REREG_MR_CHANGE_PD) != 0 ? pd : mr->pd;
  if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) == 0) {
    const int err = rocemu_rereg_mr(
        m->rm, flags & (IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS),
        Pd(new_pd)->rp, RocemuAccess(new_access));
    if (err != 0) {
      errno = err;
      return IBV_REREG_MR_ERR_INPUT;  // refused: the region is unchanged
    }
    mr->pd = new_pd;
    RegisterMr(m);
    return 0;
  }
  if (length == 0) return IBV_REREG_MR_ERR_INPUT;
  rocemu_mr* fresh =
      rocemu_reg_mr(Pd(new_pd)->rp, addr, length, RocemuAccess(new_access));
  if (fresh == nullptr) return IBV_REREG_MR_ERR_INPUT;
  rocemu_context* rc = m->rm->pd->ctx;
  const uint32_t old_lkey = m->rm->lkey;
  if (rocemu_dereg_mr(m->rm) == 0) ForgetMr(rc, old_lkey);
  SetMr(m, new_pd, fresh, addr, length);
  return 0;
}

// Nothing is pinned (the daemon reaches memory on demand), so there is no
// copy-on-write hazard to protect against: fork support is always there.
int ibv_fork_init(void) {
  g_fork_initialized.store(true);
  return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

int ibv_dontfork_range(void* base, size_t size) {
  (void)base;
  (void)size;
  return 0;
}

int ibv_dofork_range(void* base, size_t size) {
  (void)base;
  (void)size;
  return 0;
}

}  // extern "C"

ROCEMU_IBV_1_1(ibv_alloc_pd);
ROCEMU_IBV_1_1(ibv_dealloc_pd);
ROCEMU_IBV_1_1(ibv_reg_mr);
ROCEMU_IBV_1_1(ibv_dereg_mr);
