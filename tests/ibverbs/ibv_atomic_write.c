/* RDMA ATOMIC WRITE and RDMA FLUSH (IBTA 1.5) through the libibverbs API, as
 * an ordinary program built against Debian 12's libibverbs (rdma-core 44)
 * uses them over the drop-in library and one rocemud: the device's
 * capability bits, ibv_wr_atomic_write, ibv_post_send with
 * IBV_WR_ATOMIC_WRITE, ibv_wr_flush through the ibv_qp_ex member that
 * rdma-core 45 added (what a program built against newer headers calls),
 * and the refusals a real RNIC gives: an R_Key that is wrong or lacks the
 * right, a misaligned target, a region that cannot be registered for
 * persistent flushes. Each refusal ends its QP in error, so each gets a
 * fresh pair of QPs. Prints "ok"/"FAIL" lines; exit 0 when all passed. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_checks.h"

/* rdma-core 45 names that Debian 12's headers lack (same values). */
enum {
  kAccessFlushGlobal = 1 << 8,     /* IBV_ACCESS_FLUSH_GLOBAL */
  kAccessFlushPersistent = 1 << 9, /* IBV_ACCESS_FLUSH_PERSISTENT */
  kQpExWithFlush = 1 << 11,        /* IBV_QP_EX_WITH_FLUSH */
  kWcFlush = 8,                    /* IBV_WC_FLUSH */
  kFlushGlobal = 1,                /* IB_FLUSH_GLOBAL */
  kFlushRange = 0,                 /* IB_FLUSH_RANGE */
  kFlushMr = 1,                    /* IB_FLUSH_MR */
};
#define kDevFlushGlobal (1ULL << 38)     /* IB_UVERBS_DEVICE_FLUSH_GLOBAL */
#define kDevFlushPersistent (1ULL << 39) /* ..._FLUSH_PERSISTENT */
#define kDevAtomicWrite (1ULL << 40)     /* IB_UVERBS_DEVICE_ATOMIC_WRITE */

/* ibv_qp_ex's wr_flush, right after wr_atomic_write in rdma-core 45. */
typedef void (*wr_flush_fn)(struct ibv_qp_ex* qp, uint32_t rkey,
                            uint64_t remote_addr, size_t len, uint8_t type,
                            uint8_t level);
static void wr_flush(struct ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr,
                     size_t len, uint8_t type, uint8_t level) {
  wr_flush_fn fn;
  memcpy(&fn, (char*)qpx + sizeof(struct ibv_qp_ex), sizeof(fn));
  fn(qpx, rkey, addr, len, type, level);
}

struct env {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  uint8_t* buf;
  size_t len;
  struct ibv_mr* mr;       /* remote write and flush */
  struct ibv_mr* mr_ronly; /* remote read only */
};

static struct ibv_qp* make_qp(struct env* e) {
  struct ibv_qp_init_attr_ex init;
  memset(&init, 0, sizeof(init));
  init.send_cq = e->cq;
  init.recv_cq = e->cq;
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  init.pd = e->pd;
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  init.send_ops_flags =
      IBV_QP_EX_WITH_ATOMIC_WRITE | kQpExWithFlush | IBV_QP_EX_WITH_RDMA_WRITE;
  struct ibv_qp* qp = ibv_create_qp_ex(e->ctx, &init);
  REQUIRE(qp != NULL, "ibv_create_qp_ex with ATOMIC_WRITE and FLUSH");
  return qp;
}

/* A connected pair (a sends to b); both grant remote write and global
 * flushes unless `access` says otherwise. */
static void make_pair(struct env* e, unsigned access, struct ibv_qp** a,
                      struct ibv_qp** b) {
  const struct loopback_rc c = {11, 4, 1, 0};
  *a = make_qp(e);
  *b = make_qp(e);
  connect_loopback_rc(e->ctx, *a, (*b)->qp_num, &c);
  connect_loopback_rc(e->ctx, *b, (*a)->qp_num, &c);
  struct ibv_qp_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.qp_access_flags = access;
  REQUIRE(ibv_modify_qp(*b, &attr, IBV_QP_ACCESS_FLAGS) == 0,
          "responder QP access 0x%x", access);
}

/* The one completion of the request just posted (10 s deadline). */
static struct ibv_wc wait_one(struct env* e) {
  struct ibv_wc wc;
  memset(&wc, 0, sizeof(wc));
  const time_t deadline = time(NULL) + 10;
  int n = 0;
  while ((n = ibv_poll_cq(e->cq, 1, &wc)) == 0 && time(NULL) < deadline) {
    sched_yield();
  }
  REQUIRE(n == 1, "a completion arrived");
  return wc;
}

static void destroy_pair(struct ibv_qp* a, struct ibv_qp* b) {
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
}

static void post_atomic_write(struct ibv_qp* qp, uint32_t rkey, uint64_t addr,
                              uint64_t value) {
  struct ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);
  ibv_wr_start(qpx);
  qpx->wr_id = 1;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_write(qpx, rkey, addr, &value);
  value = 0; /* copied at post time: changing it now changes nothing */
  CHECK(ibv_wr_complete(qpx) == 0, "ibv_wr_atomic_write posted");
}

static void post_flush(struct ibv_qp* qp, uint32_t rkey, uint64_t addr,
                       size_t len, uint8_t type, uint8_t level) {
  struct ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);
  ibv_wr_start(qpx);
  qpx->wr_id = 2;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  wr_flush(qpx, rkey, addr, len, type, level);
  CHECK(ibv_wr_complete(qpx) == 0, "ibv_wr_flush posted");
}

static void capabilities(struct env* e) {
  struct ibv_device_attr_ex attr;
  memset(&attr, 0, sizeof(attr));
  REQUIRE(ibv_query_device_ex(e->ctx, NULL, &attr) == 0, "ibv_query_device_ex");
  CHECK((attr.device_cap_flags_ex & kDevAtomicWrite) != 0,
        "device_cap_flags_ex has ATOMIC_WRITE");
  CHECK((attr.device_cap_flags_ex & kDevFlushGlobal) != 0,
        "device_cap_flags_ex has FLUSH_GLOBAL");
  CHECK((attr.device_cap_flags_ex & kDevFlushPersistent) == 0,
        "device_cap_flags_ex has no FLUSH_PERSISTENT");
  errno = 0;
  struct ibv_mr* pm = ibv_reg_mr(
      e->pd, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE | kAccessFlushPersistent);
  CHECK(pm == NULL && errno == EINVAL,
        "a region for persistent flushes is refused with EINVAL");
}

static void successes(struct env* e) {
  struct ibv_qp *a, *b;
  make_pair(e, IBV_ACCESS_REMOTE_WRITE | kAccessFlushGlobal, &a, &b);
  const uint64_t target = (uintptr_t)e->buf + 4096;
  memset(e->buf + 4096, 0xEE, 24);
  post_atomic_write(a, e->mr->rkey, target + 8, 0x0102030405060708ULL);
  struct ibv_wc wc = wait_one(e);
  CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE &&
            wc.wr_id == 1,
        "ATOMIC WRITE completes: status %d opcode %d", wc.status, wc.opcode);
  const uint64_t want = 0x0102030405060708ULL;
  CHECK(memcmp(e->buf + 4096 + 8, &want, 8) == 0,
        "the 8 bytes are at the target");
  CHECK(e->buf[4096 + 7] == 0xEE && e->buf[4096 + 16] == 0xEE,
        "and nothing around them changed");

  /* The legacy path: the value is the one 8-byte gather entry. */
  uint64_t* src = (uint64_t*)(e->buf + 64);
  *src = 0xA5A5A5A5F00DF00DULL;
  struct ibv_sge sge = {(uintptr_t)src, 8, e->mr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = 3;
  wr.opcode = IBV_WR_ATOMIC_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = target;
  wr.wr.rdma.rkey = e->mr->rkey;
  CHECK(ibv_post_send(a, &wr, &bad) == 0, "ibv_post_send IBV_WR_ATOMIC_WRITE");
  wc = wait_one(e);
  CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE &&
            wc.wr_id == 3 && memcmp(e->buf + 4096, src, 8) == 0,
        "the posted ATOMIC WRITE stored its gather entry: status %d",
        wc.status);
  sge.length = 4;
  CHECK(ibv_post_send(a, &wr, &bad) == EINVAL && bad == &wr,
        "an ATOMIC WRITE gathering 4 bytes is EINVAL");

  post_flush(a, e->mr->rkey, target, 4096, kFlushGlobal, kFlushRange);
  wc = wait_one(e);
  CHECK(wc.status == IBV_WC_SUCCESS && (int)wc.opcode == kWcFlush &&
            wc.wr_id == 2,
        "FLUSH of a range completes: status %d opcode %d", wc.status,
        wc.opcode);
  post_flush(a, e->mr->rkey, 0, 0, kFlushGlobal, kFlushMr);
  wc = wait_one(e);
  CHECK(wc.status == IBV_WC_SUCCESS && (int)wc.opcode == kWcFlush,
        "FLUSH of the whole region completes: status %d", wc.status);
  destroy_pair(a, b);
}

/* One refused request on a fresh pair: its completion's status. */
static void refused(struct env* e, const char* what, unsigned access, int flush,
                    uint32_t rkey, uint64_t addr, enum ibv_wc_status want) {
  struct ibv_qp *a, *b;
  make_pair(e, access, &a, &b);
  if (flush) {
    post_flush(a, rkey, addr, 64, kFlushGlobal, kFlushRange);
  } else {
    post_atomic_write(a, rkey, addr, 0x5555);
  }
  const struct ibv_wc wc = wait_one(e);
  CHECK(wc.status == want, "%s: %s (%d)", what, ibv_wc_status_str(wc.status),
        wc.status);
  destroy_pair(a, b);
}

static void refusals(struct env* e) {
  const unsigned all = IBV_ACCESS_REMOTE_WRITE | kAccessFlushGlobal;
  const uint64_t target = (uintptr_t)e->buf + 8192;
  memset(e->buf + 8192, 0, 16);
  refused(e, "ATOMIC WRITE with a wrong R_Key", all, 0, e->mr->rkey ^ 0x100,
          target, IBV_WC_REM_ACCESS_ERR);
  refused(e, "ATOMIC WRITE into a region without REMOTE_WRITE", all, 0,
          e->mr_ronly->rkey, (uintptr_t)e->buf, IBV_WC_REM_ACCESS_ERR);
  refused(e, "ATOMIC WRITE to a responder QP without REMOTE_WRITE",
          IBV_ACCESS_REMOTE_READ, 0, e->mr->rkey, target,
          IBV_WC_REM_INV_REQ_ERR);
  refused(e, "ATOMIC WRITE to a misaligned target", all, 0, e->mr->rkey,
          target + 4, IBV_WC_REM_INV_REQ_ERR);
  refused(e, "ATOMIC WRITE past the region's end", all, 0, e->mr->rkey,
          (uintptr_t)e->buf + e->len, IBV_WC_REM_ACCESS_ERR);
  uint64_t untouched[2];
  memcpy(untouched, e->buf + 8192, 16);
  CHECK(untouched[0] == 0 && untouched[1] == 0,
        "no refused ATOMIC WRITE stored anything");
  refused(e, "FLUSH of a region without FLUSH_GLOBAL", all, 1,
          e->mr_ronly->rkey, (uintptr_t)e->buf, IBV_WC_REM_ACCESS_ERR);
  refused(e, "FLUSH to a responder QP without FLUSH_GLOBAL",
          IBV_ACCESS_REMOTE_WRITE, 1, e->mr->rkey, target,
          IBV_WC_REM_INV_REQ_ERR);
}

int main(void) {
  struct env e;
  memset(&e, 0, sizeof(e));
  e.ctx = open_first();
  e.pd = ibv_alloc_pd(e.ctx);
  REQUIRE(e.pd != NULL, "ibv_alloc_pd");
  e.cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
  REQUIRE(e.cq != NULL, "ibv_create_cq");
  e.len = 1 << 16;
  REQUIRE(posix_memalign((void**)&e.buf, 4096, e.len) == 0, "buffer");
  memset(e.buf, 0, e.len);
  e.mr = ibv_reg_mr(
      e.pd, e.buf, e.len,
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | kAccessFlushGlobal);
  REQUIRE(e.mr != NULL, "ibv_reg_mr with FLUSH_GLOBAL");
  e.mr_ronly = ibv_reg_mr(e.pd, e.buf, e.len, IBV_ACCESS_REMOTE_READ);
  REQUIRE(e.mr_ronly != NULL, "ibv_reg_mr remote read only");
  capabilities(&e);
  successes(&e);
  refusals(&e);
  ibv_dereg_mr(e.mr_ronly);
  ibv_dereg_mr(e.mr);
  ibv_destroy_cq(e.cq);
  ibv_dealloc_pd(e.pd);
  ibv_close_device(e.ctx);
  free(e.buf);
  printf("%s: %d failed\n", failures ? "FAIL" : "ok", failures);
  return failures ? 1 : 0;
}
