// A library client for the net suite (net_verbs_attach_test.py): attaches
// to a running rocemud over its verbs socket, opens the device, queries the
// port, allocates a PD, registers an MR, creates a CQ and an RC QP and
// moves it to INIT, prints what it holds as one JSON line, then waits for
// a line on stdin. "exit" (or EOF) leaves without releasing anything, as a
// crashing application would: the daemon must clean up after it.
// Exit status: 0 after a clean run, 1 when a verb failed (the message
// names it).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "verbs/rocemu_verbs.h"

namespace {

int Fail(const char* what) {
  std::fprintf(stderr, "verbs_attach_client: %s failed: %s\n", what,
               std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: verbs_attach_client VERBS_SOCKET\n");
    return 2;
  }
  rocemu_context* ctx = rocemu_open_device(argv[1]);
  if (ctx == nullptr) return Fail("rocemu_open_device");
  rocemu_port_attr port{};
  if (rocemu_query_port(ctx, 1, &port) != 0) return Fail("rocemu_query_port");
  rocemu_pd* pd = rocemu_alloc_pd(ctx);
  if (pd == nullptr) return Fail("rocemu_alloc_pd");
  constexpr size_t kLen = 64 * 1024;
  rocemu_buf* buf = rocemu_alloc_buf(ctx, kLen);
  if (buf == nullptr) return Fail("rocemu_alloc_buf");
  rocemu_mr* mr =
      rocemu_reg_mr(pd, buf->addr, kLen,
                    ROCEMU_ACCESS_LOCAL_WRITE | ROCEMU_ACCESS_REMOTE_WRITE |
                        ROCEMU_ACCESS_REMOTE_READ);
  if (mr == nullptr) return Fail("rocemu_reg_mr");
  rocemu_cq* cq = rocemu_create_cq(ctx, 64, nullptr, nullptr, 0);
  if (cq == nullptr) return Fail("rocemu_create_cq");
  rocemu_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = ROCEMU_QPT_RC;
  rocemu_qp* qp = rocemu_create_qp(pd, &init);
  if (qp == nullptr) return Fail("rocemu_create_qp");
  rocemu_qp_attr attr{};
  attr.qp_state = ROCEMU_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags = ROCEMU_ACCESS_REMOTE_WRITE | ROCEMU_ACCESS_REMOTE_READ;
  if (rocemu_modify_qp(qp, &attr,
                       ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX | ROCEMU_QP_PORT |
                           ROCEMU_QP_ACCESS_FLAGS) != 0) {
    return Fail("rocemu_modify_qp(INIT)");
  }
  rocemu_qp_attr got{};
  if (rocemu_query_qp(qp, &got, ROCEMU_QP_STATE) != 0) {
    return Fail("rocemu_query_qp");
  }
  std::string gid;
  for (int i = 0; i < 16; ++i) {
    char b[3];
    std::snprintf(b, sizeof(b), "%02x", port.gid[i]);
    gid += b;
  }
  std::printf(
      "{\"device\":\"%s\",\"pid\":%d,\"client_id\":%u,\"qpn\":%u,"
      "\"qp_state\":%d,\"lkey\":%u,\"rkey\":%u,\"mr_length\":%zu,"
      "\"port_state\":%d,\"active_mtu\":%d,\"gid\":\"%s\","
      "\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\"}\n",
      rocemu_device_name(ctx), static_cast<int>(getpid()),
      rocemu_client_id(ctx), rocemu_qp_num(qp), got.qp_state, mr->lkey,
      mr->rkey, mr->length, port.state, port.active_mtu, gid.c_str(),
      port.mac[0], port.mac[1], port.mac[2], port.mac[3], port.mac[4],
      port.mac[5]);
  std::fflush(stdout);
  char line[64];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    if (std::strncmp(line, "exit", 4) == 0) break;
  }
  // No destroy calls: the daemon notices the closed socket and frees all.
  _exit(0);
}
