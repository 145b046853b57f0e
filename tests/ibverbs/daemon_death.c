/* The daemon dies under a program with work outstanding, and comes back.
 * An ordinary libibverbs program (Debian's <infiniband/verbs.h>, -libverbs)
 * run over the drop-in by daemon_restart_test.py, which drives it through
 * stdin/stdout:
 *
 *   prints "ready" once its work requests are posted; the test SIGKILLs the
 *   daemon. A thread busy-polling one CQ and the main thread blocked in
 *   ibv_get_cq_event must wake; every request that had not completed comes
 *   back as IBV_WC_WR_FLUSH_ERR, in order, after the completions the daemon
 *   had delivered; IBV_EVENT_DEVICE_FATAL; releases succeed. Prints
 *   "released" and waits for a line on stdin (the test restarted the
 *   daemon), then lists, opens and runs traffic on the device again.
 *
 * Exit 0 when every check held; the failed checks are printed (FAIL ...).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe_checks.h"

enum { kRecvs = 16, kFirstRecv = 200, kThreadRecvs = 8, kThreadRecv = 300 };

struct dev {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_comp_channel* ch;
  struct ibv_cq* cq_s; /* send CQ of a and b */
  struct ibv_cq* cq_r; /* receive CQ of a and b */
  struct ibv_cq* cq_p; /* c's and d's, busy-polled by a thread */
  struct ibv_qp *a, *b, *c, *d;
  char* buf;
  size_t len;
  struct ibv_mr* mr;
};

static struct ibv_qp* make_qp(struct dev* d, struct ibv_cq* scq,
                              struct ibv_cq* rcq) {
  struct ibv_qp_init_attr init;
  memset(&init, 0, sizeof(init));
  init.send_cq = scq;
  init.recv_cq = rcq;
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 32;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  struct ibv_qp* qp = ibv_create_qp(d->pd, &init);
  REQUIRE(qp != NULL, "ibv_create_qp");
  return qp;
}

/* rnr_retry 7 retries for ever, so a SEND nobody posted a receive for
 * stays outstanding; min_rnr_timer 24: 41 ms between its retries. */
static void connect_qp(struct dev* d, struct ibv_qp* qp, uint32_t dest) {
  const struct loopback_rc c = {0, 1, 24, 0};
  connect_loopback_rc(d->ctx, qp, dest, &c);
}

static void open_dev(struct dev* d) {
  memset(d, 0, sizeof(*d));
  d->ctx = open_first();
  d->pd = ibv_alloc_pd(d->ctx);
  REQUIRE(d->pd != NULL, "ibv_alloc_pd");
  d->ch = ibv_create_comp_channel(d->ctx);
  REQUIRE(d->ch != NULL, "ibv_create_comp_channel");
  d->cq_s = ibv_create_cq(d->ctx, 64, NULL, d->ch, 0);
  d->cq_r = ibv_create_cq(d->ctx, 64, NULL, d->ch, 0);
  d->cq_p = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
  REQUIRE(d->cq_s && d->cq_r && d->cq_p, "three CQs");
  d->len = 1 << 16;
  REQUIRE(posix_memalign((void**)&d->buf, 4096, d->len) == 0, "buffer");
  memset(d->buf, 0, d->len);
  d->mr = ibv_reg_mr(d->pd, d->buf, d->len,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ);
  REQUIRE(d->mr != NULL, "ibv_reg_mr");
  d->a = make_qp(d, d->cq_s, d->cq_r);
  d->b = make_qp(d, d->cq_s, d->cq_r);
  d->c = make_qp(d, d->cq_p, d->cq_p);
  d->d = make_qp(d, d->cq_p, d->cq_p);
  connect_qp(d, d->a, d->b->qp_num);
  connect_qp(d, d->b, d->a->qp_num);
  connect_qp(d, d->c, d->d->qp_num);
  connect_qp(d, d->d, d->c->qp_num);
}

static int close_dev(struct dev* d) {
  int bad = 0;
  bad |= ibv_destroy_qp(d->a) != 0;
  bad |= ibv_destroy_qp(d->b) != 0;
  bad |= ibv_destroy_qp(d->c) != 0;
  bad |= ibv_destroy_qp(d->d) != 0;
  bad |= ibv_dereg_mr(d->mr) != 0;
  bad |= ibv_destroy_cq(d->cq_s) != 0;
  bad |= ibv_destroy_cq(d->cq_r) != 0;
  bad |= ibv_destroy_cq(d->cq_p) != 0;
  bad |= ibv_destroy_comp_channel(d->ch) != 0;
  bad |= ibv_dealloc_pd(d->pd) != 0;
  bad |= ibv_close_device(d->ctx) != 0;
  free(d->buf);
  return bad;
}

static int post(struct dev* d, struct ibv_qp* qp, enum ibv_wr_opcode op,
                uint64_t wr_id, int signaled, size_t off, uint32_t len) {
  struct ibv_sge sge = {(uintptr_t)(d->buf + off), len, d->mr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  wr.wr.rdma.remote_addr = (uintptr_t)(d->buf + off + d->len / 2);
  wr.wr.rdma.rkey = d->mr->rkey;
  return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct dev* d, struct ibv_qp* qp, uint64_t wr_id,
                     size_t off) {
  struct ibv_sge sge = {(uintptr_t)(d->buf + off), 256, d->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
  struct ibv_recv_wr* bad = NULL;
  return ibv_post_recv(qp, &wr, &bad);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Polls one completion, spinning; -1 when the CQ reports an error. The
 * deadline only stops a hung poller. */
static int poll_one(struct ibv_cq* cq, struct ibv_wc* wc) {
  const double t0 = now_s();
  int n;
  while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && now_s() - t0 < 60) {
  }
  return n;
}

/* The busy poller: every receive of d's flushed, then an error. */
static struct dev* g_dev;
static int g_thread_flushed, g_thread_in_order, g_thread_ended;

static void* busy_poller(void* arg) {
  (void)arg;
  struct ibv_wc wc;
  int n;
  g_thread_in_order = 1;
  while ((n = poll_one(g_dev->cq_p, &wc)) == 1) {
    if (wc.status != IBV_WC_WR_FLUSH_ERR ||
        wc.wr_id != (uint64_t)(kThreadRecv + g_thread_flushed) ||
        wc.qp_num != g_dev->d->qp_num) {
      g_thread_in_order = 0;
    }
    ++g_thread_flushed;
  }
  g_thread_ended = n < 0;
  return NULL;
}

/* Before the kill: what completed, what never will. */
static void post_work(struct dev* d) {
  /* 100: a WRITE whose completion reaches the ring (its event seen) but is
   * not polled before the kill. */
  REQUIRE(ibv_req_notify_cq(d->cq_s, 0) == 0, "arm the send CQ");
  REQUIRE(post(d, d->a, IBV_WR_RDMA_WRITE, 100, 1, 0, 64) == 0, "WRITE 100");
  struct ibv_cq* cq;
  void* cq_ctx;
  REQUIRE(ibv_get_cq_event(d->ch, &cq, &cq_ctx) == 0 && cq == d->cq_s,
          "WRITE 100 completed (its event)");
  ibv_ack_cq_events(cq, 1);
  /* 101: unsignaled, done with no completion; 102: a SEND b has no
   * receive for (RNR, retried for ever); 103, 104 queued behind it. */
  REQUIRE(post(d, d->a, IBV_WR_RDMA_WRITE, 101, 0, 64, 64) == 0, "WRITE 101");
  REQUIRE(post(d, d->a, IBV_WR_SEND, 102, 1, 128, 64) == 0, "SEND 102");
  REQUIRE(post(d, d->a, IBV_WR_RDMA_WRITE, 103, 0, 192, 64) == 0, "WRITE 103");
  REQUIRE(post(d, d->a, IBV_WR_RDMA_WRITE, 104, 1, 256, 64) == 0, "WRITE 104");
  /* Receives nothing will consume: a's (cq_r, armed) and d's (cq_p). */
  for (int i = 0; i < kRecvs; ++i) {
    REQUIRE(post_recv(d, d->a, kFirstRecv + i, 4096 + 256 * i) == 0,
            "receive %d on a", kFirstRecv + i);
  }
  for (int i = 0; i < kThreadRecvs; ++i) {
    REQUIRE(post_recv(d, d->d, kThreadRecv + i, 16384 + 256 * i) == 0,
            "receive %d on d", kThreadRecv + i);
  }
  REQUIRE(ibv_req_notify_cq(d->cq_r, 0) == 0, "arm the receive CQ");
}

static void check_after_death(struct dev* d) {
  struct ibv_cq* cq = NULL;
  void* cq_ctx = NULL;
  int rc = ibv_get_cq_event(d->ch, &cq, &cq_ctx);
  CHECK(rc == 0 && cq == d->cq_r,
        "the blocked ibv_get_cq_event wakes with the armed receive CQ, "
        "which got flushed completions (rc %d)",
        rc);
  if (rc == 0) ibv_ack_cq_events(cq, 1);
  struct ibv_async_event ev;
  rc = ibv_get_async_event(d->ctx, &ev);
  CHECK(rc == 0 && ev.event_type == IBV_EVENT_DEVICE_FATAL,
        "IBV_EVENT_DEVICE_FATAL (%s)",
        rc == 0 ? ibv_event_type_str(ev.event_type) : "none");
  if (rc == 0) ibv_ack_async_event(&ev);

  struct ibv_wc wc;
  int n = poll_one(d->cq_s, &wc);
  CHECK(n == 1 && wc.wr_id == 100 && wc.status == IBV_WC_SUCCESS &&
            wc.opcode == IBV_WC_RDMA_WRITE,
        "send CQ: WRITE 100's completion, delivered before the kill, first "
        "(n %d wr_id %llu status %d)",
        n, (unsigned long long)wc.wr_id, wc.status);
  /* 101 ran, unsignaled, but no completion after it says so: like a
   * device's driver flushing everything since the last completion, the
   * library flushes it too. */
  for (uint64_t id = 101; id <= 104; ++id) {
    n = poll_one(d->cq_s, &wc);
    CHECK(n == 1 && wc.wr_id == id && wc.status == IBV_WC_WR_FLUSH_ERR &&
              wc.qp_num == d->a->qp_num,
          "send CQ: %llu flushed (n %d wr_id %llu status %s qp %u)",
          (unsigned long long)id, n, (unsigned long long)wc.wr_id,
          n == 1 ? ibv_wc_status_str(wc.status) : "-", wc.qp_num);
  }
  errno = 0;
  n = ibv_poll_cq(d->cq_s, 1, &wc);
  CHECK(n < 0, "send CQ: then an error, not an empty CQ (%d)", n);

  int in_order = 1, got = 0;
  while ((n = poll_one(d->cq_r, &wc)) == 1) {
    if (wc.status != IBV_WC_WR_FLUSH_ERR ||
        wc.wr_id != (uint64_t)(kFirstRecv + got) || wc.qp_num != d->a->qp_num ||
        wc.opcode != IBV_WC_RECV) {
      in_order = 0;
    }
    ++got;
  }
  CHECK(got == kRecvs && in_order && n < 0,
        "receive CQ: %d receives flushed in posting order (%d, in order %d), "
        "then an error",
        kRecvs, got, in_order);
  errno = 0;
  rc = ibv_get_cq_event(d->ch, &cq, &cq_ctx);
  CHECK(rc == -1 && errno == EIO, "then ibv_get_cq_event fails with EIO");
  CHECK(post(d, d->a, IBV_WR_RDMA_WRITE, 105, 1, 0, 64) == EIO,
        "ibv_post_send fails with EIO");
  CHECK(post_recv(d, d->a, 106, 0) == EIO, "ibv_post_recv fails with EIO");
}

/* After the restart: a new context on the same device moves data. */
static void traffic_again(void) {
  struct dev d;
  open_dev(&d);
  for (size_t i = 0; i < 4096; ++i) d.buf[i] = (char)(i * 7 + 3);
  REQUIRE(post_recv(&d, d.b, 1, 8192) == 0, "receive on b");
  REQUIRE(post(&d, d.a, IBV_WR_RDMA_WRITE, 2, 1, 0, 4096) == 0, "WRITE 4 KiB");
  REQUIRE(post(&d, d.a, IBV_WR_SEND, 3, 1, 100, 200) == 0, "SEND 200 B");
  struct ibv_wc wc;
  int ok_recv = 0;
  for (int i = 0; i < 2; ++i) {
    CHECK(poll_one(d.cq_s, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
              wc.wr_id == (uint64_t)(2 + i),
          "send %d completes (status %d)", 2 + i, wc.status);
  }
  ok_recv = poll_one(d.cq_r, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
            wc.byte_len == 200;
  CHECK(ok_recv, "the receive completes with 200 bytes");
  CHECK(memcmp(d.buf, d.buf + d.len / 2, 4096) == 0 &&
            memcmp(d.buf + 100, d.buf + 8192, 200) == 0,
        "the WRITE's and the SEND's bytes arrived");
  CHECK(close_dev(&d) == 0, "the new context's objects are released");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct dev d;
  open_dev(&d);
  g_dev = &d;
  post_work(&d);
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, busy_poller, NULL) == 0, "poller thread");
  printf("ready\n");
  check_after_death(&d);
  pthread_join(t, NULL);
  CHECK(g_thread_flushed == kThreadRecvs && g_thread_in_order && g_thread_ended,
        "the busy-polling thread got its %d receives flushed in order (%d, "
        "in order %d) and then an error (%d)",
        kThreadRecvs, g_thread_flushed, g_thread_in_order, g_thread_ended);
  CHECK(close_dev(&d) == 0, "every release succeeds on the dead device");
  printf("released\n");
  char line[64];
  if (fgets(line, sizeof(line), stdin) == NULL) {
    printf("FAIL no go-ahead after the restart\n");
    return 1;
  }
  traffic_again();
  return failures != 0;
}
