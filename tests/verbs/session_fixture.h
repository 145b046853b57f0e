// The fixture of the verbs tests: the session server in-process over a
// Unix socket, RNIC A behind it and RNIC B (driven directly by the test)
// wired back to back. Clients are forked children using the verbs library,
// so the rings and buffers really cross processes.
#ifndef ROCEMU_TESTS_VERBS_SESSION_FIXTURE_H_
#define ROCEMU_TESTS_VERBS_SESSION_FIXTURE_H_

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
#include "tests/temp_dir.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/rocemu_verbs.hpp"
#include "verbs/server/session_server.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs::testing {

using nic::testing::BackToBack;
using nic::testing::ConnectOptions;
using nic::testing::Endpoint;

inline uint8_t Pattern(size_t i, uint8_t seed) {
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

inline void WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w <= 0) _exit(kPipe);
    c += w;
    n -= static_cast<size_t>(w);
  }
}

inline void ReadAll(int fd, void* p, size_t n) {
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
inline int kCqContext = 0;

inline ClientObjs OpenClient(const std::string& path, size_t buf_len) {
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

inline void ConnectClient(const ClientObjs& o, const Peer& peer) {
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

// One byte from a child's pipe (which does not block), waiting up to 30 s
// without pumping: for tests that choose when the server takes a pass.
// 0 when nothing came or the child is gone.
inline char ReadByteWithoutPumping(int fd) {
  const time_t give_up = time(nullptr) + 30;
  for (;;) {
    char c = 0;
    const ssize_t r = read(fd, &c, 1);
    if (r == 1) return c;
    if (r == 0 || errno != EAGAIN || time(nullptr) >= give_up) return 0;
    usleep(50);
  }
}

// A forked client's usual start: its objects (OpenClient), its QP
// connected to `peer`, its ClientInfo sent `up`; returns once the parent
// says go on `down` (B is connected to it).
inline ClientObjs OpenConnectedClient(const std::string& path, size_t buf_len,
                                      const Peer& peer, int up, int down) {
  ClientObjs o = OpenClient(path, buf_len);
  ClientInfo info{rocemu_qp_num(o.qp), o.mr->lkey, 0, rocemu_client_id(o.ctx)};
  ConnectClient(o, peer);
  WriteAll(up, &info, sizeof(info));
  char go;
  ReadAll(down, &go, 1);
  return o;
}

// A signalled RDMA WRITE of `sge` to the peer's buffer (+ offset).
inline rocemu_send_wr RdmaWriteWr(uint64_t wr_id, rocemu_sge* sge, int num_sge,
                                  const Peer& peer, uint64_t offset = 0) {
  rocemu_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sge;
  wr.num_sge = num_sge;
  wr.opcode = ROCEMU_WR_RDMA_WRITE;
  wr.send_flags = ROCEMU_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = peer.addr + offset;
  wr.wr.rdma.rkey = peer.rkey;
  return wr;
}

// Waits for one completion through the completion channel (arm, re-poll,
// sleep on the eventfd), as an event-driven ibverbs application does.
inline rocemu_wc WaitCompletionEvent(const ClientObjs& o) {
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
inline rocemu_wc PollCompletion(const ClientObjs& o) {
  rocemu_wc wc{};
  for (;;) {
    const int n = rocemu_poll_cq(o.cq, 1, &wc);
    if (n < 0) _exit(kEvent);
    if (n == 1) return wc;
    usleep(20);
  }
}

// Runs `pump` (one pass of a daemon) until `fd` (non-blocking) yields n
// bytes, the child at its other end exits, or a generous wall-clock bound
// (a hung test must end, not pass).
template <typename Pump>
bool PumpReadWith(Pump&& pump, int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  const time_t give_up = time(nullptr) + 30;
  while (n > 0 && time(nullptr) < give_up) {
    pump();
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

// Runs `pump` until child `pid` exits; returns its exit code (-1: killed
// or hung).
template <typename Pump>
int PumpUntilExitWith(Pump&& pump, pid_t pid) {
  const time_t give_up = time(nullptr) + 30;
  int status = 0;
  while (time(nullptr) < give_up) {
    pump();
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      pump();  // notices the EOF
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    usleep(50);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

class VerbsSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.Make("verbs"));
    path_ = tmp_.path() + "/verbs.sock";
  }
  void TearDown() override { server_.reset(); }

  void StartServer(mode_t mode = 0660) {
    SessionServerOptions opts;
    opts.socket_mode = mode;
    StartServer(opts);
  }
  void StartServer(SessionServerOptions opts) {
    opts.socket_path = path_;
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

  bool PumpRead(int fd, void* p, size_t n) {
    return PumpReadWith([this] { Pump(); }, fd, p, n);
  }
  int PumpUntilExit(pid_t pid) {
    return PumpUntilExitWith([this] { Pump(); }, pid);
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

  // The parent's side of OpenConnectedClient: the child's ClientInfo into
  // *info, B's endpoint connected to the child's QP, and the go.
  void AcceptConnectedClient(pid_t pid, int from, int to, const Endpoint& eb,
                             ClientInfo* info) {
    ASSERT_TRUE(PumpRead(from, info, sizeof(*info)))
        << "client exited with " << PumpUntilExit(pid);
    ASSERT_NO_FATAL_FAILURE(ConnectPeer(eb, info->qpn));
    ASSERT_EQ(write(to, "g", 1), 1);
  }

  // A signaled SEND of eb.buf[offset, offset + len) from B's endpoint.
  absl::Status PeerSend(const Endpoint& eb, uint64_t wr_id, size_t offset,
                        size_t len, bool solicited = false) {
    nic::SendWr send;
    send.wr_id = wr_id;
    send.opcode = nic::WrOpcode::kSend;
    send.send_flags = nic::send_flags::kSignaled |
                      (solicited ? nic::send_flags::kSolicited : 0u);
    send.sg_list.PushBack(nic::testing::SgeOf(eb, offset, len));
    return net_.b().PostSend(eb.qpn, send);
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
          rocemu_send_wr wr = RdmaWriteWr(42, &sge, 1, peer);
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
    ASSERT_TRUE(PeerSend(eb, 99, 32768, kSendLen).ok());
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

  test_support::TempDir tmp_;
  std::string path_;
  BackToBack net_;
  std::unique_ptr<SessionServer> server_;
};

// A hand-written client speaking the wire protocol directly (malformed
// requests, other clients' handles).
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
  int fd() const { return fd_; }
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
  // A Hello of the daemon's version, as the library sends it.
  void SendHello(uint32_t seq) {
    uint8_t buf[256];
    wire::HelloReq hello{wire::kVersion, wire::kVersion, 0, 0, "raw"};
    Send(buf, wire::EncodeRequest(wire::MsgType::kHello, seq, hello, buf));
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

// Sends one request and returns the reply's errno (-1: no reply), after
// the server had a Poll.
inline int RawCall(RawClient& c, SessionServer& server, wire::MsgType type,
                   uint32_t seq, const void* body, size_t len) {
  uint8_t buf[wire::kMaxMessage];
  const size_t n = wire::EncodeRequest(type, seq, body, len, buf);
  c.Send(buf, n);
  server.Poll();
  wire::MsgHeader h;
  wire::ReplyStatus st;
  if (!c.Receive(&h, &st) || h.seq != seq) return -1;
  return st.error;
}

}  // namespace rocemu::verbs::testing

#endif  // ROCEMU_TESTS_VERBS_SESSION_FIXTURE_H_
