// LD_PRELOAD shim for interop.sh: waits before every rdma_connect but the
// process's first one.
//
// perftest -R connects twice: once for its parameter exchange, then for
// the test QPs. Its server stops listening after the exchange and listens
// again for the test connection; a client that comes back before that,
// which is what a native client does to a server in a TCG guest, meets no
// listener and gets REJ 8. The pause leaves the guest's server the time
// to listen again, so the test measures interop and not that race.
// ROCEMU_CONNECT_PACE_MS sets the pause (default 1500 ms).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct rdma_cm_id;
struct rdma_conn_param;

typedef int (*ConnectFn)(struct rdma_cm_id*, struct rdma_conn_param*);

int rdma_connect(struct rdma_cm_id* id, struct rdma_conn_param* param) {
  static ConnectFn next;
  static unsigned calls;
  if (next == NULL) {
    next = (ConnectFn)dlsym(RTLD_NEXT, "rdma_connect");
    if (next == NULL) {
      fprintf(stderr, "connect_pacer: no rdma_connect behind the shim\n");
      abort();
    }
  }
  if (calls++ > 0) {
    const char* env = getenv("ROCEMU_CONNECT_PACE_MS");
    long ms = env != NULL ? strtol(env, NULL, 10) : 1500;
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
  }
  return next(id, param);
}
