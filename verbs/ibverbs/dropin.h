// The drop-in libibverbs.so.1: the objects unmodified programs see.
//
// Programs compiled against <infiniband/verbs.h> reach the library two
// ways: through the exported ibv_* functions, and through function
// pointers and fields the header's inline wrappers read directly
// (ibv_context::ops for post/poll/notify, verbs_context for the _ex verbs,
// ibv_qp_ex::wr_*, ibv_cq_ex::start_poll/read_*). So every object is the
// real ABI struct as the first member of our record, and every slot an
// application may call holds a function of ours: a real one, or one that
// refuses the way libibverbs refuses on a device without the feature.
//
// Underneath, each record holds the rocemu client object (client_objects.h)
// that talks to rocemud.
#ifndef ROCEMU_VERBS_IBVERBS_DROPIN_H_
#define ROCEMU_VERBS_IBVERBS_DROPIN_H_

#include <infiniband/verbs.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "verbs/client/client_objects.h"
#include "verbs/wire/ring_slots.h"

// <infiniband/verbs.h> turns some names into macros over inline wrappers;
// this library defines the real functions behind them.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace rocemu::ibverbs {

// A device: one rocemud verbs socket. Records live until the process ends
// (libibverbs keeps its device list for the process, and contexts point at
// their device).
struct DevImpl {
  ibv_device dev;  // must be first
  // Where libibverbs keeps `verbs_device::ops`: provider libraries loaded
  // alongside (libmlx5 ...) compare it with their own to claim a device, so
  // it points at something of ours.
  const void* verbs_device_ops;
  std::string path;
  int index;
};

struct CtxImpl {
  verbs_context vctx;  // applications hold &vctx.context (its last member)
  rocemu_context* rc;
  DevImpl* dev;
  // What applications poll: epoll sets over the daemon's eventfd and the
  // control socket, so the daemon's death wakes them too, and so the
  // O_NONBLOCK an application sets is its own.
  int async_epfd;
  std::atomic<bool> fatal_reported{false};
  rocemu_device_attr attr;  // cached at open
  // Parent domains the program deallocated: freed with the context, as
  // objects created through one may still point at it (ibv_qp::pd ...).
  std::vector<ibv_pd*> retired_parent_domains;
};

// A protection domain, or a parent domain (ibv_alloc_parent_domain) over
// one: the same rocemu PD, so it goes wherever a PD goes.
struct PdImpl {
  ibv_pd pd;
  rocemu_pd* rp;
  PdImpl* protection_domain = nullptr;      // set on a parent domain
  bool retired = false;                     // a parent domain deallocated
  std::atomic<uint32_t> parent_domains{0};  // over this PD, still allocated
};

// Device memory (dm.cc): a library buffer reached only through the copy
// verbs and zero-based MRs. Shared by the DM's handles (the one allocated
// and any imported, import.h) and its MRs.
struct DmShared {
  rocemu_buf* buf;
  uint64_t length;
  std::atomic<uint32_t> mrs{0};  // DM MRs registered over it
  std::atomic<bool> freed{false};
};
struct DmImpl {
  ibv_dm dm;  // first: programs hold &dm
  std::shared_ptr<DmShared> shared;
};

struct MrImpl {
  ibv_mr mr;
  rocemu_mr* rm;
  std::shared_ptr<DmShared> dm;  // a DM MR's allocation
};
// Points m at the registration rm of [addr, +length) in pd, keys and all
// (memory.cc): a new region, a DM MR, a re-registration.
void SetMr(MrImpl* m, ibv_pd* pd, rocemu_mr* rm, void* addr, size_t length);

struct AhImpl {
  ibv_ah ah;
  rocemu_ah* ra;
};

struct ChanImpl {
  ibv_comp_channel ch;  // ch.fd is an epoll set over the eventfd
  rocemu_comp_channel* rch;
};

struct CqImpl {
  ibv_cq_ex cqx;  // ibv_cq is its first 128 bytes
  rocemu_cq* rc;
  CtxImpl* ctx;
  uint64_t wc_flags;
  // ibv_start_poll .. ibv_end_poll: the completion being read and how many
  // ring slots the batch has taken.
  verbs::CqeSlot cur;
  uint32_t taken;
  int64_t wall_offset_ns;  // the batch's wall clock minus the raw clock
  uint32_t comp_events_reported;
  uint32_t async_events_reported;
};

struct SrqImpl {
  ibv_srq srq;
  rocemu_srq* rs;
  CtxImpl* ctx;
  uint32_t events_reported;
};

// An XRC domain (xrc.cc).
struct XrcdImpl {
  ibv_xrcd xrcd;  // first: programs hold &xrcd
  rocemu_xrcd* rx;
  CtxImpl* ctx;
};
inline XrcdImpl* Xrcd(ibv_xrcd* x) { return reinterpret_cast<XrcdImpl*>(x); }

// IBV_QP_EX_WITH_FLUSH and IBV_ACCESS_FLUSH_GLOBAL of rdma-core 45, which
// Debian 12's headers (rdma-core 44) do not define. FLUSH_PERSISTENT
// (1 << 9) is not offered: no region is persistent memory.
inline constexpr uint64_t kQpExWithFlush = 1u << 11;
inline constexpr unsigned kAccessFlushGlobal = 1u << 8;

// The member rdma-core 45 appended to ibv_qp_ex (Debian 12's verbs.h, of
// rdma-core 44, ends at wr_atomic_write): a program built against newer
// headers calls ibv_wr_flush through it.
using WrFlushFn = void (*)(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr,
                           size_t len, uint8_t type, uint8_t level);

struct QpImpl {
  ibv_qp_ex qpx;       // qpx.qp_base is the ibv_qp applications see
  WrFlushFn wr_flush;  // right after qpx, where rdma-core 45 puts it
  rocemu_qp* rq;
  CtxImpl* ctx;
  bool extended;  // created with send_ops_flags: ibv_qp_to_qp_ex answers
  uint64_t send_ops_flags;
  uint32_t events_reported;
  uint32_t sq_sig_all;
  // ibv_wr_start .. ibv_wr_complete: slots filled ahead of the ring's head,
  // the one being built, and the first error (reported by wr_complete).
  uint32_t wr_count;
  verbs::SqSlot* wr_cur;
  int wr_err;
};

// The record behind an application's pointer.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
inline CtxImpl* Ctx(ibv_context* c) {
  return reinterpret_cast<CtxImpl*>(reinterpret_cast<char*>(c) -
                                    offsetof(CtxImpl, vctx) -
                                    offsetof(verbs_context, context));
}
static_assert(offsetof(CtxImpl, vctx) == 0);
static_assert(offsetof(DevImpl, dev) == 0);
static_assert(offsetof(QpImpl, qpx) == 0);
static_assert(offsetof(QpImpl, wr_flush) == sizeof(ibv_qp_ex) &&
              sizeof(ibv_qp_ex) == 352);
static_assert(offsetof(CqImpl, cqx) == 0);
#pragma GCC diagnostic pop
inline DevImpl* Dev(ibv_device* d) { return reinterpret_cast<DevImpl*>(d); }
inline PdImpl* Pd(ibv_pd* p) { return reinterpret_cast<PdImpl*>(p); }
inline MrImpl* Mr(ibv_mr* m) { return reinterpret_cast<MrImpl*>(m); }
inline AhImpl* Ah(ibv_ah* a) { return reinterpret_cast<AhImpl*>(a); }
inline ChanImpl* Chan(ibv_comp_channel* c) {
  return reinterpret_cast<ChanImpl*>(c);
}
inline CqImpl* Cq(ibv_cq* c) { return reinterpret_cast<CqImpl*>(c); }
inline CqImpl* Cq(ibv_cq_ex* c) { return reinterpret_cast<CqImpl*>(c); }
inline SrqImpl* Srq(ibv_srq* s) { return reinterpret_cast<SrqImpl*>(s); }
inline QpImpl* Qp(ibv_qp* q) { return reinterpret_cast<QpImpl*>(q); }
inline QpImpl* Qp(ibv_qp_ex* q) { return reinterpret_cast<QpImpl*>(q); }

// NULL with errno, as libibverbs' pointer-returning calls fail.
template <typename T>
T* FailNull(int err) {
  errno = err;
  return nullptr;
}

// A verbs slot of any signature that refuses: EOPNOTSUPP as an errno
// return for int slots, NULL with errno for pointer slots.
template <typename F>
struct Refuse;
template <typename R, typename... A>
struct Refuse<R (*)(A...)> {
  static R Fn(A...) {
    errno = EOPNOTSUPP;
    if constexpr (std::is_pointer_v<R>) {
      return nullptr;
    } else if constexpr (!std::is_void_v<R>) {
      return static_cast<R>(EOPNOTSUPP);
    }
  }
};
template <typename Slot>
void RefuseSlot(Slot* slot) {
  *slot = &Refuse<Slot>::Fn;
}

// Context ops (device.cc fills the table; each concept's file provides its
// own slots).
void FillCqOps(CtxImpl* ctx);
void FillQpOps(CtxImpl* ctx);
void FillSrqOps(CtxImpl* ctx);
// open_xrcd, close_xrcd, get_srq_num, open_qp (xrc.cc).
void FillXrcOps(CtxImpl* ctx);
// An XRC SRQ (ibv_create_srq_ex with IBV_SRQT_XRC) and an XRC TGT QP
// (ibv_create_qp_ex with IBV_QPT_XRC_RECV), xrc.cc.
ibv_srq* CreateXrcSrq(ibv_context* context, ibv_srq_init_attr_ex* attr);
ibv_qp* CreateXrcTgtQp(ibv_context* context, ibv_qp_init_attr_ex* attr);
void FillFlowOps(CtxImpl* ctx);  // flow.cc: ibv_create_flow, ibv_destroy_flow
// wq.cc: ibv_create_wq and co., ibv_create_rwq_ind_table and co.
void FillWqOps(CtxImpl* ctx);
// wq.cc: ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH (an RSS QP), made
// by `create_qp_ex` without it, then given its indirection table.
ibv_qp* CreateRssQp(ibv_context* context, ibv_qp_init_attr_ex* attr,
                    ibv_qp* (*create_qp_ex)(ibv_context*,
                                            ibv_qp_init_attr_ex*));
void FillMemoryOps(CtxImpl* ctx);
void FillMwOps(CtxImpl* ctx);
void FillDeviceOps(CtxImpl* ctx);
void FillDmOps(CtxImpl* ctx);
// ibv_device_attr_ex.max_dm_size (dm.cc).
uint64_t MaxDmSize();

// The calls of a context whose daemon has gone fail with EIO; releasing
// calls still free what this process holds.
inline bool Dead(const CtxImpl* ctx) {
  return ctx->rc->dead.load(std::memory_order_relaxed);
}

// Waits until `completed` (under mutex) reaches `reported`: destroy calls
// wait for the application to acknowledge every event it was handed, as
// libibverbs does.
void WaitAcked(pthread_mutex_t* mu, pthread_cond_t* cond,
               const uint32_t* completed, uint32_t reported);

// One line on stderr per process and topic (VERBS_LOG_LEVEL-like noise is
// not wanted: programs print their own errors).
void WarnOnce(const char* topic, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace rocemu::ibverbs

// Our IBVERBS_1.1 implementations that other files call (see below).
extern "C" {
int rocemu_ibv_query_port(ibv_context* context, uint8_t port_num,
                          _compat_ibv_port_attr* port_attr);
int rocemu_ibv_query_gid(ibv_context* context, uint8_t port_num, int index,
                         ibv_gid* gid);
// For our librdmacm only (exported as ROCEMU_PRIVATE): ibv_create_qp_ex of
// an RC, UC or XRC INI QP that comes back in INIT as rdma_create_qp leaves
// it (P_Key index 0, port 1, no remote access), in one request to the
// daemon where create and modify took two.
ibv_qp* rocemu_rdmacm_create_qp_at_init(ibv_context* context,
                                        ibv_qp_init_attr_ex* attr);
}

// libibverbs 1.0 exported 33 names that 1.1 replaced with new layouts; both
// versions stay exported, and a program binds the default (1.1). Our 1.1
// implementation of such a name is defined as rocemu_<name> and bound to
// <name>@@IBVERBS_1.1 here (in the defining file, as the assembler needs);
// compat.cc binds <name>@IBVERBS_1.0. The static_assert keeps the
// definition's type the one <infiniband/verbs.h> declares.
#define ROCEMU_IBV_1_1(name)                                                 \
  static_assert(std::is_same_v<decltype(&rocemu_##name), decltype(&::name)>, \
                #name);                                                      \
  __asm__(".symver rocemu_" #name "," #name "@@IBVERBS_1.1")

#endif  // ROCEMU_VERBS_IBVERBS_DROPIN_H_
