/* An ordinary libibverbs program (built against Debian's <infiniband/verbs.h>
 * and linked with -libverbs, as any user's code is) that checks behaviour
 * the stock tools and pyverbs do not reach: the daemon dying under a
 * running program, discovery without a daemon, completion-channel and
 * async fds, several threads posting to one QP, and the refusals of what a
 * software RoCE device lacks. Run over the drop-in by dropin_probe_test.py.
 *
 *   ibv_probe nodaemon|fatal|channel|threads|refuse|fork|marshall|parent|
 *             memory|clock
 *
 * Exit 0 when every check held; otherwise the failed check is printed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/ib_user_sa.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_checks.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Two RC QPs of one device connected to each other (the RNIC loops the
 * frames back), sharing one CQ. */
struct pair {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_comp_channel* ch;
  struct ibv_cq* cq;
  struct ibv_qp* a;
  struct ibv_qp* b;
  char* buf;
  size_t len;
  struct ibv_mr* mr;
};

static struct ibv_qp* make_qp(struct pair* p, uint32_t depth) {
  struct ibv_qp_init_attr init;
  memset(&init, 0, sizeof(init));
  init.send_cq = p->cq;
  init.recv_cq = p->cq;
  init.cap.max_send_wr = depth;
  init.cap.max_recv_wr = depth;
  init.cap.max_send_sge = 2;
  init.cap.max_recv_sge = 2;
  init.qp_type = IBV_QPT_RC;
  struct ibv_qp* qp = ibv_create_qp(p->pd, &init);
  REQUIRE(qp != NULL, "ibv_create_qp RC depth %u", depth);
  return qp;
}

/* PSN 7 and 4 reads in flight (not the defaults); UCX's all-ones flow
 * label, which the kernel and the providers keep to the 20 bits the GRH
 * carries. */
static void connect_qp(struct pair* p, struct ibv_qp* qp, uint32_t dest) {
  const struct loopback_rc c = {7, 4, 1, 0xFFFFFFFF};
  connect_loopback_rc(p->ctx, qp, dest, &c);
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr init;
  memset(&a, 0, sizeof(a));
  REQUIRE(ibv_query_qp(qp, &a, IBV_QP_AV, &init) == 0 &&
              a.ah_attr.grh.flow_label == 0xFFFFF,
          "QP %u flow label kept to 20 bits: 0x%x", qp->qp_num,
          a.ah_attr.grh.flow_label);
}

static void make_pair(struct pair* p, uint32_t depth, int with_channel) {
  memset(p, 0, sizeof(*p));
  p->ctx = open_first();
  p->pd = ibv_alloc_pd(p->ctx);
  REQUIRE(p->pd != NULL, "ibv_alloc_pd");
  if (with_channel) {
    p->ch = ibv_create_comp_channel(p->ctx);
    REQUIRE(p->ch != NULL, "ibv_create_comp_channel");
  }
  p->cq = ibv_create_cq(p->ctx, (int)(4 * depth), &p->cq, p->ch, 0);
  REQUIRE(p->cq != NULL, "ibv_create_cq");
  p->len = 1 << 20;
  REQUIRE(posix_memalign((void**)&p->buf, 4096, p->len) == 0, "buffer");
  memset(p->buf, 0, p->len);
  p->mr = ibv_reg_mr(p->pd, p->buf, p->len,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ);
  REQUIRE(p->mr != NULL, "ibv_reg_mr of malloc'd memory");
  p->a = make_qp(p, depth);
  p->b = make_qp(p, depth);
  connect_qp(p, p->a, p->b->qp_num);
  connect_qp(p, p->b, p->a->qp_num);
}

static void free_pair(struct pair* p) {
  CHECK(ibv_destroy_qp(p->a) == 0, "ibv_destroy_qp a");
  CHECK(ibv_destroy_qp(p->b) == 0, "ibv_destroy_qp b");
  CHECK(ibv_dereg_mr(p->mr) == 0, "ibv_dereg_mr");
  CHECK(ibv_destroy_cq(p->cq) == 0, "ibv_destroy_cq");
  if (p->ch != NULL) {
    CHECK(ibv_destroy_comp_channel(p->ch) == 0, "ibv_destroy_comp_channel");
  }
  CHECK(ibv_dealloc_pd(p->pd) == 0, "ibv_dealloc_pd");
  CHECK(ibv_close_device(p->ctx) == 0, "ibv_close_device");
  free(p->buf);
}

static int post_write(struct ibv_qp* qp, struct pair* p, uint64_t wr_id,
                      size_t src, size_t dst, uint32_t len) {
  struct ibv_sge sge = {(uintptr_t)(p->buf + src), len, p->mr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uintptr_t)(p->buf + dst);
  wr.wr.rdma.rkey = p->mr->rkey;
  return ibv_post_send(qp, &wr, &bad);
}

/* --- nodaemon: the list is empty, not an error (the stderr line is the
 * test's to check). --- */
static int probe_nodaemon(void) {
  int n = -1;
  struct ibv_device** list = ibv_get_device_list(&n);
  CHECK(list != NULL, "ibv_get_device_list returns a list");
  CHECK(n == 0, "with no device (%d)", n);
  CHECK(list == NULL || list[0] == NULL, "NULL-terminated at once");
  ibv_free_device_list(list);
  return failures != 0;
}

/* --- fatal: the daemon is killed while we hold objects. --- */
static int probe_fatal(void) {
  struct pair p;
  make_pair(&p, 16, 1);
  char rbuf[64];
  struct ibv_sge sge = {(uintptr_t)p.buf, 64, p.mr->lkey};
  struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
  struct ibv_recv_wr* bad = NULL;
  REQUIRE(ibv_post_recv(p.b, &rwr, &bad) == 0, "a receive is posted");
  REQUIRE(ibv_req_notify_cq(p.cq, 0) == 0, "the CQ is armed");
  printf("ready\n");
  fflush(stdout);
  /* The test kills the daemon now; blocking calls must wake up. */
  struct ibv_async_event ev;
  const double t0 = now_s();
  int rc = ibv_get_async_event(p.ctx, &ev);
  CHECK(rc == 0 && ev.event_type == IBV_EVENT_DEVICE_FATAL,
        "a blocked ibv_get_async_event returns IBV_EVENT_DEVICE_FATAL "
        "(%d, %s)",
        rc, rc == 0 ? ibv_event_type_str(ev.event_type) : "-");
  if (rc == 0) ibv_ack_async_event(&ev);
  rc = ibv_get_async_event(p.ctx, &ev);
  CHECK(rc == -1 && errno == EIO, "then ibv_get_async_event fails with EIO");
  /* The posted receive is flushed, and the armed CQ fires for it once;
   * then the channel fails instead of blocking. */
  struct ibv_cq* cq = NULL;
  void* cq_ctx = NULL;
  rc = ibv_get_cq_event(p.ch, &cq, &cq_ctx);
  CHECK(rc == 0 && cq == p.cq,
        "ibv_get_cq_event hands out the armed CQ, which got a flush");
  if (rc == 0) ibv_ack_cq_events(cq, 1);
  rc = ibv_get_cq_event(p.ch, &cq, &cq_ctx);
  CHECK(rc == -1 && errno == EIO,
        "then ibv_get_cq_event on a dead device fails (EIO), does not block");
  struct ibv_wc wc;
  int polled = 0, flushed = 0, n = 0;
  while (now_s() - t0 < 30 && (n = ibv_poll_cq(p.cq, 1, &wc)) >= 0) {
    if (n > 0) {
      ++polled;
      flushed += wc.wr_id == 1 && wc.status == IBV_WC_WR_FLUSH_ERR;
    }
  }
  CHECK(polled == 1 && flushed == 1,
        "the receive comes back flushed (%d polled, %d flushed)", polled,
        flushed);
  CHECK(n < 0, "ibv_poll_cq ends in an error instead of spinning (%d)", n);
  errno = 0;
  rc = ibv_post_recv(p.b, &rwr, &bad);
  CHECK(rc == EIO, "ibv_post_recv fails with EIO (%d)", rc);
  rc = post_write(p.a, &p, 2, 0, 4096, 8);
  CHECK(rc == EIO, "ibv_post_send fails with EIO (%d)", rc);
  errno = 0;
  CHECK(ibv_alloc_pd(p.ctx) == NULL && errno == EIO,
        "ibv_alloc_pd fails with EIO");
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  CHECK(ibv_query_qp(p.a, &a, IBV_QP_STATE, &ia) == EIO,
        "ibv_query_qp fails with EIO");
  (void)rbuf;
  /* Releasing still works and frees what this process holds. */
  free_pair(&p);
  return failures != 0;
}

/* SIGALRM without SA_RESTART, as qperf ends its timed tests: a blocked
 * ibv_get_cq_event or ibv_get_async_event must return -1/EINTR (read(2) on
 * the kernel's fds does). A library that waits on instead is stopped here
 * after many signals, a deadline only, so that the check fails, not hangs. */
static volatile sig_atomic_t g_alarms;

static void on_alarm(int sig) {
  (void)sig;
  if (++g_alarms >= 200) {
    static const char msg[] =
        "FAIL a blocked wait did not return -1/EINTR on SIGALRM\n";
    (void)!write(1, msg, sizeof(msg) - 1);
    _exit(1);
  }
}

static void alarms(int on) {
  struct itimerval t = {{0, on ? 50000 : 0}, {0, on ? 50000 : 0}};
  setitimer(ITIMER_REAL, &t, NULL);
}

static void check_eintr(struct pair* p) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART */
  REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0, "SIGALRM handler");
  REQUIRE(ibv_req_notify_cq(p->cq, 0) == 0,
          "ibv_req_notify_cq (nothing posted)");
  struct ibv_cq* cq = NULL;
  void* cq_ctx = NULL;
  g_alarms = 0;
  alarms(1);
  errno = 0;
  CHECK(ibv_get_cq_event(p->ch, &cq, &cq_ctx) == -1 && errno == EINTR,
        "a signal ends a blocked ibv_get_cq_event with -1/EINTR");
  alarms(0);
  struct ibv_async_event ev;
  g_alarms = 0;
  alarms(1);
  errno = 0;
  CHECK(ibv_get_async_event(p->ctx, &ev) == -1 && errno == EINTR,
        "a signal ends a blocked ibv_get_async_event with -1/EINTR");
  alarms(0);
  signal(SIGALRM, SIG_DFL);
}

/* --- channel: completion-channel and async fds behave like a kernel's. */
static int probe_channel(void) {
  struct pair p;
  make_pair(&p, 16, 1);
  struct pollfd pf = {p.ch->fd, POLLIN, 0};
  CHECK(poll(&pf, 1, 0) == 0, "channel fd not readable before any event");
  REQUIRE(ibv_req_notify_cq(p.cq, 0) == 0, "ibv_req_notify_cq");
  REQUIRE(post_write(p.a, &p, 42, 0, 8192, 256) == 0, "a WRITE is posted");
  CHECK(poll(&pf, 1, 10000) == 1 && (pf.revents & POLLIN),
        "channel fd readable once the armed CQ got a completion");
  struct ibv_cq* cq = NULL;
  void* cq_ctx = NULL;
  CHECK(ibv_get_cq_event(p.ch, &cq, &cq_ctx) == 0 && cq == p.cq &&
            cq_ctx == &p.cq,
        "ibv_get_cq_event hands back the CQ and its context");
  ibv_ack_cq_events(cq, 1);
  struct ibv_wc wc;
  int n = 0;
  const double t0 = now_s();
  while ((n = ibv_poll_cq(p.cq, 1, &wc)) == 0 && now_s() - t0 < 10) {
  }
  CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 42 &&
            wc.opcode == IBV_WC_RDMA_WRITE,
        "the WRITE's completion (n %d status %d wr_id %llu)", n, wc.status,
        (unsigned long long)wc.wr_id);
  pf.revents = 0;
  CHECK(poll(&pf, 1, 0) == 0, "channel fd quiet again after the event");
  /* Waited for before the completion comes (the call peeks at the
     daemon's signal counter, which moves before the fd is written): each
     event handed back, and the fd quiet after it, as a kernel channel's,
     so that a program polling the fd never blocks in ibv_get_cq_event. */
  int rounds = 0;
  for (int i = 0; i < 50; ++i) {
    REQUIRE(ibv_req_notify_cq(p.cq, 0) == 0, "ibv_req_notify_cq");
    REQUIRE(post_write(p.a, &p, 100 + i, 0, 8192, 256) == 0,
            "a WRITE is posted");
    cq = NULL;
    if (ibv_get_cq_event(p.ch, &cq, &cq_ctx) != 0 || cq != p.cq) break;
    ibv_ack_cq_events(cq, 1);
    const double t1 = now_s();
    while ((n = ibv_poll_cq(p.cq, 1, &wc)) == 0 && now_s() - t1 < 10) {
    }
    if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 100u + i) break;
    pf.revents = 0;
    if (poll(&pf, 1, 0) != 0) break;
    ++rounds;
  }
  CHECK(rounds == 50,
        "50 events waited for before their completions: each handed back, "
        "the fd quiet after it (%d rounds)", rounds);
  check_eintr(&p);
  const int fl = fcntl(p.ch->fd, F_GETFL);
  CHECK(fcntl(p.ch->fd, F_SETFL, fl | O_NONBLOCK) == 0,
        "the application may make the channel fd non-blocking");
  errno = 0;
  CHECK(ibv_get_cq_event(p.ch, &cq, &cq_ctx) == -1 && errno == EAGAIN,
        "then ibv_get_cq_event returns -1/EAGAIN instead of blocking");
  const int afl = fcntl(p.ctx->async_fd, F_GETFL);
  CHECK(fcntl(p.ctx->async_fd, F_SETFL, afl | O_NONBLOCK) == 0,
        "the async fd may be made non-blocking");
  struct ibv_async_event ev;
  errno = 0;
  CHECK(ibv_get_async_event(p.ctx, &ev) == -1 && errno == EAGAIN,
        "then ibv_get_async_event returns -1/EAGAIN");
  struct pollfd af = {p.ctx->async_fd, POLLIN, 0};
  CHECK(poll(&af, 1, 0) == 0, "async fd not readable without an event");
  free_pair(&p);
  return failures != 0;
}

/* --- threads: several threads post to one QP while one polls. --- */
enum { kThreads = 4, kPerThread = 2000, kChunk = 64, kWindow = 32 };
static struct pair g_pair;
static volatile int g_done[kThreads];
static int g_seen[kThreads][kPerThread];

static void* poster(void* arg) {
  const int t = (int)(intptr_t)arg;
  for (int i = 0; i < kPerThread; ++i) {
    /* Keep at most kWindow of this thread's writes outstanding. */
    while (i - __atomic_load_n(&g_done[t], __ATOMIC_ACQUIRE) >= kWindow) {
    }
    const size_t slot = ((size_t)t * kPerThread + (size_t)i) * kChunk;
    const size_t src = slot % (g_pair.len / 2);
    memset(g_pair.buf + src, (t * 31 + i) & 0xff, kChunk);
    int rc;
    while (
        (rc = post_write(g_pair.a, &g_pair, ((uint64_t)t << 32) | (uint64_t)i,
                         src, g_pair.len / 2 + src, kChunk)) == ENOMEM) {
    }
    if (rc != 0) {
      printf("FAIL thread %d post %d: %d\n", t, i, rc);
      exit(1);
    }
  }
  return NULL;
}

static int probe_threads(void) {
  make_pair(&g_pair, 256, 0);
  pthread_t th[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    REQUIRE(pthread_create(&th[t], NULL, poster, (void*)(intptr_t)t) == 0,
            "thread %d", t);
  }
  int total = 0, bad = 0, dup = 0;
  const double t0 = now_s();
  while (total < kThreads * kPerThread && now_s() - t0 < 120) {
    struct ibv_wc wc[16];
    const int n = ibv_poll_cq(g_pair.cq, 16, wc);
    if (n < 0) break;
    for (int k = 0; k < n; ++k) {
      const int t = (int)(wc[k].wr_id >> 32);
      const int i = (int)(wc[k].wr_id & 0xffffffff);
      if (wc[k].status != IBV_WC_SUCCESS || t >= kThreads || i >= kPerThread) {
        ++bad;
        continue;
      }
      if (g_seen[t][i]++) ++dup;
      __atomic_add_fetch(&g_done[t], 1, __ATOMIC_RELEASE);
      ++total;
    }
  }
  for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
  CHECK(total == kThreads * kPerThread,
        "%d threads x %d WRITEs on one QP: %d completions", kThreads,
        kPerThread, total);
  CHECK(bad == 0 && dup == 0, "all successful, none twice (%d bad, %d dup)",
        bad, dup);
  /* Each thread's last write into each chunk left its pattern. */
  free_pair(&g_pair);
  return failures != 0;
}

/* --- fork: a child gets its own copy of registered memory; the parent's
 * region goes on working. --- */
static int probe_fork(void) {
  struct pair p;
  make_pair(&p, 16, 0);
  memset(p.buf, 0x11, 4096);
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    memset(p.buf, 0x22, 4096); /* the child's copy only */
    _exit(p.buf[100] == 0x22 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child wrote its copy of the registered buffer");
  CHECK(p.buf[100] == 0x11, "the parent's registered buffer is untouched");
  REQUIRE(post_write(p.a, &p, 7, 0, 65536, 4096) == 0, "a WRITE after fork");
  struct ibv_wc wc;
  int n = 0;
  const double t0 = now_s();
  while ((n = ibv_poll_cq(p.cq, 1, &wc)) == 0 && now_s() - t0 < 10) {
  }
  CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7,
        "it completes (status %d)", n == 1 ? (int)wc.status : -1);
  int same = 1;
  for (int i = 0; i < 4096; ++i) same &= p.buf[65536 + i] == 0x11;
  CHECK(same, "and moved the parent's bytes, not the child's");
  free_pair(&p);
  return failures != 0;
}

/* --- parent: ibv_alloc_parent_domain. A parent domain goes wherever its
 * PD goes (QPs, MRs, an extended CQ's parent_domain), holds the PD until
 * deallocated, and is refused where the API refuses one. rocemu's queue
 * buffers are the daemon's shared memory, so the custom allocators are
 * never called. --- */
static int g_allocs;
static void* count_alloc(struct ibv_pd* pd, void* pd_context, size_t size,
                         size_t alignment, uint64_t resource_type) {
  (void)pd, (void)pd_context, (void)size, (void)alignment, (void)resource_type;
  ++g_allocs;
  return IBV_ALLOCATOR_USE_DEFAULT;
}
static void count_free(struct ibv_pd* pd, void* pd_context, void* ptr,
                       uint64_t resource_type) {
  (void)pd, (void)pd_context, (void)ptr, (void)resource_type;
  ++g_allocs;
}

static int probe_parent(void) {
  struct pair p;
  memset(&p, 0, sizeof(p));
  p.ctx = open_first();
  struct ibv_pd* pd = ibv_alloc_pd(p.ctx);
  REQUIRE(pd != NULL, "ibv_alloc_pd");
  struct ibv_parent_domain_init_attr pa = {
      .pd = pd,
      .comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                   IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
      .alloc = count_alloc,
      .free = count_free,
      .pd_context = &p};
  p.pd = ibv_alloc_parent_domain(p.ctx, &pa);
  REQUIRE(p.pd != NULL && p.pd != pd && p.pd->context == p.ctx,
          "ibv_alloc_parent_domain with allocators");
  struct ibv_parent_domain_init_attr over = {.pd = p.pd};
  errno = 0;
  CHECK(ibv_alloc_parent_domain(p.ctx, &over) == NULL && errno == EINVAL,
        "a parent domain over a parent domain: EINVAL");
  struct ibv_parent_domain_init_attr unknown = {.pd = pd, .comp_mask = 1u << 7};
  errno = 0;
  CHECK(ibv_alloc_parent_domain(p.ctx, &unknown) == NULL && errno == EINVAL,
        "an unknown comp_mask bit: EINVAL");
  CHECK(ibv_dealloc_pd(pd) == EBUSY,
        "ibv_dealloc_pd of the PD under a parent domain: EBUSY");
  struct ibv_cq_init_attr_ex cqa = {.cqe = 64,
                                    .wc_flags = IBV_WC_STANDARD_FLAGS,
                                    .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
                                    .parent_domain = pd};
  errno = 0;
  CHECK(ibv_create_cq_ex(p.ctx, &cqa) == NULL && errno == EINVAL,
        "ibv_create_cq_ex with a PD that is no parent domain: EINVAL");
  cqa.parent_domain = p.pd;
  struct ibv_cq_ex* cqx = ibv_create_cq_ex(p.ctx, &cqa);
  REQUIRE(cqx != NULL, "ibv_create_cq_ex with the parent domain");
  p.cq = ibv_cq_ex_to_cq(cqx);
  /* QPs and a region made through the parent domain move data. */
  p.len = 1 << 16;
  REQUIRE(posix_memalign((void**)&p.buf, 4096, p.len) == 0, "buffer");
  for (size_t i = 0; i < 4096; ++i) p.buf[i] = (char)(i * 13);
  memset(p.buf + 4096, 0, 4096);
  p.mr = ibv_reg_mr(p.pd, p.buf, p.len,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  REQUIRE(p.mr != NULL && p.mr->pd == p.pd, "ibv_reg_mr on the parent domain");
  p.a = make_qp(&p, 8);
  p.b = make_qp(&p, 8);
  CHECK(p.a->pd == p.pd, "the QP's pd is the parent domain");
  connect_qp(&p, p.a, p.b->qp_num);
  connect_qp(&p, p.b, p.a->qp_num);
  REQUIRE(post_write(p.a, &p, 5, 0, 4096, 4096) == 0, "post an RDMA WRITE");
  struct ibv_wc wc;
  int n = 0;
  const double deadline = now_s() + 10;
  while ((n = ibv_poll_cq(p.cq, 1, &wc)) == 0 && now_s() < deadline) {
  }
  CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 5 &&
            wc.opcode == IBV_WC_RDMA_WRITE,
        "the WRITE completes on the parent domain's CQ (%d, status %d)", n,
        n == 1 ? (int)wc.status : -1);
  CHECK(memcmp(p.buf, p.buf + 4096, 4096) == 0, "and moved the bytes");
  CHECK(g_allocs == 0, "the allocators were not called (%d)", g_allocs);
  CHECK(ibv_destroy_qp(p.a) == 0 && ibv_destroy_qp(p.b) == 0,
        "ibv_destroy_qp both");
  CHECK(ibv_dereg_mr(p.mr) == 0, "ibv_dereg_mr");
  CHECK(ibv_destroy_cq(p.cq) == 0, "ibv_destroy_cq");
  CHECK(ibv_dealloc_pd(p.pd) == 0, "ibv_dealloc_pd of the parent domain");
  CHECK(ibv_dealloc_pd(p.pd) == EINVAL,
        "a second ibv_dealloc_pd of it: EINVAL");
  CHECK(ibv_dealloc_pd(pd) == 0, "then the PD goes");
  CHECK(ibv_close_device(p.ctx) == 0, "ibv_close_device");
  free(p.buf);
  return failures != 0;
}

/* One RDMA WRITE of len bytes from (laddr, lkey) to (raddr, rkey) on pair
 * p's QP a, waited for: its completion status, or -1 if none came. */
static int write_wait(struct pair* p, uint64_t laddr, uint32_t lkey,
                      uint64_t raddr, uint32_t rkey, uint32_t len) {
  struct ibv_sge sge = {laddr, len, lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (ibv_post_send(p->a, &wr, &bad) != 0) return -1;
  struct ibv_wc wc;
  const double t0 = now_s();
  while (now_s() - t0 < 10) {
    const int n = ibv_poll_cq(p->cq, 1, &wc);
    if (n < 0) return -1;
    if (n == 1) return (int)wc.status;
  }
  return -1;
}

/* --- memory: regions whose iova is not their address (ibv_reg_mr_iova2,
 * zero-based) and device memory (ibv_alloc_dm, ibv_reg_dm_mr), each read
 * and written by RDMA WRITEs between two QPs of one device. --- */
static int probe_memory(void) {
  struct pair p;
  make_pair(&p, 16, 0);
  const unsigned rw =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  enum { kLen = 65536 };
  uint8_t* mem;
  REQUIRE(posix_memalign((void**)&mem, 4096, kLen) == 0, "buffer");
  memset(mem, 0, kLen);
  for (int i = 0; i < 4096; ++i) p.buf[i] = (uint8_t)(i * 7 + 1);
  const uint64_t iova = 1ull << 40;
  struct ibv_mr* mr = ibv_reg_mr_iova2(p.pd, mem, kLen, iova, rw);
  REQUIRE(mr != NULL && mr->addr == mem && mr->length == kLen,
          "ibv_reg_mr_iova2 at iova 2^40 (errno %d)", errno);
  CHECK(write_wait(&p, (uintptr_t)p.buf, p.mr->lkey, iova + 8192, mr->rkey,
                   4096) == IBV_WC_SUCCESS &&
            memcmp(mem + 8192, p.buf, 4096) == 0,
        "a WRITE to iova + 8192 lands at the buffer's offset 8192");
  CHECK(write_wait(&p, iova + 8192, mr->lkey, (uintptr_t)p.buf + 65536,
                   p.mr->rkey, 4096) == IBV_WC_SUCCESS &&
            memcmp(p.buf + 65536, p.buf, 4096) == 0,
        "a WRITE gathers from the region by its iova");
  struct ibv_mr* zero = ibv_reg_mr_iova2(p.pd, mem, kLen, 0, rw);
  CHECK(zero != NULL, "ibv_reg_mr_iova2 at iova 0 (zero-based)");
  if (zero != NULL) {
    CHECK(write_wait(&p, (uintptr_t)p.buf + 100, p.mr->lkey, 40000, zero->rkey,
                     1000) == IBV_WC_SUCCESS &&
              memcmp(mem + 40000, p.buf + 100, 1000) == 0,
          "a WRITE to address 40000 of the zero-based region");
    CHECK(ibv_dereg_mr(zero) == 0, "ibv_dereg_mr (zero-based)");
  }
  CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr (iova)");

  struct ibv_device_attr_ex ax;
  REQUIRE(ibv_query_device_ex(p.ctx, NULL, &ax) == 0, "ibv_query_device_ex");
  CHECK(ax.max_dm_size >= 4096, "max_dm_size %lu",
        (unsigned long)ax.max_dm_size);
  struct ibv_alloc_dm_attr big = {.length = ax.max_dm_size + 1};
  errno = 0;
  CHECK(ibv_alloc_dm(p.ctx, &big) == NULL && errno == EINVAL,
        "ibv_alloc_dm above max_dm_size: EINVAL");
  struct ibv_alloc_dm_attr da = {.length = 4096};
  struct ibv_dm* dm = ibv_alloc_dm(p.ctx, &da);
  REQUIRE(dm != NULL, "ibv_alloc_dm of 4 KiB (errno %d)", errno);
  CHECK(ibv_memcpy_to_dm(dm, 2, p.buf, 8) == EINVAL,
        "ibv_memcpy_to_dm off the 4-byte grain: EINVAL");
  CHECK(ibv_memcpy_to_dm(dm, 4092, p.buf, 8) == EFAULT,
        "ibv_memcpy_to_dm past the end: EFAULT");
  CHECK(ibv_memcpy_to_dm(dm, 0, p.buf, 4096) == 0, "ibv_memcpy_to_dm");
  uint8_t back[4096];
  CHECK(ibv_memcpy_from_dm(back, dm, 0, 4096) == 0 &&
            memcmp(back, p.buf, 4096) == 0,
        "ibv_memcpy_from_dm reads back what was written");
  errno = 0;
  CHECK(ibv_reg_dm_mr(p.pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE) == NULL &&
            errno == EINVAL,
        "ibv_reg_dm_mr without IBV_ACCESS_ZERO_BASED: EINVAL");
  errno = 0;
  CHECK(ibv_reg_dm_mr(p.pd, dm, 2048, 4096,
                      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE) == NULL &&
            errno == EINVAL,
        "ibv_reg_dm_mr past the DM's end: EINVAL");
  struct ibv_mr* dmr =
      ibv_reg_dm_mr(p.pd, dm, 1024, 2048, IBV_ACCESS_ZERO_BASED | rw);
  REQUIRE(dmr != NULL, "ibv_reg_dm_mr of [1024, +2048) (errno %d)", errno);
  CHECK(write_wait(&p, (uintptr_t)p.buf + 512, p.mr->lkey, 16, dmr->rkey,
                   256) == IBV_WC_SUCCESS &&
            ibv_memcpy_from_dm(back, dm, 1040, 256) == 0 &&
            memcmp(back, p.buf + 512, 256) == 0,
        "a WRITE to address 16 of the DM MR lands at DM offset 1040");
  CHECK(ibv_free_dm(dm) == EBUSY, "ibv_free_dm with an MR on it: EBUSY");
  CHECK(ibv_dereg_mr(dmr) == 0, "ibv_dereg_mr (DM)");
  CHECK(ibv_free_dm(dm) == 0, "then ibv_free_dm");
  free(mem);
  free_pair(&p);
  return failures != 0;
}

/* --- clock: completion timestamps (an extended CQ) on the clock
 * ibv_query_rt_values_ex reads. --- */
static int probe_clock(void) {
  struct pair p;
  make_pair(&p, 16, 0);
  struct ibv_device_attr_ex ax;
  REQUIRE(ibv_query_device_ex(p.ctx, NULL, &ax) == 0, "ibv_query_device_ex");
  CHECK(ax.completion_timestamp_mask != 0 && ax.hca_core_clock != 0,
        "completion_timestamp_mask %#lx, hca_core_clock %lu kHz",
        (unsigned long)ax.completion_timestamp_mask,
        (unsigned long)ax.hca_core_clock);
  struct ibv_cq_init_attr_ex ca = {
      .cqe = 16,
      .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK};
  struct ibv_cq_ex* cq = ibv_create_cq_ex(p.ctx, &ca);
  REQUIRE(cq != NULL,
          "ibv_create_cq_ex with raw and wall-clock completion timestamps "
          "(%d)",
          errno);
  struct ibv_cq_init_attr_ex vlan = {.cqe = 16,
                                     .wc_flags = IBV_WC_EX_WITH_CVLAN};
  errno = 0;
  CHECK(ibv_create_cq_ex(p.ctx, &vlan) == NULL && errno == EOPNOTSUPP,
        "a flag the device cannot report (CVLAN): EOPNOTSUPP");
  struct ibv_qp_init_attr qa = {.send_cq = ibv_cq_ex_to_cq(cq),
                                .recv_cq = ibv_cq_ex_to_cq(cq),
                                .cap = {.max_send_wr = 4,
                                        .max_recv_wr = 4,
                                        .max_send_sge = 1,
                                        .max_recv_sge = 1},
                                .qp_type = IBV_QPT_RC};
  struct ibv_qp* qp = ibv_create_qp(p.pd, &qa);
  REQUIRE(qp != NULL, "a QP on the timestamping CQ");
  struct ibv_qp* peer = make_qp(&p, 16);
  connect_qp(&p, qp, peer->qp_num);
  connect_qp(&p, peer, qp->qp_num);
  struct timespec wall_before, wall_after;
  clock_gettime(CLOCK_REALTIME, &wall_before);
  struct ibv_values_ex before = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  REQUIRE(ibv_query_rt_values_ex(p.ctx, &before) == 0 &&
              before.comp_mask == IBV_VALUES_MASK_RAW_CLOCK,
          "ibv_query_rt_values_ex");
  struct ibv_sge sge = {(uintptr_t)p.buf, 64, p.mr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = 77;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uintptr_t)p.buf + 4096;
  wr.wr.rdma.rkey = p.mr->rkey;
  REQUIRE(ibv_post_send(qp, &wr, &bad) == 0, "a WRITE");
  struct ibv_poll_cq_attr pa = {0};
  int rc = ENOENT;
  const double t0 = now_s();
  while (rc == ENOENT && now_s() - t0 < 10) rc = ibv_start_poll(cq, &pa);
  REQUIRE(rc == 0, "its completion (%d)", rc);
  const uint64_t ts = ibv_wc_read_completion_ts(cq);
  const uint64_t wall = ibv_wc_read_completion_wallclock_ns(cq);
  CHECK(cq->wr_id == 77 && cq->status == IBV_WC_SUCCESS, "the WRITE's");
  ibv_end_poll(cq);
  struct ibv_values_ex after = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  REQUIRE(ibv_query_rt_values_ex(p.ctx, &after) == 0, "ibv_query_rt_values_ex");
  clock_gettime(CLOCK_REALTIME, &wall_after);
  const uint64_t wb =
      (uint64_t)wall_before.tv_sec * 1000000000u + wall_before.tv_nsec;
  const uint64_t wa =
      (uint64_t)wall_after.tv_sec * 1000000000u + wall_after.tv_nsec;
  CHECK(wb <= wall && wall <= wa,
        "its wall-clock stamp %lu lies between CLOCK_REALTIME before the "
        "post (%lu) and after the poll (%lu)",
        (unsigned long)wall, (unsigned long)wb, (unsigned long)wa);
  CHECK((uint64_t)before.raw_clock.tv_nsec <= ts &&
            ts <= (uint64_t)after.raw_clock.tv_nsec,
        "its timestamp %lu lies between the clock read before the post "
        "(%ld) and after the poll (%ld)",
        (unsigned long)ts, before.raw_clock.tv_nsec, after.raw_clock.tv_nsec);
  CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp");
  CHECK(ibv_destroy_qp(peer) == 0, "ibv_destroy_qp (peer)");
  CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "ibv_destroy_cq");
  free_pair(&p);
  return failures != 0;
}

/* --- refuse: what a software RoCE device lacks fails the libibverbs way.
 */
static int probe_refuse(void) {
  struct ibv_context* ctx = open_first();
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  REQUIRE(pd != NULL, "ibv_alloc_pd");
  struct verbs_context* v = verbs_get_ctx(ctx);
  CHECK(v != NULL && v->sz >= sizeof(struct verbs_context),
        "an extended context (verbs_context, sz %zu)", v ? v->sz : 0);
  /* Memory windows are offered; a window holds its PD until deallocated. */
  struct ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  CHECK(mw != NULL && mw->type == IBV_MW_TYPE_2 && mw->rkey != 0,
        "ibv_alloc_mw type 2");
  errno = 0;
  CHECK(ibv_alloc_mw(pd, (enum ibv_mw_type)3) == NULL && errno == EINVAL,
        "ibv_alloc_mw type 3: EINVAL");
  CHECK(mw != NULL && ibv_dealloc_pd(pd) == EBUSY,
        "ibv_dealloc_pd with a window: EBUSY");
  CHECK(mw != NULL && ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
  struct ibv_xrcd_init_attr xa = {
      .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
      .fd = -1,
      .oflags = O_CREAT};
  /* XRC: fd -1 is a private domain; a file with no domain yet needs
   * O_CREAT, else EAGAIN as from the kernel. */
  struct ibv_xrcd* xrcd = ibv_open_xrcd(ctx, &xa);
  CHECK(xrcd != NULL && ibv_close_xrcd(xrcd) == 0,
        "ibv_open_xrcd fd -1 O_CREAT: a private domain, closed");
  char xpath[] = "/tmp/ibv_probe_xrcd_XXXXXX";
  xa.fd = mkstemp(xpath);
  xa.oflags = 0;
  errno = 0;
  CHECK(xa.fd >= 0 && ibv_open_xrcd(ctx, &xa) == NULL && errno == EAGAIN,
        "ibv_open_xrcd of a file without a domain, no O_CREAT: EAGAIN");
  if (xa.fd >= 0) {
    close(xa.fd);
    unlink(xpath);
  }
  char* mem = malloc(8192);
  errno = 0;
  struct ibv_mr* odp =
      ibv_reg_mr(pd, mem, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  CHECK(odp != NULL, "ibv_reg_mr with IBV_ACCESS_ON_DEMAND (ODP)");
  struct ibv_sge pre = {
      .addr = (uintptr_t)mem, .length = 8192, .lkey = odp ? odp->lkey : 0};
  CHECK(odp != NULL && ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                                     IBV_ADVISE_MR_FLAG_FLUSH, &pre, 1) == 0,
        "ibv_advise_mr: a prefetch of the ODP region");
  CHECK(
      ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0x80, &pre, 1) == EINVAL,
      "ibv_advise_mr with an unknown flag: EINVAL");
  if (odp) ibv_dereg_mr(odp);
  struct ibv_mr* implicit = ibv_reg_mr(
      pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  CHECK(implicit != NULL, "implicit ODP: the whole address space");
  if (implicit) ibv_dereg_mr(implicit);
  errno = 0;
  CHECK(ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE) == NULL &&
            errno == EINVAL,
        "the whole address space without ODP: EINVAL");
  struct ibv_mr* mr = ibv_reg_mr(
      pd, mem, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  CHECK(mr != NULL, "an optional access bit (relaxed ordering) is ignored");
  if (mr) ibv_dereg_mr(mr);
  errno = 0;
  CHECK(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE) == NULL &&
            errno == EOPNOTSUPP,
        "ibv_reg_dmabuf_mr: EOPNOTSUPP");
  struct ibv_cq_init_attr_ex cqa = {.cqe = 16,
                                    .wc_flags = IBV_WC_EX_WITH_FLOW_TAG};
  errno = 0;
  CHECK(ibv_create_cq_ex(ctx, &cqa) == NULL && errno == EOPNOTSUPP,
        "ibv_create_cq_ex with flow tags: EOPNOTSUPP");
  cqa.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
  struct ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &cqa);
  CHECK(cqx != NULL, "ibv_create_cq_ex with standard flags");
  struct ibv_qp_init_attr qa;
  memset(&qa, 0, sizeof(qa));
  qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cqx);
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  /* Raw packet QPs need CAP_NET_RAW, as on a ConnectX (EACCES without). */
  qa.qp_type = IBV_QPT_RAW_PACKET;
  errno = 0;
  struct ibv_qp* raw = ibv_create_qp(pd, &qa);
  CHECK(raw != NULL || errno == EACCES,
        "a raw packet QP (EACCES without CAP_NET_RAW: errno %d)", errno);
  qa.qp_type = IBV_QPT_RC;
  struct ibv_qp* qp = ibv_create_qp(pd, &qa);
  CHECK(qp != NULL, "an RC QP");
  CHECK(qp != NULL && ibv_qp_to_qp_ex(qp) == NULL,
        "ibv_qp_to_qp_ex is NULL for a QP made without send_ops_flags");
  struct ibv_flow_attr fa = {.size = sizeof(fa), .port = 1};
  errno = 0;
  CHECK(qp != NULL && ibv_create_flow(qp, &fa) == NULL && errno == EINVAL,
        "ibv_create_flow on an RC QP: EINVAL");
  if (raw != NULL) {
    struct ibv_flow* flow = ibv_create_flow(raw, &fa);
    CHECK(flow != NULL, "ibv_create_flow (a catch-all rule) on the raw QP");
    CHECK(ibv_destroy_qp(raw) == EBUSY,
          "ibv_destroy_qp of a QP holding a flow rule: EBUSY");
    CHECK(flow != NULL && ibv_destroy_flow(flow) == 0, "ibv_destroy_flow");
    CHECK(ibv_destroy_qp(raw) == 0, "then the raw QP goes");
  }
  struct ibv_wq_init_attr wa = {.wq_type = IBV_WQT_RQ,
                                .max_wr = 4,
                                .max_sge = 1,
                                .pd = pd,
                                .cq = ibv_cq_ex_to_cq(cqx)};
  errno = 0;
  struct ibv_wq* wq = ibv_create_wq(ctx, &wa);
  CHECK(raw != NULL ? wq != NULL && wq->wq_num != 0 : errno == EACCES,
        "ibv_create_wq (a receive-only raw QP: errno %d)", errno);
  if (wq != NULL) CHECK(ibv_destroy_wq(wq) == 0, "ibv_destroy_wq");
  struct ibv_query_device_ex_input in = {.comp_mask = 1};
  struct ibv_device_attr_ex dax;
  CHECK(ibv_query_device_ex(ctx, &in, &dax) == EINVAL,
        "ibv_query_device_ex with an unknown input mask: EINVAL");
  const uint32_t odp_rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                          IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
                          IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
  CHECK(
      ibv_query_device_ex(ctx, NULL, &dax) == 0 &&
          dax.odp_caps.general_caps ==
              (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT) &&
          dax.odp_caps.per_transport_caps.rc_odp_caps == odp_rc &&
          dax.completion_timestamp_mask == ~(uint64_t)0 &&
          dax.orig_attr.max_mw > 0 &&
          (dax.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
          (dax.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
          (dax.orig_attr.device_cap_flags & IBV_DEVICE_MANAGED_FLOW_STEERING) &&
          dax.rss_caps.supported_qpts == 1u << IBV_QPT_RAW_PACKET &&
          dax.raw_packet_caps == 0,
      "ibv_query_device_ex: ODP (implicit too), 64-bit timestamps; "
      "windows type 1, 2B; flow steering, RSS on raw QPs, no raw "
      "offloads");
  /* The private provider interface exists and refuses. */
  int (*cmd)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "ibv_cmd_alloc_pd");
  CHECK(cmd != NULL && cmd() == EOPNOTSUPP,
        "IBVERBS_PRIVATE_34 ibv_cmd_alloc_pd refuses (EOPNOTSUPP)");
  if (qp) ibv_destroy_qp(qp);
  if (cqx) ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
  free(mem);
  CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
  CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
  return failures != 0;
}

// libibverbs' marshalling of SA path records to and from the kernel's
// layout (no header of Debian's declares them any more; the ABI has them).
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst,
                                 struct ib_user_path_rec* src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst,
                               struct ibv_sa_path_rec* src);

// Every field of a path record survives kernel -> ibverbs -> kernel, and
// lands in the field of the same name. No daemon needed.
static int probe_marshall(void) {
  struct ib_user_path_rec k;
  memset(&k, 0, sizeof(k));
  for (int i = 0; i < 16; ++i) {
    k.dgid[i] = (uint8_t)(0x10 + i);
    k.sgid[i] = (uint8_t)(0x40 + i);
  }
  k.dlid = 0x1234;
  k.slid = 0x5678;
  k.raw_traffic = 1;
  k.flow_label = 0xABCDE;
  k.reversible = 1;
  k.mtu = 5;
  k.pkey = 0xFFFF;
  k.hop_limit = 64;
  k.traffic_class = 0x28;
  k.numb_path = 3;
  k.sl = 7;
  k.mtu_selector = 2;
  k.rate_selector = 1;
  k.rate = 16;
  k.packet_life_time_selector = 2;
  k.packet_life_time = 18;
  k.preference = 9;
  struct ibv_sa_path_rec v;
  memset(&v, 0xEE, sizeof(v));
  ibv_copy_path_rec_from_kern(&v, &k);
  CHECK(v.dgid.raw[0] == 0x10 && v.dgid.raw[15] == 0x1F &&
            v.sgid.raw[0] == 0x40 && v.sgid.raw[15] == 0x4F,
        "path record GIDs from the kernel's layout");
  CHECK(v.dlid == 0x1234 && v.slid == 0x5678 && v.raw_traffic == 1 &&
            v.flow_label == 0xABCDE && v.reversible == 1 && v.mtu == 5 &&
            v.pkey == 0xFFFF && v.hop_limit == 64 && v.traffic_class == 0x28 &&
            v.numb_path == 3 && v.sl == 7 && v.mtu_selector == 2 &&
            v.rate_selector == 1 && v.rate == 16 &&
            v.packet_life_time_selector == 2 && v.packet_life_time == 18 &&
            v.preference == 9,
        "path record fields from the kernel's layout");
  struct ib_user_path_rec back;
  memset(&back, 0xEE, sizeof(back));
  ibv_copy_path_rec_to_kern(&back, &v);
  CHECK(memcmp(&back, &k, sizeof(k)) == 0,
        "path record back to the kernel's layout, bit for bit");
  return failures != 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 2) {
    fprintf(stderr,
            "usage: %s nodaemon|fatal|channel|threads|refuse|fork|marshall|"
            "parent\n",
            argv[0]);
    return 2;
  }
  const char* s = argv[1];
  if (strcmp(s, "nodaemon") == 0) return probe_nodaemon();
  if (strcmp(s, "fatal") == 0) return probe_fatal();
  if (strcmp(s, "channel") == 0) return probe_channel();
  if (strcmp(s, "threads") == 0) return probe_threads();
  if (strcmp(s, "refuse") == 0) return probe_refuse();
  if (strcmp(s, "fork") == 0) return probe_fork();
  if (strcmp(s, "marshall") == 0) return probe_marshall();
  if (strcmp(s, "parent") == 0) return probe_parent();
  if (strcmp(s, "memory") == 0) return probe_memory();
  if (strcmp(s, "clock") == 0) return probe_clock();
  fprintf(stderr, "unknown probe %s\n", s);
  return 2;
}
