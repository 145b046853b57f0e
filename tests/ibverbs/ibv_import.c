/* Importing a context and its objects (ibv_import_device, ibv_import_pd,
 * ibv_import_mr, ibv_import_dm) through the libibverbs API, as a program
 * built against Debian 12's libibverbs does over the drop-in library and
 * one rocemud: the imported objects carry the originals' handles and keys,
 * RDMA WRITEs posted on the imported context with the imported PD and MR
 * land, an object destroyed through one handle is gone for the other, the
 * session outlives the context it was opened with, and what cannot be
 * imported is refused (a stranger's fd, a forked child, unknown handles, an
 * MR under another PD). Prints "ok"/"FAIL" lines; exit 0 when all passed. */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_checks.h"

enum { kLen = 8192, kHalf = kLen / 2 };

/* One RDMA WRITE of `len` bytes from `src` (lkey) to `dst` (rkey) on `qp`,
 * waited for on `cq`: the completion's status. */
static int write_and_wait(struct ibv_qp* qp, struct ibv_cq* cq, void* src,
                          uint32_t lkey, void* dst, uint32_t rkey,
                          uint32_t len) {
  struct ibv_sge sge = {(uintptr_t)src, len, lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = 7;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uintptr_t)dst;
  wr.wr.rdma.rkey = rkey;
  if (ibv_post_send(qp, &wr, &bad) != 0) return -1;
  struct ibv_wc wc;
  const time_t deadline = time(NULL) + 30; /* a bound, not a measurement */
  while (time(NULL) < deadline) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) return -1;
    if (n == 1) return wc.status;
    sched_yield();
  }
  return -2; /* no completion */
}

static struct ibv_qp* rc_qp(struct ibv_context* ctx, struct ibv_pd* pd,
                            struct ibv_cq* cq) {
  struct ibv_qp_init_attr init;
  memset(&init, 0, sizeof(init));
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap.max_send_wr = 8;
  init.cap.max_recv_wr = 8;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  struct ibv_qp* qp = ibv_create_qp(pd, &init);
  REQUIRE(qp != NULL, "an RC QP on %s context",
          ctx != NULL ? "the imported" : "a");
  return qp;
}

int main(void) {
  struct ibv_context* ctx = open_first();
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  struct ibv_pd* pd2 = ibv_alloc_pd(ctx);
  REQUIRE(pd != NULL && pd2 != NULL, "two PDs");
  uint8_t* buf = aligned_alloc(4096, kLen);
  REQUIRE(buf != NULL, "a buffer");
  memset(buf, 0, kLen);
  const int access =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, kLen, access);
  REQUIRE(mr != NULL, "an MR");

  /* What is not ours to import. */
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0, "a pipe");
  errno = 0;
  CHECK(ibv_import_device(pipefd[0]) == NULL && errno == EOPNOTSUPP,
        "a pipe is not a context to import: EOPNOTSUPP");
  const pid_t child = fork();
  if (child == 0) {
    /* The child inherited the descriptor, not the session. */
    const int fd = dup(ctx->cmd_fd);
    errno = 0;
    _exit(ibv_import_device(fd) == NULL && errno == EOPNOTSUPP ? 0 : 1);
  }
  int status = -1;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "a forked child cannot import its parent's context (EOPNOTSUPP)");

  const int fd = dup(ctx->cmd_fd);
  struct ibv_context* ictx = ibv_import_device(fd);
  REQUIRE(ictx != NULL, "ibv_import_device(dup of cmd_fd)");
  CHECK(ictx->cmd_fd == fd, "the imported context answers on that fd (%d)",
        ictx->cmd_fd);
  struct ibv_device_attr a1, a2;
  CHECK(ibv_query_device(ctx, &a1) == 0 && ibv_query_device(ictx, &a2) == 0 &&
            a1.node_guid == a2.node_guid && a1.node_guid != 0,
        "both contexts are the same device");

  errno = 0;
  CHECK(ibv_import_pd(ictx, pd->handle + 1000) == NULL && errno == EINVAL,
        "an unknown PD handle: EINVAL");
  struct ibv_pd* ipd = ibv_import_pd(ictx, pd->handle);
  REQUIRE(ipd != NULL && ipd->handle == pd->handle && ipd->context == ictx,
          "ibv_import_pd: handle %u on the imported context", pd->handle);
  struct ibv_pd* ipd2 = ibv_import_pd(ictx, pd2->handle);
  REQUIRE(ipd2 != NULL, "the second PD imported");
  errno = 0;
  CHECK(ibv_import_mr(ipd2, mr->handle) == NULL && errno == EINVAL,
        "an MR imported under another PD: EINVAL");
  errno = 0;
  CHECK(ibv_import_mr(ipd, mr->handle ^ 0x5a5a00) == NULL && errno == EINVAL,
        "an unknown MR handle: EINVAL");
  struct ibv_mr* imr = ibv_import_mr(ipd, mr->handle);
  REQUIRE(imr != NULL, "ibv_import_mr");
  CHECK(imr->lkey == mr->lkey && imr->rkey == mr->rkey &&
            imr->length == mr->length && imr->addr == NULL && imr->pd == ipd &&
            imr->context == ictx,
        "the imported MR: the original's keys and length, addr NULL");

  /* Traffic on the imported context with the imported PD and MR. */
  struct ibv_cq* cq = ibv_create_cq(ictx, 16, NULL, NULL, 0);
  REQUIRE(cq != NULL, "a CQ on the imported context");
  struct ibv_qp* qa = rc_qp(ictx, ipd, cq);
  struct ibv_qp* qb = rc_qp(ictx, ipd, cq);
  const struct loopback_rc c = {21, 1, 1, 0};
  connect_loopback_rc(ictx, qa, qb->qp_num, &c);
  connect_loopback_rc(ictx, qb, qa->qp_num, &c);
  for (int i = 0; i < kHalf; ++i) buf[i] = (uint8_t)(i * 7 + 3);
  CHECK(write_and_wait(qa, cq, buf, imr->lkey, buf + kHalf, imr->rkey, kHalf) ==
                IBV_WC_SUCCESS &&
            memcmp(buf, buf + kHalf, kHalf) == 0,
        "an RDMA WRITE with the imported MR's keys lands");

  /* Destroyed through one handle, gone for both. */
  struct ibv_mr* mr2 = ibv_reg_mr(pd2, buf, kHalf, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr2 != NULL, "a second MR");
  struct ibv_mr* imr2 = ibv_import_mr(ipd2, mr2->handle);
  REQUIRE(imr2 != NULL, "the second MR imported");
  CHECK(ibv_dereg_mr(imr2) == 0, "deregistered through the imported handle");
  errno = 0;
  CHECK(ibv_import_mr(ipd2, mr2->handle) == NULL && errno == EINVAL,
        "the deregistered MR can no longer be imported");
  CHECK(ibv_dereg_mr(mr2) != 0,
        "nor deregistered again through the original handle");
  /* As with rdma-core, the stale handle is the application's to drop. */
  ibv_unimport_mr(mr2);
  CHECK(ibv_dealloc_pd(ipd2) == 0, "a PD deallocated through its import");
  errno = 0;
  CHECK(ibv_import_pd(ictx, pd2->handle) == NULL && errno == EINVAL,
        "the deallocated PD can no longer be imported");
  ibv_unimport_pd(pd2);

  /* Device memory, where the device has it. */
  struct ibv_device_attr_ex ax;
  memset(&ax, 0, sizeof(ax));
  REQUIRE(ibv_query_device_ex(ctx, NULL, &ax) == 0, "ibv_query_device_ex");
  if (ax.max_dm_size > 0) {
    struct ibv_alloc_dm_attr da = {256, 0, 0};
    struct ibv_dm* dm = ibv_alloc_dm(ctx, &da);
    REQUIRE(dm != NULL, "ibv_alloc_dm");
    struct ibv_dm* idm = ibv_import_dm(ictx, dm->handle);
    REQUIRE(idm != NULL, "ibv_import_dm");
    uint8_t in[256], out[256];
    for (int i = 0; i < 256; ++i) in[i] = (uint8_t)(255 - i);
    memset(out, 0, sizeof(out));
    CHECK(ibv_memcpy_to_dm(dm, 0, in, 256) == 0 &&
              ibv_memcpy_from_dm(out, idm, 0, 256) == 0 &&
              memcmp(in, out, 256) == 0,
          "written through one DM handle, read through the imported one");
    CHECK(ibv_free_dm(idm) == 0, "the DM freed through its import");
    CHECK(ibv_memcpy_to_dm(dm, 0, in, 256) == EINVAL,
          "the original handle of a freed DM refuses copies (EINVAL)");
    errno = 0;
    CHECK(ibv_import_dm(ictx, dm->handle) == NULL && errno == EINVAL,
          "a freed DM can no longer be imported");
    ibv_unimport_dm(dm);
  }

  /* The session outlives the context it was opened with. */
  const uint32_t lkey = imr->lkey, rkey = imr->rkey;
  ibv_unimport_mr(imr);
  /* The MR and PD live on in the session: only these handles go. */
  ibv_unimport_mr(mr);
  ibv_unimport_pd(pd);
  CHECK(ibv_close_device(ctx) == 0, "the original context closed");
  memset(buf + kHalf, 0, kHalf);
  CHECK(write_and_wait(qa, cq, buf, lkey, buf + kHalf, rkey, kHalf) ==
                IBV_WC_SUCCESS &&
            memcmp(buf, buf + kHalf, kHalf) == 0,
        "the imported context still works after the original closed");
  CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0 &&
            ibv_destroy_cq(cq) == 0,
        "its QPs and CQ destroyed");
  ibv_unimport_pd(ipd);
  CHECK(ibv_close_device(ictx) == 0, "the imported context closed");
  CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF,
        "closing it closed the descriptor it was imported with");
  printf("%s: %d failure(s)\n", failures == 0 ? "ok" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
