/* cm_channel_probe: the rdma_cm event channel's fd says exactly what
 * waits, as the kernel's does. Each of N rounds creates an id, resolves
 * the address and route and connects to a port nobody listens on (the
 * peer's CM answers with a REJ); after each event rdma_get_cm_event hands
 * back, channel->fd must not read readable: a program that polls it and
 * then calls rdma_get_cm_event would block for an event that is not
 * there. rdma_get_cm_event is called before each event comes, so it finds
 * them while it looks without sleeping (docs/verbs.md, "Control plane").
 *
 * Usage: cm_channel_probe SERVER_IP PORT ROUNDS; prints "ok" and exits 0. */
#include <arpa/inet.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>

static int g_readable = 0;
static int g_events = 0;

static enum rdma_cm_event_type next_event(struct rdma_event_channel* ch) {
  struct rdma_cm_event* ev;
  if (rdma_get_cm_event(ch, &ev) != 0) {
    perror("rdma_get_cm_event");
    exit(2);
  }
  const enum rdma_cm_event_type e = ev->event;
  rdma_ack_cm_event(ev);
  ++g_events;
  struct pollfd p = {ch->fd, POLLIN, 0};
  if (poll(&p, 1, 0) != 0) ++g_readable;
  return e;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SERVER_IP PORT ROUNDS\n", argv[0]);
    return 2;
  }
  struct sockaddr_in dst = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) return 2;
  const int rounds = atoi(argv[3]);
  struct rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == NULL) {
    perror("rdma_create_event_channel");
    return 2;
  }
  int rejected = 0;
  for (int i = 0; i < rounds; ++i) {
    struct rdma_cm_id* id;
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0 ||
        rdma_resolve_addr(id, NULL, (struct sockaddr*)&dst, 2000) != 0) {
      perror("rdma_create_id / rdma_resolve_addr");
      return 2;
    }
    if (next_event(ch) != RDMA_CM_EVENT_ADDR_RESOLVED ||
        rdma_resolve_route(id, 2000) != 0 ||
        next_event(ch) != RDMA_CM_EVENT_ROUTE_RESOLVED) {
      fprintf(stderr, "round %d: address or route not resolved\n", i);
      return 1;
    }
    struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 1,
                                          .max_recv_wr = 1,
                                          .max_send_sge = 1,
                                          .max_recv_sge = 1}};
    struct rdma_conn_param cp = {.responder_resources = 1,
                                 .initiator_depth = 1,
                                 .retry_count = 1};
    if (rdma_create_qp(id, NULL, &qa) != 0 || rdma_connect(id, &cp) != 0) {
      perror("rdma_create_qp / rdma_connect");
      return 2;
    }
    if (next_event(ch) == RDMA_CM_EVENT_REJECTED) ++rejected;
    rdma_destroy_qp(id);
    rdma_destroy_id(id);
  }
  rdma_destroy_event_channel(ch);
  printf("%d events, %d REJECTED, channel fd readable after %d of them\n",
         g_events, rejected, g_readable);
  if (rejected != rounds || g_readable != 0) return 1;
  printf("ok\n");
  return 0;
}
