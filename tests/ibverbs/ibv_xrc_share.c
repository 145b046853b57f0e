/* XRC shared between two processes through one rocemud, as an ordinary
 * program built against Debian 12's libibverbs uses it: the parent opens
 * an XRC domain by file (O_CREAT), makes an XRC SRQ and an XRC TGT QP; the
 * child opens the same domain through the same file, opens the TGT QP by
 * number (ibv_open_qp), brings it up, and sends from its own XRC INI QP
 * into the parent's SRQ. The parent's SRQ CQ must show the message with
 * the TGT QP's number and the child's INI QP as source. Also: a domain of
 * another file does not reach the TGT QP; O_EXCL on an existing domain and
 * no O_CREAT on a new one are refused; the INI QP takes no receive, the
 * TGT QP no send; the last close of a domain in use is EBUSY. Prints
 * "ok"/"FAIL" lines; exit 0 when all passed.
 * usage: ibv_xrc_share FILE OTHER_FILE */
#include <arpa/inet.h>
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

enum { kLen = 64 };

struct shared {
  uint32_t tgt_qpn;
  uint32_t srqn;
  uint32_t ini_qpn;
};

static void must_io(ssize_t n, size_t want, const char* what) {
  REQUIRE(n == (ssize_t)want, "pipe %s", what);
}

static struct ibv_xrcd* open_xrcd(struct ibv_context* ctx, const char* path,
                                  int oflags) {
  const int fd = open(path, O_RDONLY | O_CREAT, 0600);
  REQUIRE(fd >= 0, "open %s", path);
  struct ibv_xrcd_init_attr a;
  memset(&a, 0, sizeof(a));
  a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  a.fd = fd;
  a.oflags = oflags;
  struct ibv_xrcd* x = ibv_open_xrcd(ctx, &a);
  close(fd); /* the domain outlives the fd, as the kernel's does */
  return x;
}

static int wait_cq(struct ibv_cq* cq, struct ibv_wc* wc) {
  const time_t deadline = time(NULL) + 20;
  int n = 0;
  while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && time(NULL) < deadline) {
    sched_yield();
  }
  return n;
}

static int child(const char* path, const char* other, int rd, int wr) {
  struct shared s;
  must_io(read(rd, &s, sizeof(s)), sizeof(s), "from the parent");
  struct ibv_context* ctx = open_first();
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  REQUIRE(pd != NULL && cq != NULL, "child PD and CQ");
  static uint8_t buf[kLen];
  for (int i = 0; i < kLen; ++i) buf[i] = (uint8_t)(0xA5 ^ i);
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr != NULL, "child MR");

  errno = 0;
  CHECK(open_xrcd(ctx, path, O_CREAT | O_EXCL) == NULL && errno == EINVAL,
        "O_EXCL on the parent's domain is refused");
  struct ibv_xrcd* xrcd = open_xrcd(ctx, path, 0);
  REQUIRE(xrcd != NULL, "the parent's domain opened through its file");

  /* A domain of another file does not reach the parent's TGT QP. */
  errno = 0;
  CHECK(open_xrcd(ctx, other, 0) == NULL && errno == EAGAIN,
        "no O_CREAT: a file without a domain is EAGAIN");
  struct ibv_xrcd* mine = open_xrcd(ctx, other, O_CREAT);
  REQUIRE(mine != NULL, "a domain of another file");
  struct ibv_qp_open_attr oa;
  memset(&oa, 0, sizeof(oa));
  oa.comp_mask =
      IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
  oa.qp_num = s.tgt_qpn;
  oa.qp_type = IBV_QPT_XRC_RECV;
  oa.xrcd = mine;
  CHECK(ibv_open_qp(ctx, &oa) == NULL,
        "ibv_open_qp through another domain is refused");
  CHECK(ibv_close_xrcd(mine) == 0, "close the other domain");

  oa.xrcd = xrcd;
  struct ibv_qp* tgt = ibv_open_qp(ctx, &oa);
  REQUIRE(tgt != NULL && tgt->qp_num == s.tgt_qpn,
          "ibv_open_qp of the parent's TGT QP 0x%x", s.tgt_qpn);

  struct ibv_qp_init_attr_ex ia;
  memset(&ia, 0, sizeof(ia));
  ia.qp_type = IBV_QPT_XRC_SEND;
  ia.send_cq = cq;
  ia.cap.max_send_wr = 4;
  ia.cap.max_send_sge = 1;
  ia.comp_mask = IBV_QP_INIT_ATTR_PD;
  ia.pd = pd;
  struct ibv_qp* ini = ibv_create_qp_ex(ctx, &ia);
  REQUIRE(ini != NULL, "XRC INI QP without a receive CQ");
  s.ini_qpn = ini->qp_num;

  const struct loopback_rc c = {77, 4, 1, 0};
  connect_loopback_rc(ctx, tgt, ini->qp_num, &c); /* the opened TGT QP */
  connect_loopback_rc(ctx, ini, s.tgt_qpn, &c);

  struct ibv_sge sge = {(uintptr_t)buf, kLen, mr->lkey};
  struct ibv_recv_wr rw, *bad_rw = NULL;
  memset(&rw, 0, sizeof(rw));
  rw.sg_list = &sge;
  rw.num_sge = 1;
  CHECK(ibv_post_recv(ini, &rw, &bad_rw) == EINVAL,
        "ibv_post_recv on the INI QP is EINVAL");

  struct ibv_send_wr sw, *bad = NULL;
  memset(&sw, 0, sizeof(sw));
  sw.wr_id = 7;
  sw.opcode = IBV_WR_SEND_WITH_IMM;
  sw.imm_data = htonl(0x1234);
  sw.send_flags = IBV_SEND_SIGNALED;
  sw.sg_list = &sge;
  sw.num_sge = 1;
  sw.qp_type.xrc.remote_srqn = s.srqn;
  REQUIRE(ibv_post_send(ini, &sw, &bad) == 0, "SEND to SRQ 0x%x", s.srqn);
  struct ibv_wc wc;
  CHECK(wait_cq(cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7,
        "the SEND completed (status %d)", wc.status);

  must_io(write(wr, &s, sizeof(s)), sizeof(s), "to the parent");
  /* Its hold of the TGT QP goes; the parent's stays. */
  CHECK(ibv_destroy_qp(tgt) == 0, "drop the child's hold of the TGT QP");
  CHECK(ibv_destroy_qp(ini) == 0, "destroy the INI QP");
  CHECK(ibv_close_xrcd(xrcd) == 0, "the child closes the domain");
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: ibv_xrc_share FILE OTHER_FILE\n");
    return 2;
  }
  int to_child[2], to_parent[2];
  REQUIRE(pipe(to_child) == 0 && pipe(to_parent) == 0, "pipes");
  fflush(stdout);
  const pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) _exit(child(argv[1], argv[2], to_child[0], to_parent[1]));

  struct ibv_context* ctx = open_first();
  struct ibv_device_attr da;
  REQUIRE(ibv_query_device(ctx, &da) == 0, "ibv_query_device");
  CHECK((da.device_cap_flags & IBV_DEVICE_XRC) != 0, "IBV_DEVICE_XRC");
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  REQUIRE(pd != NULL && cq != NULL, "parent PD and CQ");
  static uint8_t buf[kLen];
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr != NULL, "parent MR");
  struct ibv_xrcd* xrcd = open_xrcd(ctx, argv[1], O_CREAT);
  REQUIRE(xrcd != NULL, "ibv_open_xrcd(O_CREAT)");

  struct ibv_srq_init_attr_ex sa;
  memset(&sa, 0, sizeof(sa));
  sa.attr.max_wr = 8;
  sa.attr.max_sge = 1;
  sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                 IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  sa.srq_type = IBV_SRQT_XRC;
  sa.pd = pd;
  sa.xrcd = xrcd;
  sa.cq = cq;
  struct ibv_srq* srq = ibv_create_srq_ex(ctx, &sa);
  REQUIRE(srq != NULL, "XRC SRQ");
  struct shared s;
  memset(&s, 0, sizeof(s));
  REQUIRE(ibv_get_srq_num(srq, &s.srqn) == 0, "ibv_get_srq_num");

  struct ibv_qp_init_attr_ex ia;
  memset(&ia, 0, sizeof(ia));
  ia.qp_type = IBV_QPT_XRC_RECV;
  ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
  ia.xrcd = xrcd;
  struct ibv_qp* tgt = ibv_create_qp_ex(ctx, &ia);
  REQUIRE(tgt != NULL, "XRC TGT QP");
  s.tgt_qpn = tgt->qp_num;

  struct ibv_sge sge = {(uintptr_t)buf, kLen, mr->lkey};
  struct ibv_recv_wr rw, *bad_rw = NULL;
  memset(&rw, 0, sizeof(rw));
  rw.wr_id = 42;
  rw.sg_list = &sge;
  rw.num_sge = 1;
  REQUIRE(ibv_post_srq_recv(srq, &rw, &bad_rw) == 0, "post to the XRC SRQ");
  struct ibv_send_wr sw, *bad = NULL;
  memset(&sw, 0, sizeof(sw));
  sw.opcode = IBV_WR_SEND;
  CHECK(ibv_post_send(tgt, &sw, &bad) == EINVAL,
        "ibv_post_send on the TGT QP is EINVAL");

  must_io(write(to_child[1], &s, sizeof(s)), sizeof(s), "to the child");
  must_io(read(to_parent[0], &s, sizeof(s)), sizeof(s), "from the child");

  struct ibv_wc wc;
  memset(&wc, 0, sizeof(wc));
  CHECK(wait_cq(cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
            wc.wr_id == 42 && wc.opcode == IBV_WC_RECV && wc.byte_len == kLen,
        "the child's SEND landed in the parent's SRQ (status %d, %u bytes)",
        wc.status, wc.byte_len);
  CHECK(wc.qp_num == s.tgt_qpn && wc.src_qp == s.ini_qpn,
        "qp_num 0x%x is the TGT QP, src_qp 0x%x the child's INI QP", wc.qp_num,
        wc.src_qp);
  CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0x1234,
        "with its immediate");
  int same = 1;
  for (int i = 0; i < kLen; ++i) same &= buf[i] == (uint8_t)(0xA5 ^ i);
  CHECK(same, "the bytes are the child's");

  int status = 1;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child passed");
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  CHECK(ibv_query_qp(tgt, &qa, IBV_QP_STATE, &qi) == 0 &&
            qa.qp_state == IBV_QPS_RTS,
        "the TGT QP outlives the child's hold (state %d)", qa.qp_state);
  CHECK(ibv_close_xrcd(xrcd) == EBUSY, "the last close of a used domain");
  CHECK(ibv_destroy_srq(srq) == 0, "destroy the XRC SRQ");
  CHECK(ibv_destroy_qp(tgt) == 0, "destroy the TGT QP");
  CHECK(ibv_close_xrcd(xrcd) == 0, "close the domain");
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  printf("%s\n", failures == 0 ? "PASS" : "FAILED");
  return failures == 0 ? 0 : 1;
}
