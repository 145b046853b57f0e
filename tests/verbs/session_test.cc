// The session server in-process over a Unix socket, RNIC A behind it and
// RNIC B (driven directly by the test) wired back to back. Clients are
// forked children using the verbs library, so the rings and buffers really
// cross processes.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include "tests/engine/back_to_back.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/rocemu_verbs.hpp"
#include "verbs/session_server.h"
#include "verbs/wire_protocol.h"

namespace rocemu::verbs {
namespace {

using nic::testing::BackToBack;
using nic::testing::ConnectOptions;
using nic::testing::Endpoint;

uint8_t Pattern(size_t i, uint8_t seed) {
  return static_cast<uint8_t>(seed + i * 13 + (i >> 7));
}

// What a client child reports to the parent.
struct ClientInfo {
  uint32_t qpn = 0;
  uint32_t lkey = 0;
  uint64_t addr = 0;
  uint32_t client_id = 0;
};

// Exit codes of the client children: 0 is success, each failure its own
// code so the parent's assertion says where the child stopped.
enum ChildFail {
  kOpen = 10,
  kPd,
  kBuf,
  kMr,
  kChannel,
  kCq,
  kQp,
  kModify,
  kPostRecv,
  kPostSend,
  kPipe,
  kWriteWc,
  kRecvWc,
  kRecvBytes,
  kProtWc,
  kEvent,
};

void WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w <= 0) _exit(kPipe);
    c += w;
    n -= static_cast<size_t>(w);
  }
}

void ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, c, n);
    if (r <= 0) _exit(kPipe);
    c += r;
    n -= static_cast<size_t>(r);
  }
}

// Everything a client needs to reach B.
struct Peer {
  uint32_t qpn;
  uint32_t rkey;
  uint64_t addr;  // of B's buffer
  nic::Gid gid;
  protocol::MacAddr mac;
};

// A client's objects.
struct ClientObjs {
  rocemu_context* ctx = nullptr;
  rocemu_pd* pd = nullptr;
  rocemu_buf* buf = nullptr;
  rocemu_mr* mr = nullptr;
  rocemu_comp_channel* ch = nullptr;
  rocemu_cq* cq = nullptr;
  rocemu_qp* qp = nullptr;
};

// The cq_context every test CQ carries (get_cq_event must hand it back).
int kCqContext = 0;

ClientObjs OpenClient(const std::string& path, size_t buf_len) {
  ClientObjs o;
  o.ctx = rocemu_open_device(path.c_str());
  if (o.ctx == nullptr) _exit(kOpen);
  o.pd = rocemu_alloc_pd(o.ctx);
  if (o.pd == nullptr) _exit(kPd);
  o.buf = rocemu_alloc_buf(o.ctx, buf_len);
  if (o.buf == nullptr) _exit(kBuf);
  o.mr = rocemu_reg_mr(o.pd, o.buf->addr, buf_len,
                       ROCEMU_ACCESS_LOCAL_WRITE | ROCEMU_ACCESS_REMOTE_WRITE |
                           ROCEMU_ACCESS_REMOTE_READ);
  if (o.mr == nullptr) _exit(kMr);
  o.ch = rocemu_create_comp_channel(o.ctx);
  if (o.ch == nullptr) _exit(kChannel);
  o.cq = rocemu_create_cq(o.ctx, 64, &kCqContext, o.ch, 0);
  if (o.cq == nullptr) _exit(kCq);
  rocemu_qp_init_attr init{};
  init.send_cq = o.cq;
  init.recv_cq = o.cq;
  init.cap = {64, 16, 4, 4, 64};
  init.qp_type = ROCEMU_QPT_RC;
  o.qp = rocemu_create_qp(o.pd, &init);
  if (o.qp == nullptr) _exit(kQp);
  return o;
}

void ConnectClient(const ClientObjs& o, const Peer& peer) {
  rocemu_qp_attr a{};
  a.qp_state = ROCEMU_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = ROCEMU_ACCESS_REMOTE_WRITE | ROCEMU_ACCESS_REMOTE_READ;
  if (rocemu_modify_qp(o.qp, &a,
                       ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX | ROCEMU_QP_PORT |
                           ROCEMU_QP_ACCESS_FLAGS) != 0) {
    _exit(kModify);
  }
  a.qp_state = ROCEMU_QPS_RTR;
  a.path_mtu = ROCEMU_MTU_1024;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = 5000;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  std::memcpy(a.ah_attr.dgid, peer.gid.data(), 16);
  std::memcpy(a.ah_attr.dmac, peer.mac.data(), 6);
  a.ah_attr.port_num = 1;
  a.ah_attr.hop_limit = 64;
  if (rocemu_modify_qp(o.qp, &a,
                       ROCEMU_QP_STATE | ROCEMU_QP_AV | ROCEMU_QP_PATH_MTU |
                           ROCEMU_QP_DEST_QPN | ROCEMU_QP_RQ_PSN |
                           ROCEMU_QP_MAX_DEST_RD_ATOMIC |
                           ROCEMU_QP_MIN_RNR_TIMER) != 0) {
    _exit(kModify);
  }
  a.qp_state = ROCEMU_QPS_RTS;
  a.sq_psn = 100;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  if (rocemu_modify_qp(o.qp, &a,
                       ROCEMU_QP_STATE | ROCEMU_QP_SQ_PSN | ROCEMU_QP_TIMEOUT |
                           ROCEMU_QP_RETRY_CNT | ROCEMU_QP_RNR_RETRY |
                           ROCEMU_QP_MAX_QP_RD_ATOMIC) != 0) {
    _exit(kModify);
  }
  rocemu_qp_attr q{};
  if (rocemu_query_qp(o.qp, &q, ROCEMU_QP_STATE) != 0 ||
      q.qp_state != ROCEMU_QPS_RTS || q.dest_qp_num != peer.qpn) {
    _exit(kModify);
  }
}

// Waits for one completion through the completion channel (arm, re-poll,
// sleep on the eventfd), as an event-driven ibverbs application does.
rocemu_wc WaitCompletionEvent(const ClientObjs& o) {
  rocemu_wc wc{};
  for (;;) {
    if (rocemu_req_notify_cq(o.cq, 0) != 0) _exit(kEvent);
    const int n = rocemu_poll_cq(o.cq, 1, &wc);
    if (n < 0) _exit(kEvent);
    if (n == 1) return wc;
    rocemu_cq* cq = nullptr;
    void* ctx = nullptr;
    const int err = rocemu_get_cq_event(o.ch, &cq, &ctx, 10000);
    if (err != 0 || cq != o.cq || ctx != &kCqContext) _exit(kEvent);
    rocemu_ack_cq_events(cq, 1);
  }
}

// Busy-polls for one completion (the syscall-free path).
rocemu_wc PollCompletion(const ClientObjs& o) {
  rocemu_wc wc{};
  for (;;) {
    const int n = rocemu_poll_cq(o.cq, 1, &wc);
    if (n < 0) _exit(kEvent);
    if (n == 1) return wc;
    usleep(20);
  }
}

class VerbsSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rocemu-verbs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/verbs.sock";
  }
  void TearDown() override {
    server_.reset();
    rmdir(dir_.c_str());
  }

  void StartServer(mode_t mode = 0660) {
    SessionServerOptions opts;
    opts.socket_path = path_;
    opts.socket_mode = mode;
    absl::StatusOr<std::unique_ptr<SessionServer>> s =
        SessionServer::Create(net_.a(), opts);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  // One iteration of a daemon: serve the clients, then let both RNICs
  // exchange frames for 100 us of virtual time.
  void Pump() {
    server_->Poll();
    const nic::TimeNs until = net_.clock().Now() + 100'000;
    net_.RunUntil(until);
    if (net_.clock().Now() < until) net_.clock().Set(until);
  }

  // Pumps until `fd` (non-blocking) yields n bytes, the child exits, or
  // a generous wall-clock bound (a hung test must end, not pass).
  bool PumpRead(int fd, void* p, size_t n) {
    char* c = static_cast<char*>(p);
    const time_t give_up = time(nullptr) + 30;
    while (n > 0 && time(nullptr) < give_up) {
      Pump();
      const ssize_t r = read(fd, c, n);
      if (r > 0) {
        c += r;
        n -= static_cast<size_t>(r);
      } else if (r == 0) {
        return false;  // child gone
      } else {
        usleep(50);
      }
    }
    return n == 0;
  }

  // Pumps until the child exits; returns its exit code (-1: killed or
  // hung).
  int PumpUntilExit(pid_t pid) {
    const time_t give_up = time(nullptr) + 30;
    int status = 0;
    while (time(nullptr) < give_up) {
      Pump();
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        Pump();  // notices the EOF
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }

  // A fresh RC endpoint on B for a client to connect to.
  Endpoint MakePeer(size_t buf_size = 1 << 16) {
    ConnectOptions o;
    o.buf_size = buf_size;
    Endpoint e;
    EXPECT_TRUE(nic::testing::SetupEndpoint(net_.b(), o, &e).ok());
    return e;
  }
  Peer PeerOf(const Endpoint& e) {
    return {e.qpn, e.key, reinterpret_cast<uint64_t>(e.buf.data()),
            net_.b().config().gid, net_.b().config().mac};
  }
  void ConnectPeer(const Endpoint& e, uint32_t client_qpn) {
    ASSERT_TRUE(nic::testing::ConnectQp(net_.b(), e, net_.a().config(),
                                        client_qpn, 5000, 100, ConnectOptions{})
                    .ok());
  }

  // Forks a client running `body`; to_parent/to_child are its pipes.
  pid_t Fork(const std::function<void(int to_parent, int from_parent)>& body,
             int* from_child, int* to_child) {
    int up[2], down[2];
    EXPECT_EQ(pipe(up), 0);
    EXPECT_EQ(pipe(down), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      body(up[1], down[0]);
      _exit(0);
    }
    close(up[1]);
    close(down[0]);
    fcntl(up[0], F_SETFL, O_NONBLOCK);
    *from_child = up[0];
    *to_child = down[1];
    return pid;
  }

  // The whole happy path against a fresh peer endpoint: RC WRITE of 10000
  // bytes from the client, then a 3000-byte SEND from B into the client's
  // posted RECV; both checked byte for byte.
  void WriteAndSendRecv(uint8_t seed) {
    Endpoint eb = MakePeer();
    const Peer peer = PeerOf(eb);
    const std::string path = path_;
    constexpr size_t kWriteLen = 10000, kSendLen = 3000, kRecvOff = 16384;
    int from_child, to_child;
    const pid_t pid = Fork(
        [&](int up, int down) {
          ClientObjs o = OpenClient(path, 1 << 16);
          ClientInfo info{rocemu_qp_num(o.qp), o.mr->lkey,
                          reinterpret_cast<uint64_t>(o.buf->addr),
                          rocemu_client_id(o.ctx)};
          ConnectClient(o, peer);
          auto* base = static_cast<uint8_t*>(o.buf->addr);
          rocemu_sge rsge{reinterpret_cast<uint64_t>(base + kRecvOff), 4096,
                          o.mr->lkey};
          rocemu_recv_wr rwr{7, nullptr, &rsge, 1};
          rocemu_recv_wr* bad_r = nullptr;
          if (rocemu_post_recv(o.qp, &rwr, &bad_r) != 0) _exit(kPostRecv);
          WriteAll(up, &info, sizeof(info));
          char go;
          ReadAll(down, &go, 1);  // B is connected
          for (size_t i = 0; i < kWriteLen; ++i) base[i] = Pattern(i, seed);
          rocemu_sge sge{reinterpret_cast<uint64_t>(base), kWriteLen,
                         o.mr->lkey};
          rocemu_send_wr wr{};
          wr.wr_id = 42;
          wr.sg_list = &sge;
          wr.num_sge = 1;
          wr.opcode = ROCEMU_WR_RDMA_WRITE;
          wr.send_flags = ROCEMU_SEND_SIGNALED;
          wr.wr.rdma.remote_addr = peer.addr;
          wr.wr.rdma.rkey = peer.rkey;
          rocemu_send_wr* bad = nullptr;
          if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
          const rocemu_wc w = WaitCompletionEvent(o);
          if (w.wr_id != 42 || w.status != ROCEMU_WC_SUCCESS ||
              w.opcode != ROCEMU_WC_RDMA_WRITE) {
            _exit(kWriteWc);
          }
          WriteAll(up, &go, 1);  // WRITE done: B may send
          const rocemu_wc r = PollCompletion(o);
          if (r.wr_id != 7 || r.status != ROCEMU_WC_SUCCESS ||
              r.opcode != ROCEMU_WC_RECV || r.byte_len != kSendLen ||
              r.qp_num != info.qpn) {
            _exit(kRecvWc);
          }
          for (size_t i = 0; i < kSendLen; ++i) {
            if (base[kRecvOff + i] != Pattern(i, seed + 1)) _exit(kRecvBytes);
          }
          // Leaves without tearing down: the daemon cleans up.
        },
        &from_child, &to_child);
    ClientInfo info;
    ASSERT_TRUE(PumpRead(from_child, &info, sizeof(info)))
        << "client exited with " << PumpUntilExit(pid);
    EXPECT_EQ(server_->QpOwner(info.qpn), info.client_id);
    ConnectPeer(eb, info.qpn);
    ASSERT_EQ(write(to_child, "g", 1), 1);
    char done;
    ASSERT_TRUE(PumpRead(from_child, &done, 1))
        << "client exited with " << PumpUntilExit(pid);
    for (size_t i = 0; i < kWriteLen; ++i) {
      ASSERT_EQ(eb.buf[i], Pattern(i, seed)) << "byte " << i;
    }
    EXPECT_EQ(eb.buf[kWriteLen], 0);  // nothing past the WRITE
    for (size_t i = 0; i < kSendLen; ++i)
      eb.buf[32768 + i] = Pattern(i, seed + 1);
    nic::SendWr send;
    send.wr_id = 99;
    send.opcode = nic::WrOpcode::kSend;
    send.send_flags = nic::send_flags::kSignaled;
    send.sg_list.PushBack(nic::testing::SgeOf(eb, 32768, kSendLen));
    ASSERT_TRUE(net_.b().PostSend(eb.qpn, send).ok());
    EXPECT_EQ(PumpUntilExit(pid), 0);
    const std::vector<nic::WorkCompletion> wcs =
        nic::testing::Poll(net_.b(), eb.cq);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].wr_id, 99u);
    EXPECT_EQ(wcs[0].status, nic::WcStatus::kSuccess);
    close(from_child);
    close(to_child);
    // The child exited without destroying anything: all of it is gone.
    EXPECT_EQ(server_->QpOwner(info.qpn), std::nullopt);
    EXPECT_EQ(net_.a().GetQp(info.qpn), nullptr);
    const SessionServer::Holdings h = server_->HoldingsOf(info.client_id);
    EXPECT_EQ(h.pds + h.mrs + h.cqs + h.qps, 0u);
  }

  std::string dir_;
  std::string path_;
  BackToBack net_;
  std::unique_ptr<SessionServer> server_;
};

TEST_F(VerbsSessionTest, RcWriteAndSendRecvThroughRings) {
  StartServer();
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  WriteAndSendRecv(3);
  const SessionCounters& c = server_->counters();
  EXPECT_EQ(c.clients_accepted, 1u);
  EXPECT_EQ(c.clients_closed, 1u);
  EXPECT_EQ(c.sq_wqes, 1u);
  EXPECT_EQ(c.rq_wqes, 1u);
  EXPECT_EQ(c.cqes, 2u);
  EXPECT_GE(c.cq_events, 1u);  // the WRITE completion woke the channel
  EXPECT_EQ(c.bad_requests, 0u);
  EXPECT_EQ(c.lkey_violations, 0u);
  EXPECT_EQ(c.qps_flushed, 1u);
  EXPECT_EQ(server_->num_clients(), 0u);
  EXPECT_EQ(net_.a().mr_table().size(), 0u);
}

TEST_F(VerbsSessionTest, SigkilledClientIsCleanedUpAndOthersCarryOn) {
  StartServer();
  constexpr size_t kLen = 1 << 20;
  Endpoint eb = MakePeer(kLen);
  const Peer peer = PeerOf(eb);
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenClient(path, kLen);
        ClientInfo info{rocemu_qp_num(o.qp), o.mr->lkey, 0,
                        rocemu_client_id(o.ctx)};
        ConnectClient(o, peer);
        WriteAll(up, &info, sizeof(info));
        char go;
        ReadAll(down, &go, 1);
        rocemu_sge sge{reinterpret_cast<uint64_t>(o.buf->addr), kLen,
                       o.mr->lkey};
        rocemu_send_wr wr{};
        wr.wr_id = 1;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = ROCEMU_WR_RDMA_WRITE;
        wr.send_flags = ROCEMU_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = peer.addr;
        wr.wr.rdma.rkey = peer.rkey;
        rocemu_send_wr* bad = nullptr;
        if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
        WriteAll(up, &go, 1);
        pause();  // killed here, mid-transfer
      },
      &from_child, &to_child);
  ClientInfo info;
  ASSERT_TRUE(PumpRead(from_child, &info, sizeof(info)));
  ConnectPeer(eb, info.qpn);
  // Only the first 100 frames of the 1 MiB WRITE reach B: the transfer is
  // still under way when the client dies.
  net_.drop = [](const nic::testing::WireFrame& f) {
    return f.dir == 0 && f.index >= 100;
  };
  ASSERT_EQ(write(to_child, "g", 1), 1);
  char posted;
  ASSERT_TRUE(PumpRead(from_child, &posted, 1));
  while (server_->counters().sq_wqes == 0) Pump();
  ASSERT_GE(net_.Frames(0).size(), 100u);
  ASSERT_NE(net_.a().GetQp(info.qpn), nullptr);
  EXPECT_EQ(server_->HoldingsOf(info.client_id).mrs, 1u);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  net_.drop = nullptr;
  server_->Poll();  // the next Poll frees everything
  EXPECT_EQ(server_->num_clients(), 0u);
  EXPECT_EQ(server_->counters().qps_flushed, 1u);
  EXPECT_EQ(net_.a().GetQp(info.qpn), nullptr);
  EXPECT_EQ(net_.a().mr_table().size(), 0u);
  const SessionServer::Holdings h = server_->HoldingsOf(info.client_id);
  EXPECT_EQ(h.pds + h.mrs + h.cqs + h.qps, 0u);
  // B got part of the data, not all of it.
  EXPECT_EQ(eb.buf[kLen - 1], 0);
  close(from_child);
  close(to_child);

  // The peer learns of it: its next request is never answered and ends in
  // an error completion once the retries are spent.
  nic::SendWr send;
  send.wr_id = 5;
  send.opcode = nic::WrOpcode::kSend;
  send.send_flags = nic::send_flags::kSignaled;
  send.sg_list.PushBack(nic::testing::SgeOf(eb, 0, 64));
  ASSERT_TRUE(net_.b().PostSend(eb.qpn, send).ok());
  net_.Run();
  std::vector<nic::WorkCompletion> wcs = nic::testing::Poll(net_.b(), eb.cq);
  ASSERT_FALSE(wcs.empty());
  EXPECT_NE(wcs.back().status, nic::WcStatus::kSuccess);

  // A second client works normally on the same server.
  WriteAndSendRecv(77);
  EXPECT_EQ(server_->counters().clients_closed, 2u);
}

TEST_F(VerbsSessionTest, OtherClientsKeysAreRefused) {
  // Mode 0666 and a traversable directory so that the unprivileged client
  // can connect at all; isolation is then the daemon's doing.
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  StartServer(0666);
  const bool root = geteuid() == 0;
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  const std::string path = path_;

  // Client 1: registers a buffer full of secrets and stays connected.
  int from1, to1;
  const pid_t victim = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenClient(path, 1 << 16);
        std::memset(o.buf->addr, 0x5A, 1 << 16);
        ClientInfo info{rocemu_qp_num(o.qp), o.mr->lkey,
                        reinterpret_cast<uint64_t>(o.buf->addr),
                        rocemu_client_id(o.ctx)};
        WriteAll(up, &info, sizeof(info));
        char end;
        ReadAll(down, &end, 1);
      },
      &from1, &to1);
  ClientInfo victim_info;
  ASSERT_TRUE(PumpRead(from1, &victim_info, sizeof(victim_info)));

  // Client 2, as nobody when the test runs as root: WRITEs from client 1's
  // L_Key and address to B.
  int from2, to2;
  const pid_t thief = Fork(
      [&](int up, int down) {
        if (root && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(kOpen);
        ClientObjs o = OpenClient(path, 4096);
        ClientInfo info{rocemu_qp_num(o.qp), o.mr->lkey, 0,
                        rocemu_client_id(o.ctx)};
        ConnectClient(o, peer);
        WriteAll(up, &info, sizeof(info));
        char go;
        ReadAll(down, &go, 1);
        rocemu_sge sge{victim_info.addr, 4096, victim_info.lkey};
        rocemu_send_wr wr{};
        wr.wr_id = 13;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = ROCEMU_WR_RDMA_WRITE;
        wr.send_flags = ROCEMU_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = peer.addr;
        wr.wr.rdma.rkey = peer.rkey;
        rocemu_send_wr* bad = nullptr;
        if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
        const rocemu_wc w = PollCompletion(o);
        if (w.wr_id != 13 || w.status != ROCEMU_WC_LOC_PROT_ERR) _exit(kProtWc);
        rocemu_qp_attr q{};
        if (rocemu_query_qp(o.qp, &q, ROCEMU_QP_STATE) != 0 ||
            q.qp_state != ROCEMU_QPS_ERR) {
          _exit(kProtWc);
        }
      },
      &from2, &to2);
  ClientInfo thief_info;
  ASSERT_TRUE(PumpRead(from2, &thief_info, sizeof(thief_info)));
  ASSERT_NE(thief_info.client_id, victim_info.client_id);
  std::optional<PeerCredentials> cred =
      server_->Credentials(thief_info.client_id);
  ASSERT_TRUE(cred.has_value());
  EXPECT_EQ(cred->pid, thief);
  if (root) {
    EXPECT_EQ(cred->uid, 65534u);
  }
  EXPECT_EQ(server_->Credentials(victim_info.client_id)->uid, geteuid());
  ConnectPeer(eb, thief_info.qpn);
  ASSERT_EQ(write(to2, "g", 1), 1);
  EXPECT_EQ(PumpUntilExit(thief), 0);
  EXPECT_EQ(server_->counters().lkey_violations, 1u);
  // Not one byte of client 1's buffer reached B.
  for (size_t i = 0; i < eb.buf.size(); ++i) ASSERT_EQ(eb.buf[i], 0) << i;
  // Client 1 is untouched by all this.
  EXPECT_EQ(server_->HoldingsOf(victim_info.client_id).mrs, 1u);
  ASSERT_EQ(write(to1, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(victim), 0);
  for (int fd : {from1, to1, from2, to2}) close(fd);
}

TEST_F(VerbsSessionTest, RaiiLayerDestroysEverythingExplicitly) {
  StartServer();
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        absl::StatusOr<Context> ctx = OpenDevice(path.c_str());
        if (!ctx.ok()) _exit(kOpen);
        uint32_t id = rocemu_client_id(ctx->get());
        {
          absl::StatusOr<Pd> pd = AllocPd(ctx->get());
          absl::StatusOr<Buf> buf = AllocBuf(ctx->get(), 8192);
          if (!pd.ok() || !buf.ok()) _exit(kPd);
          absl::StatusOr<Mr> mr =
              RegMr(pd->get(), (*buf)->addr, 8192, ROCEMU_ACCESS_LOCAL_WRITE);
          if (!mr.ok()) _exit(kMr);
          // Outside any buffer of the library: refused (first cut).
          static char outside[64];
          if (RegMr(pd->get(), outside, sizeof(outside), 0).status().code() !=
              absl::StatusCode::kInvalidArgument) {
            _exit(kMr);
          }
          absl::StatusOr<Cq> cq = CreateCq(ctx->get(), 16);
          if (!cq.ok()) _exit(kCq);
          rocemu_qp_init_attr init{};
          init.send_cq = cq->get();
          init.recv_cq = cq->get();
          init.cap = {8, 8, 1, 1, 0};
          init.qp_type = ROCEMU_QPT_RC;
          absl::StatusOr<Qp> qp = CreateQp(pd->get(), init);
          if (!qp.ok()) _exit(kQp);
          // A CQ in use and a PD with objects cannot go first.
          if (rocemu_destroy_cq(cq->get()) != EBUSY ||
              rocemu_dealloc_pd(pd->get()) != EBUSY) {
            _exit(kCq);
          }
          WriteAll(up, &id, sizeof(id));
          char go;
          ReadAll(down, &go, 1);
        }  // qp, cq, mr, buf, pd destroyed here, in that order
        WriteAll(up, &id, sizeof(id));
        char end;
        ReadAll(down, &end, 1);
      },
      &from_child, &to_child);
  uint32_t id = 0;
  ASSERT_TRUE(PumpRead(from_child, &id, sizeof(id)))
      << "client exited with " << PumpUntilExit(pid);
  SessionServer::Holdings h = server_->HoldingsOf(id);
  EXPECT_EQ(h.pds, 1u);
  EXPECT_EQ(h.mrs, 1u);
  EXPECT_EQ(h.cqs, 1u);
  EXPECT_EQ(h.qps, 1u);
  ASSERT_EQ(write(to_child, "g", 1), 1);
  ASSERT_TRUE(PumpRead(from_child, &id, sizeof(id)));
  h = server_->HoldingsOf(id);
  EXPECT_EQ(h.pds + h.mrs + h.cqs + h.qps, 0u);
  EXPECT_EQ(server_->num_clients(), 1u);  // still connected
  EXPECT_EQ(net_.a().mr_table().size(), 0u);
  ASSERT_EQ(write(to_child, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_EQ(server_->counters().qps_flushed, 0u);  // nothing left to flush
  close(from_child);
  close(to_child);
}

// --- malformed control messages (raw socket, in-process) -----------------

class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawClient() { close(fd_); }
  bool connected() const { return connected_; }
  void Send(const void* p, size_t n, int pass_fd = -1) {
    iovec iov{const_cast<void*>(p), n};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (pass_fd >= 0) {
      m.msg_control = control;
      m.msg_controllen = sizeof(control);
      cmsghdr* cm = CMSG_FIRSTHDR(&m);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    ASSERT_EQ(sendmsg(fd_, &m, 0), static_cast<ssize_t>(n));
  }
  // The reply's header and status, after the server had a Poll.
  bool Receive(wire::MsgHeader* h, wire::ReplyStatus* st,
               wire::HandleResp* handle = nullptr) {
    uint8_t buf[wire::kMaxMessage];
    const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < static_cast<ssize_t>(sizeof(*h) + sizeof(*st))) return false;
    std::memcpy(h, buf, sizeof(*h));
    std::memcpy(st, buf + sizeof(*h), sizeof(*st));
    if (handle != nullptr) {
      if (n !=
          static_cast<ssize_t>(sizeof(*h) + sizeof(*st) + sizeof(*handle))) {
        return false;
      }
      std::memcpy(handle, buf + sizeof(*h) + sizeof(*st), sizeof(*handle));
    }
    return true;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

TEST_F(VerbsSessionTest, MalformedMessagesGetErrorReplies) {
  StartServer();
  RawClient c(path_);
  ASSERT_TRUE(c.connected());
  wire::MsgHeader h;
  wire::ReplyStatus st;
  auto expect_error = [&](uint16_t type, int error) {
    server_->Poll();
    ASSERT_TRUE(c.Receive(&h, &st));
    EXPECT_EQ(h.magic, wire::kMagic);
    EXPECT_EQ(h.type, type | wire::kReplyFlag);
    EXPECT_EQ(st.error, error) << st.message;
    EXPECT_NE(st.message[0], '\0');
  };
  uint8_t buf[256];

  // Shorter than a header.
  c.Send("junk", 4);
  expect_error(0, EPROTO);
  // Bad magic.
  wire::HelloReq hello{wire::kVersion, wire::kVersion, 0, 0, "raw"};
  size_t n = wire::EncodeRequest(wire::MsgType::kHello, 1, hello, buf);
  buf[0] ^= 0xFF;
  c.Send(buf, n);
  expect_error(static_cast<uint16_t>(wire::MsgType::kHello), EPROTO);
  // Known type, wrong length.
  n = wire::EncodeRequest(wire::MsgType::kHello, 2, hello, buf);
  c.Send(buf, n - 4);
  expect_error(static_cast<uint16_t>(wire::MsgType::kHello), EPROTO);
  // Unknown type.
  n = wire::EncodeRequest(static_cast<wire::MsgType>(200), 3, nullptr, 0, buf);
  c.Send(buf, n);
  expect_error(0, EPROTO);
  // A request before hello.
  n = wire::EncodeRequest(wire::MsgType::kAllocPd, 4, wire::Empty{}, buf);
  c.Send(buf, n);
  expect_error(static_cast<uint16_t>(wire::MsgType::kAllocPd), EINVAL);
  // A hello from a future version is answered (Hello's layout is frozen)
  // with the version the daemon speaks.
  wire::HelloReq future{7, 9, 0, 0, "future"};
  n = wire::EncodeRequest(wire::MsgType::kHello, 5, future, buf);
  reinterpret_cast<wire::MsgHeader*>(buf)->version = 7;
  c.Send(buf, n);
  expect_error(static_cast<uint16_t>(wire::MsgType::kHello), EPROTONOSUPPORT);
  EXPECT_EQ(h.seq, 5u);
  // Any other request of another version is refused.
  n = wire::EncodeRequest(wire::MsgType::kAllocPd, 6, wire::Empty{}, buf);
  reinterpret_cast<wire::MsgHeader*>(buf)->version = wire::kVersion + 1;
  c.Send(buf, n);
  expect_error(static_cast<uint16_t>(wire::MsgType::kAllocPd), EPROTO);

  // A proper hello still works on the same connection.
  n = wire::EncodeRequest(wire::MsgType::kHello, 7, hello, buf);
  c.Send(buf, n);
  server_->Poll();
  ASSERT_TRUE(c.Receive(&h, &st));
  EXPECT_EQ(st.error, 0) << st.message;
  EXPECT_EQ(h.seq, 7u);
  // reg_mr without its fd, then with an fd that is not a sealed buffer.
  n = wire::EncodeRequest(wire::MsgType::kAllocPd, 8, wire::Empty{}, buf);
  c.Send(buf, n);
  server_->Poll();
  wire::HandleResp pd{};
  ASSERT_TRUE(c.Receive(&h, &st, &pd));
  ASSERT_EQ(st.error, 0);
  wire::RegMrReq mr{};
  mr.pd = pd.handle;
  mr.length = 4096;
  mr.access = 1;
  n = wire::EncodeRequest(wire::MsgType::kRegMr, 9, mr, buf);
  c.Send(buf, n);
  expect_error(static_cast<uint16_t>(wire::MsgType::kRegMr), EPROTO);
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(ftruncate(unsealed, 4096), 0);
  c.Send(buf, n, unsealed);
  expect_error(static_cast<uint16_t>(wire::MsgType::kRegMr), EINVAL);
  // Another client's PD is not found, whatever the buffer.
  mr.pd = pd.handle ^ 0x100;
  n = wire::EncodeRequest(wire::MsgType::kRegMr, 10, mr, buf);
  c.Send(buf, n, unsealed);
  expect_error(static_cast<uint16_t>(wire::MsgType::kRegMr), ENOENT);
  close(unsealed);
  // A client that sent garbage is still served; the counters saw it all.
  EXPECT_EQ(server_->num_clients(), 1u);
  EXPECT_EQ(server_->counters().bad_requests, 7u);
  EXPECT_EQ(server_->counters().failed_requests, 3u);
}

}  // namespace
}  // namespace rocemu::verbs
