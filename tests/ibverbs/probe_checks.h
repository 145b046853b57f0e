/* What the libibverbs programs of these tests (ibv_probe, daemon_death)
 * share: their checks (printed as "ok ..." / "FAIL ...", counted), the
 * first device, and the connection of an RC QP to another QP of the same
 * device (the RNIC loops the frames back). Each program includes it once;
 * everything is static. */
#ifndef ROCEMU_TESTS_IBVERBS_PROBE_CHECKS_H_
#define ROCEMU_TESTS_IBVERBS_PROBE_CHECKS_H_

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

/* Both evaluate `cond` exactly once (it is often the call under test) and
 * print the errno it left. */
static int check(int ok, int err) {
  printf(ok ? "ok   " : "FAIL ");
  if (!ok) ++failures;
  errno = err;
  return ok;
}

#define CHECK(cond, ...)           \
  do {                             \
    const int ok_ = (cond);        \
    const int err_ = errno;        \
    check(ok_, err_);              \
    printf(__VA_ARGS__);           \
    printf(" (errno %d)\n", err_); \
    fflush(stdout);                \
  } while (0)

#define REQUIRE(cond, ...)    \
  do {                        \
    const int ok2_ = (cond);  \
    CHECK(ok2_, __VA_ARGS__); \
    if (!ok2_) exit(1);       \
  } while (0)

static struct ibv_context* open_first(void) {
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(list != NULL && n >= 1, "a device is listed (%d)", n);
  struct ibv_context* ctx = ibv_open_device(list[0]);
  REQUIRE(ctx != NULL, "ibv_open_device(%s)", ibv_get_device_name(list[0]));
  ibv_free_device_list(list);
  return ctx;
}

/* What differs between the programs' loopback connections. */
struct loopback_rc {
  uint32_t psn;          /* both directions' first PSN */
  uint8_t rd_atomic;     /* max_rd_atomic and max_dest_rd_atomic */
  uint8_t min_rnr_timer; /* the IBTA's encoded value */
  uint32_t flow_label;   /* as the program passes it (UCX: all ones) */
};

/* `qp` through INIT, RTR and RTS towards `dest` on the device's GID 0:
 * MTU 1024, remote read and write allowed, timeout 14 (~67 ms),
 * retry_cnt 7, rnr_retry 7 (retries for ever). */
static void connect_loopback_rc(struct ibv_context* ctx, struct ibv_qp* qp,
                                uint32_t dest, const struct loopback_rc* c) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  REQUIRE(ibv_modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                            IBV_QP_ACCESS_FLAGS) == 0,
          "QP %u to INIT", qp->qp_num);
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.rq_psn = c->psn;
  a.max_dest_rd_atomic = c->rd_atomic;
  a.min_rnr_timer = c->min_rnr_timer;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.grh.flow_label = c->flow_label;
  REQUIRE(ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid) == 0, "our own GID 0");
  REQUIRE(
      ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                        IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
      "QP %u to RTR", qp->qp_num);
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = c->psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = c->rd_atomic;
  REQUIRE(ibv_modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                            IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_MAX_QP_RD_ATOMIC) == 0,
          "QP %u to RTS", qp->qp_num);
}

#endif /* ROCEMU_TESTS_IBVERBS_PROBE_CHECKS_H_ */
