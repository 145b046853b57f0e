// rocemud's poll loop with its embedded verbs session server, over a
// net_ring self-loop port (what the RNIC sends comes back to it): a forked
// library client connects two RC QPs of its own to each other through the
// daemon's socket and RDMA WRITEs between its buffers. The WRITE only
// completes if the loop drains the send ring, wakes the RNIC's transmit for
// the posted work, carries the frames round, and moves the completion into
// the client's CQ ring. The daemon stops when the client exits (SIGCHLD).
// Before that, the loop is driven one pass at a time: a completion reaches
// the client's CQ ring in the very pass in which the RNIC made it.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"
#include "emulator/daemon.h"
#include "gtest/gtest.h"
#include "verbs/rocemu_verbs.h"

namespace rocemu::emulator {
namespace {

DaemonSignals g_signals;
void OnChild(int) { g_signals.stop = 1; }

// The client's steps; its exit status names the first that failed.
enum Step : int {
  kOk = 0,
  kOpen = 10,
  kResources,
  kInit,
  kRtr,
  kRts,
  kPost,
  kNoCompletion,
  kBadCompletion,
  kWrongBytes,
};

int ToRts(rocemu_qp* qp, uint32_t dest_qpn, const rocemu_port_attr& port) {
  rocemu_qp_attr a{};
  a.qp_state = ROCEMU_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = ROCEMU_ACCESS_REMOTE_WRITE | ROCEMU_ACCESS_LOCAL_WRITE;
  if (rocemu_modify_qp(qp, &a,
                       ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX | ROCEMU_QP_PORT |
                           ROCEMU_QP_ACCESS_FLAGS) != 0) {
    return kInit;
  }
  a = {};
  a.qp_state = ROCEMU_QPS_RTR;
  a.path_mtu = ROCEMU_MTU_1024;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = 100;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  // Its own address: the frames leave the port and come back to it.
  std::memcpy(a.ah_attr.dgid, port.gid, 16);
  std::memcpy(a.ah_attr.dmac, port.mac, 6);
  a.ah_attr.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (rocemu_modify_qp(qp, &a,
                       ROCEMU_QP_STATE | ROCEMU_QP_AV | ROCEMU_QP_PATH_MTU |
                           ROCEMU_QP_DEST_QPN | ROCEMU_QP_RQ_PSN |
                           ROCEMU_QP_MAX_DEST_RD_ATOMIC |
                           ROCEMU_QP_MIN_RNR_TIMER) != 0) {
    return kRtr;
  }
  a = {};
  a.qp_state = ROCEMU_QPS_RTS;
  a.sq_psn = 100;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  if (rocemu_modify_qp(qp, &a,
                       ROCEMU_QP_STATE | ROCEMU_QP_SQ_PSN | ROCEMU_QP_TIMEOUT |
                           ROCEMU_QP_RETRY_CNT | ROCEMU_QP_RNR_RETRY |
                           ROCEMU_QP_MAX_QP_RD_ATOMIC) != 0) {
    return kRts;
  }
  return kOk;
}

int Client(const std::string& socket, uint32_t len) {
  rocemu_context* ctx = rocemu_open_device(socket.c_str());
  if (ctx == nullptr) return kOpen;
  rocemu_port_attr port{};
  rocemu_pd* pd = rocemu_alloc_pd(ctx);
  rocemu_buf* buf = rocemu_alloc_buf(ctx, 2 * len);
  if (rocemu_query_port(ctx, 1, &port) != 0 || pd == nullptr ||
      buf == nullptr) {
    return kResources;
  }
  rocemu_mr* mr =
      rocemu_reg_mr(pd, buf->addr, 2 * len,
                    ROCEMU_ACCESS_LOCAL_WRITE | ROCEMU_ACCESS_REMOTE_WRITE);
  rocemu_cq* cq = rocemu_create_cq(ctx, 16, nullptr, nullptr, 0);
  if (mr == nullptr || cq == nullptr) return kResources;
  rocemu_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {8, 8, 1, 1, 0};
  init.qp_type = ROCEMU_QPT_RC;
  rocemu_qp* a = rocemu_create_qp(pd, &init);
  rocemu_qp* b = rocemu_create_qp(pd, &init);
  if (a == nullptr || b == nullptr) return kResources;
  if (int s = ToRts(a, rocemu_qp_num(b), port); s != kOk) return s;
  if (int s = ToRts(b, rocemu_qp_num(a), port); s != kOk) return s;

  auto* bytes = static_cast<uint8_t*>(buf->addr);
  for (uint32_t i = 0; i < len; ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  rocemu_sge sge{reinterpret_cast<uint64_t>(bytes), len, mr->lkey};
  rocemu_send_wr wr{};
  wr.wr_id = 42;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = ROCEMU_WR_RDMA_WRITE;
  wr.send_flags = ROCEMU_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(bytes + len);
  wr.wr.rdma.rkey = mr->rkey;
  rocemu_send_wr* bad = nullptr;
  if (rocemu_post_send(a, &wr, &bad) != 0) return kPost;
  rocemu_wc wc{};
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int n = 0;
  while ((n = rocemu_poll_cq(cq, 1, &wc)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    usleep(100);
  }
  if (n != 1) return kNoCompletion;
  if (wc.status != ROCEMU_WC_SUCCESS || wc.wr_id != 42 ||
      wc.opcode != ROCEMU_WC_RDMA_WRITE || wc.qp_num != rocemu_qp_num(a)) {
    return kBadCompletion;
  }
  if (std::memcmp(bytes, bytes + len, len) != 0) return kWrongBytes;
  return kOk;
}

// A net_ring self-loop port with a verbs socket in `dir`.
absl::StatusOr<config::Config> SelfLoopConfig(const std::string& dir) {
  return config::LoadConfigString(
      "ports:\n"
      "  - name: r0\n"
      "    devargs: net_ring0\n"
      "    mac: \"02:00:00:77:06:02\"\n"
      "    addresses: [10.77.6.2/24]\n"
      "eal: {memory_mb: 256, hugepages: \"no\", idle_sleep_us: 20}\n"
      "control: {socket: " +
          dir +
          "/ctl.sock}\n"
          "verbs: {socket: " +
          dir + "/verbs.sock, socket_mode: \"0600\"}\n",
      "verbs.yaml");
}

// A pass takes posts, then the port (frames in, the RNIC's frames out),
// then completions: the CQE of a WRITE is in the client's ring at the end
// of the pass in which the ACK arrived, not one pass later. An embedded
// program (docs/embedded.md) runs one pass per empty poll, so a pass of
// delay would be on its every round trip. Drives the loop one pass at a
// time while a client does one 64 B WRITE between two QPs of the same
// RNIC: two frames in, the WRITE and its ACK, and the ACK completes it.
void CompletionReachesTheRingInThePassThatMadeIt(Daemon& daemon,
                                                 const std::string& vsock) {
  const verbs::SessionServer& session = *daemon.session(0);
  const nic::Rnic& rnic = daemon.rnic(0)->rnic();
  const uint64_t rcvd0 = rnic.QueryCounters().rcvd_pkts;
  const uint64_t cqes0 = session.counters().cqes;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(Client(vsock, 64));
  int status = 0;
  pid_t done = 0;
  int checked = 0;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((done = waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    const uint64_t before = rnic.QueryCounters().rcvd_pkts - rcvd0;
    daemon.Pass();
    const uint64_t after = rnic.QueryCounters().rcvd_pkts - rcvd0;
    if (before < 2 && after >= 2) {
      EXPECT_EQ(session.counters().cqes - cqes0, 1u)
          << "the completion stayed in the RNIC's CQ after the pass";
      ++checked;
    }
    sched_yield();  // the client shares the cores
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the client did not finish within 20 s";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kOk)
      << "client failed at step " << WEXITSTATUS(status);
  EXPECT_EQ(checked, 1);
  EXPECT_EQ(rnic.QueryCounters().rcvd_pkts - rcvd0, 2u);
}

TEST(DaemonVerbsTest, RingPostedWriteCompletesThroughTheLoop) {
  const std::string dir = "/tmp/rocemu-dv-" + std::to_string(getpid());
  const std::string vsock = dir + "/verbs.sock";
  absl::StatusOr<config::Config> cfg = SelfLoopConfig(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  Daemon daemon(*cfg);
  absl::Status s = daemon.Init();
  ASSERT_TRUE(s.ok()) << s;
  s = daemon.AttachRnics();
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_NE(daemon.session(0), nullptr);
  EXPECT_EQ(daemon.session(0)->device_name(), "rocemu_r0");
  struct stat st;
  ASSERT_EQ(stat(vsock.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const nlohmann::json devices = nlohmann::json::parse(
      daemon.HandleControl("{\"cmd\":\"devices\"}"), nullptr,
      /*allow_exceptions=*/false);
  ASSERT_TRUE(devices.is_object()) << devices;
  ASSERT_EQ(devices["devices"].size(), 1u) << devices;
  EXPECT_EQ(devices["devices"][0]["device"], "rocemu_r0") << devices;
  EXPECT_EQ(devices["devices"][0]["verbs_socket"], vsock) << devices;
  // control.test_hooks is off by default: with RNICs attached, the hook
  // commands (which drive any client's QPs) still do not exist.
  for (const char* hook :
       {R"({"cmd":"reg_mr","port":"r0","len":4096,"seed":1})",
        R"({"cmd":"create_cq","port":"r0"})"}) {
    const nlohmann::json reply = nlohmann::json::parse(
        daemon.HandleControl(hook), nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(reply.is_object()) << reply;
    EXPECT_NE(reply.value("error", "").find("unknown command"),
              std::string::npos)
        << reply;
    EXPECT_FALSE(reply.contains("ok")) << reply;
  }

  // The session server's state and the congestion counters are exported.
  nlohmann::json counters = nlohmann::json::parse(
      daemon.CountersJson(), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(counters.is_object()) << counters;
  nlohmann::json& r0 = counters["ports"]["r0"];
  EXPECT_EQ(r0["verbs"]["socket"], vsock) << counters;
  EXPECT_EQ(r0["pfc"]["counters"]["rx_prio3_pause"], 0) << counters;
  EXPECT_EQ(r0["dcqcn"]["counters"]["np_cnp_sent"], 0) << counters;
  const std::string prom = daemon.PrometheusText();
  for (const char* want :
       {"rocemu_verbs_clients{port=\"r0\"} 0\n",
        "rocemu_verbs_clients_accepted{port=\"r0\"} 0\n",
        "rocemu_port_rx_prio3_pause{port=\"r0\"} 0\n",
        "rocemu_port_rx_prio3_pause_duration{port=\"r0\"} 0\n"}) {
    EXPECT_NE(prom.find(want), std::string::npos) << want;
  }

  CompletionReachesTheRingInThePassThatMadeIt(daemon, vsock);

  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = OnChild;
  ASSERT_EQ(sigaction(SIGCHLD, &sa, nullptr), 0);
  g_signals.stop = 0;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(Client(vsock, 4096));
  daemon.Run(&g_signals);  // until the client exits
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kOk)
      << "client failed at step " << WEXITSTATUS(status);
  signal(SIGCHLD, SIG_DFL);
  // Shut down: the socket is gone.
  EXPECT_NE(stat(vsock.c_str(), &st), 0);
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace rocemu::emulator
