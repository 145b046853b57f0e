// An ordinary C program on Debian's <rdma/rdma_cma.h>, linked against
// Debian's librdmacm and run over rocemu's drop-in: connections whose
// transport the listening id does not take. The server listens in
// RDMA_PS_IB on PORT with an RC id and on PORT+1 with an XRC_RECV id, and
// reports any connection request it is handed (there must be none). The
// client connects an XRC INI QP to PORT and an RC QP to PORT+1: each
// rdma_connect must fail with ECONNREFUSED, its event REJECTED with
// status 9 (IBTA "invalid transport service type").
//
//   xrc_mismatch_probe server PORT
//   xrc_mismatch_probe client ADDR PORT
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(int ok, const char* what) {
  if (ok) {
    printf("ok   %s\n", what);
  } else {
    printf("FAIL %s (errno %d: %s)\n", what, errno, strerror(errno));
    ++failures;
  }
  fflush(stdout);
}

static struct rdma_addrinfo* resolve(const char* node, int port, int passive,
                                     enum ibv_qp_type type) {
  struct rdma_addrinfo hints, *res = NULL;
  char service[16];
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = passive ? RAI_PASSIVE : 0;
  hints.ai_port_space = RDMA_PS_IB;
  hints.ai_qp_type = type;
  snprintf(service, sizeof service, "%d", port);
  if (rdma_getaddrinfo(node, service, &hints, &res) != 0) return NULL;
  return res;
}

// A synchronous id of `type` (rdma_create_ep, as rdma_xserver makes its
// listener) listening on `port`.
static struct rdma_cm_id* listen_on(int port, enum ibv_qp_type type) {
  struct rdma_addrinfo* res = resolve(NULL, port, 1, type);
  struct rdma_cm_id* id = NULL;
  if (res == NULL) return NULL;
  if (rdma_create_ep(&id, res, NULL, NULL) != 0) id = NULL;
  rdma_freeaddrinfo(res);
  if (id != NULL && rdma_listen(id, 4) != 0) {
    rdma_destroy_ep(id);
    id = NULL;
  }
  return id;
}

static int server(int port) {
  struct rdma_cm_id* rc = listen_on(port, IBV_QPT_RC);
  check(rc != NULL, "RC id listens in RDMA_PS_IB");
  struct rdma_cm_id* xrc = listen_on(port + 1, IBV_QPT_XRC_RECV);
  check(xrc != NULL, "XRC_RECV id listens in RDMA_PS_IB");
  if (rc == NULL || xrc == NULL) return 1;
  printf("xrc_mismatch_probe server: listening\n");
  fflush(stdout);
  // Until killed: any event reaching the application is a failure.
  struct pollfd fds[2] = {{rc->channel->fd, POLLIN, 0},
                          {xrc->channel->fd, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      struct rdma_cm_id* l = i == 0 ? rc : xrc;
      struct rdma_cm_event* ev;
      if (rdma_get_cm_event(l->channel, &ev) != 0) return 1;
      printf("FAIL unexpected event %s on the %s id\n",
             rdma_event_str(ev->event), i == 0 ? "RC" : "XRC_RECV");
      fflush(stdout);
      rdma_ack_cm_event(ev);
    }
  }
  return 1;
}

// Connects a QP of `type` to ADDR:`port`: REJECTED with status 9 expected.
static void connect_rejected(const char* addr, int port, enum ibv_qp_type type,
                             const char* what) {
  struct rdma_addrinfo* res = resolve(addr, port, 0, type);
  struct ibv_qp_init_attr attr;
  struct rdma_cm_id* id = NULL;
  char msg[160];
  check(res != NULL, "rdma_getaddrinfo");
  if (res == NULL) return;
  memset(&attr, 0, sizeof attr);
  attr.cap.max_send_wr = 1;
  attr.cap.max_send_sge = 1;
  if (type != IBV_QPT_XRC_SEND) {
    attr.cap.max_recv_wr = 1;
    attr.cap.max_recv_sge = 1;
  }
  int ret = rdma_create_ep(&id, res, NULL, &attr);
  rdma_freeaddrinfo(res);
  snprintf(msg, sizeof msg, "%s: rdma_create_ep", what);
  check(ret == 0 && id->qp != NULL && id->qp->qp_type == type, msg);
  if (ret != 0) return;
  errno = 0;
  ret = rdma_connect(id, NULL);
  const int err = errno;
  snprintf(msg, sizeof msg, "%s: rdma_connect fails with ECONNREFUSED", what);
  check(ret != 0 && err == ECONNREFUSED, msg);
  snprintf(msg, sizeof msg, "%s: REJECTED, status 9 (got %s, %d)", what,
           id->event != NULL ? rdma_event_str(id->event->event) : "none",
           id->event != NULL ? id->event->status : -1);
  check(id->event != NULL && id->event->event == RDMA_CM_EVENT_REJECTED &&
            id->event->status == 9,
        msg);
  rdma_destroy_ep(id);
}

static int client(const char* addr, int port) {
  connect_rejected(addr, port, IBV_QPT_XRC_SEND, "XRC INI QP to an RC id");
  connect_rejected(addr, port + 1, IBV_QPT_RC, "RC QP to an XRC_RECV id");
  printf("xrc_mismatch_probe client: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "server") == 0) {
    return server(atoi(argv[2]));
  }
  if (argc == 4 && strcmp(argv[1], "client") == 0) {
    return client(argv[2], atoi(argv[3]));
  }
  fprintf(stderr, "usage: %s server PORT | client ADDR PORT\n", argv[0]);
  return 2;
}
