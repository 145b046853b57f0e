// Two clients on one session server: a well-behaved one (a forked child
// using the library) runs SEND/RECV and RDMA WRITE between its own two QPs
// round after round, byte-exact and with every completion exactly once,
// while a hostile one (in the test process, speaking the protocol itself
// and mapping its own rings) names the good client's memory by its keys
// and addresses, sends malformed requests and the good client's handles,
// breaks its own rings, and a third floods requests without reading the
// replies. The server runs in the test process behind an RNIC whose frames
// loop back into it.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include "nic/rnic.h"
#include "tests/temp_dir.h"
#include "tests/verbs/raw_verbs_client.h"
#include "tests/verbs/session_fixture.h"
#include "verbs/client/client_objects.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs::testing {
namespace {

// The good client's buffer: traffic regions, then a canary the traffic
// never touches (the hostile client's target).
constexpr size_t kGoodLen = 1 << 16;
constexpr size_t kSendSrc = 0, kRecvDst = 4096, kWriteSrc = 8192,
                 kWriteDst = 12288, kCanary = 16384;
constexpr uint32_t kSendLen = 3000, kWriteLen = 4000;
constexpr uint8_t kCanarySeed = 0x5A;

// What the good client tells the test, so that the hostile one can name it.
struct GoodInfo {
  uint32_t client_id = 0;
  uint32_t qpn_a = 0, qpn_b = 0;
  uint32_t key = 0;  // L_Key and R_Key of its one region
  uint64_t addr = 0;
  uint32_t pd = 0, cq = 0;
};

// Exit codes of the good client (0: every round right).
enum GoodFail {
  kGoodSetup = 40,
  kGoodPost,
  kGoodTimeout,
  kGoodWc,      // a completion wrong, repeated or unexpected
  kGoodBytes,   // the received or written bytes
  kGoodCanary,  // its untouched memory changed
  kGoodExtra,   // a completion after a round's three
};

int ConnectLib(rocemu_qp* qp, uint32_t dest, const nic::RnicConfig& to) {
  rocemu_qp_attr a{};
  a.qp_state = ROCEMU_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = ROCEMU_ACCESS_REMOTE_WRITE | ROCEMU_ACCESS_REMOTE_READ;
  int err = rocemu_modify_qp(qp, &a,
                             ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX |
                                 ROCEMU_QP_PORT | ROCEMU_QP_ACCESS_FLAGS);
  if (err != 0) return err;
  a.qp_state = ROCEMU_QPS_RTR;
  a.path_mtu = ROCEMU_MTU_1024;
  a.dest_qp_num = dest;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  std::memcpy(a.ah_attr.dgid, to.gid.data(), 16);
  std::memcpy(a.ah_attr.dmac, to.mac.data(), 6);
  a.ah_attr.port_num = 1;
  a.ah_attr.hop_limit = 64;
  err = rocemu_modify_qp(qp, &a,
                         ROCEMU_QP_STATE | ROCEMU_QP_AV | ROCEMU_QP_PATH_MTU |
                             ROCEMU_QP_DEST_QPN | ROCEMU_QP_RQ_PSN |
                             ROCEMU_QP_MAX_DEST_RD_ATOMIC |
                             ROCEMU_QP_MIN_RNR_TIMER);
  if (err != 0) return err;
  a.qp_state = ROCEMU_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  return rocemu_modify_qp(qp, &a,
                          ROCEMU_QP_STATE | ROCEMU_QP_SQ_PSN |
                              ROCEMU_QP_TIMEOUT | ROCEMU_QP_RETRY_CNT |
                              ROCEMU_QP_RNR_RETRY | ROCEMU_QP_MAX_QP_RD_ATOMIC);
}

bool CanaryIntact(const uint8_t* base) {
  for (size_t i = kCanary; i < kGoodLen; ++i) {
    if (base[i] != Pattern(i, kCanarySeed)) return false;
  }
  return true;
}

// The good client: one round per byte from the test ('e' ends), each a
// RECV on b, a SEND a -> b and an RDMA WRITE a -> b's memory, checked byte
// for byte; its completions exactly the three, once each.
void GoodClient(const std::string& path, const nic::RnicConfig& nic, int up,
                int down) {
  rocemu_context* ctx = rocemu_open_device(path.c_str());
  if (ctx == nullptr) _exit(kGoodSetup);
  rocemu_pd* pd = rocemu_alloc_pd(ctx);
  rocemu_buf* buf = pd ? rocemu_alloc_buf(ctx, kGoodLen) : nullptr;
  if (buf == nullptr) _exit(kGoodSetup);
  auto* base = static_cast<uint8_t*>(buf->addr);
  for (size_t i = 0; i < kGoodLen; ++i) base[i] = Pattern(i, kCanarySeed);
  rocemu_mr* mr =
      rocemu_reg_mr(pd, base, kGoodLen,
                    ROCEMU_ACCESS_LOCAL_WRITE | ROCEMU_ACCESS_REMOTE_WRITE |
                        ROCEMU_ACCESS_REMOTE_READ);
  rocemu_cq* cq = mr ? rocemu_create_cq(ctx, 64, nullptr, nullptr, 0) : nullptr;
  if (cq == nullptr) _exit(kGoodSetup);
  rocemu_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {16, 16, 1, 1, 0};
  init.qp_type = ROCEMU_QPT_RC;
  rocemu_qp* a = rocemu_create_qp(pd, &init);
  rocemu_qp* b = a ? rocemu_create_qp(pd, &init) : nullptr;
  if (b == nullptr || ConnectLib(a, rocemu_qp_num(b), nic) != 0 ||
      ConnectLib(b, rocemu_qp_num(a), nic) != 0) {
    _exit(kGoodSetup);
  }
  const GoodInfo info{rocemu_client_id(ctx),
                      rocemu_qp_num(a),
                      rocemu_qp_num(b),
                      mr->lkey,
                      reinterpret_cast<uint64_t>(base),
                      pd->handle,
                      cq->handle};
  WriteAll(up, &info, sizeof(info));
  for (uint8_t round = 0;; ++round) {
    char cmd;
    ReadAll(down, &cmd, 1);
    rocemu_wc wc{};
    if (rocemu_poll_cq(cq, 1, &wc) != 0) _exit(kGoodExtra);
    if (!CanaryIntact(base)) _exit(kGoodCanary);
    if (cmd == 'e') _exit(0);
    const uint8_t s = static_cast<uint8_t>(round * 2);
    std::memset(base + kRecvDst, 0, 4096);
    std::memset(base + kWriteDst, 0, 4096);
    for (size_t i = 0; i < kSendLen; ++i) base[kSendSrc + i] = Pattern(i, s);
    for (size_t i = 0; i < kWriteLen; ++i) {
      base[kWriteSrc + i] = Pattern(i, s + 1);
    }
    const uint64_t at = reinterpret_cast<uint64_t>(base);
    rocemu_sge rsge{at + kRecvDst, 4096, mr->lkey};
    rocemu_recv_wr rwr{1000u + round, nullptr, &rsge, 1};
    rocemu_recv_wr* bad_r = nullptr;
    rocemu_sge ssge{at + kSendSrc, kSendLen, mr->lkey};
    rocemu_send_wr send{};
    send.wr_id = 2000u + round;
    send.sg_list = &ssge;
    send.num_sge = 1;
    send.opcode = ROCEMU_WR_SEND;
    send.send_flags = ROCEMU_SEND_SIGNALED;
    rocemu_sge wsge{at + kWriteSrc, kWriteLen, mr->lkey};
    rocemu_send_wr write{};
    write.wr_id = 3000u + round;
    write.sg_list = &wsge;
    write.num_sge = 1;
    write.opcode = ROCEMU_WR_RDMA_WRITE;
    write.send_flags = ROCEMU_SEND_SIGNALED;
    write.wr.rdma.remote_addr = at + kWriteDst;
    write.wr.rdma.rkey = mr->rkey;
    rocemu_send_wr* bad = nullptr;
    if (rocemu_post_recv(b, &rwr, &bad_r) != 0 ||
        rocemu_post_send(a, &send, &bad) != 0 ||
        rocemu_post_send(a, &write, &bad) != 0) {
      _exit(kGoodPost);
    }
    int seen[3] = {0, 0, 0};
    const time_t give_up = time(nullptr) + 30;
    for (int got = 0; got < 3;) {
      if (time(nullptr) > give_up) _exit(kGoodTimeout);
      const int n = rocemu_poll_cq(cq, 1, &wc);
      if (n < 0) _exit(kGoodWc);
      if (n == 0) {
        usleep(20);
        continue;
      }
      ++got;
      const uint64_t kind = wc.wr_id / 1000;
      if (wc.status != ROCEMU_WC_SUCCESS || kind < 1 || kind > 3 ||
          wc.wr_id % 1000 != round || seen[kind - 1]++ != 0) {
        _exit(kGoodWc);
      }
      if (kind == 1 && (wc.opcode != ROCEMU_WC_RECV ||
                        wc.byte_len != kSendLen || wc.qp_num != info.qpn_b)) {
        _exit(kGoodWc);
      }
    }
    for (size_t i = 0; i < 4096; ++i) {
      const uint8_t recv = i < kSendLen ? Pattern(i, s) : 0;
      const uint8_t written = i < kWriteLen ? Pattern(i, s + 1) : 0;
      if (base[kRecvDst + i] != recv || base[kWriteDst + i] != written) {
        _exit(kGoodBytes);
      }
    }
    WriteAll(up, &round, 1);
  }
}

class HostileClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A good client that died fails its round; writing to its pipe
    // afterwards must not kill the test.
    signal(SIGPIPE, SIG_IGN);
    ASSERT_TRUE(tmp_.Make("hostile"));
    path_ = tmp_.path() + "/verbs.sock";
    cfg_.mac = {0x02, 0, 0, 0, 0, 0x01};
    cfg_.gid = nic::GidFromIpv4(10, 0, 0, 1);
    rnic_ = std::make_unique<nic::Rnic>(cfg_);
    SessionServerOptions o;
    o.socket_path = path_;
    absl::StatusOr<std::unique_ptr<SessionServer>> s =
        SessionServer::Create(*rnic_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  void TearDown() override { server_.reset(); }

  // One pass of a daemon, the RNIC's frames looped back, 100 us later.
  void Pump() {
    server_->Poll();
    LoopFrames(*rnic_, now_);
    now_ += 100'000;
  }
  bool PumpRead(int fd, void* p, size_t n) {
    return PumpReadWith([this] { Pump(); }, fd, p, n);
  }
  int PumpUntilExit(pid_t pid) {
    return PumpUntilExitWith([this] { Pump(); }, pid);
  }
  // The next completion of a raw client's CQ, pumping meanwhile.
  bool RawCompletion(RawCq& cq, CqeSlot* out) {
    for (int i = 0; i < 2000; ++i) {
      if (cq.ring.Pop(out)) return true;
      Pump();
    }
    return false;
  }

  test_support::TempDir tmp_;
  std::string path_;
  nic::RnicConfig cfg_;
  std::unique_ptr<nic::Rnic> rnic_;
  std::unique_ptr<SessionServer> server_;
  nic::TimeNs now_ = 1'000'000'000;
};

// The hostile client's own objects: a buffer, an RC pair over loopback.
struct Hostile {
  std::unique_ptr<RawVerbsClient> c;
  int fd = -1;
  uint8_t* buf = nullptr;
  uint32_t pd = 0, key = 0;
  RawCq cq;
  RawQp qp0, qp1;
  ~Hostile() {
    if (buf != nullptr) munmap(buf, 16384);
    if (fd >= 0) close(fd);
  }
  // The region's iova: no host address (the good client's buffer may sit
  // at the same address in its process as this one's here).
  static constexpr uint64_t kIova = 0x400000000000;
  uint64_t Addr(size_t off) const { return kIova + off; }
};

constexpr uint8_t kHostileSeed = 0xA3;

TEST_F(HostileClientTest, HostileClientHarmsNeitherServerNorOtherClient) {
  const std::string path = path_;
  const nic::RnicConfig nic_cfg = cfg_;
  int up[2], down[2];
  ASSERT_EQ(pipe(up), 0);
  ASSERT_EQ(pipe(down), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(up[0]);
    close(down[1]);
    GoodClient(path, nic_cfg, up[1], down[0]);
    _exit(0);
  }
  close(up[1]);
  close(down[0]);
  fcntl(up[0], F_SETFL, O_NONBLOCK);
  const int from_good = up[0], to_good = down[1];
  // However the test ends, the good client does not outlive it.
  struct Reaper {
    pid_t pid;
    int fds[2];
    ~Reaper() {
      if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
      for (int fd : fds) close(fd);
    }
  } reaper{pid, {from_good, to_good}};
  GoodInfo good;
  ASSERT_TRUE(PumpRead(from_good, &good, sizeof(good)))
      << "good client exited with " << PumpUntilExit(pid);
  // One round of the good client, `meanwhile` run while its traffic is
  // under way (every Pump serves both clients).
  auto round = [&](uint8_t r, const std::function<void()>& meanwhile) {
    ASSERT_EQ(write(to_good, "g", 1), 1);
    meanwhile();
    uint8_t done = 0xFF;
    ASSERT_TRUE(PumpRead(from_good, &done, 1))
        << "round " << int{r} << ": good client exited with "
        << PumpUntilExit(pid);
    ASSERT_EQ(done, r);
  };

  // Before: the good client alone.
  round(0, [] {});
  if (HasFatalFailure()) return;

  // The hostile client: a sealed buffer with its own pattern, a region
  // over it, an RC pair connected to itself.
  Hostile h;
  h.c = std::make_unique<RawVerbsClient>(path_, [this] { Pump(); });
  ASSERT_TRUE(h.c->connected());
  h.fd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(h.fd, 0);
  ASSERT_EQ(ftruncate(h.fd, 16384), 0);
  ASSERT_EQ(fcntl(h.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  void* map = mmap(nullptr, 16384, PROT_READ | PROT_WRITE, MAP_SHARED, h.fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  h.buf = static_cast<uint8_t*>(map);
  for (size_t i = 0; i < 16384; ++i) h.buf[i] = Pattern(i, kHostileSeed);
  RawVerbsClient& c = *h.c;
  ASSERT_EQ(c.Hello(), 0);
  ASSERT_EQ(c.OpenDoorbells(), 0);
  ASSERT_EQ(c.AllocPd(&h.pd), 0);
  ASSERT_EQ(c.RegMr(h.pd, h.fd, 0, 16384, h.Addr(0), 0xF, &h.key), 0);
  ASSERT_EQ(c.CreateCq(64, &h.cq), 0);
  const wire::WireQpCap cap{16, 16, 2, 2, 0};
  ASSERT_EQ(
      c.CreateQp(h.pd, kWireRc, h.cq.handle, h.cq.handle, cap, nullptr, &h.qp0),
      0);
  ASSERT_EQ(
      c.CreateQp(h.pd, kWireRc, h.cq.handle, h.cq.handle, cap, nullptr, &h.qp1),
      0);
  const RawAddress self{cfg_.gid, cfg_.mac};
  auto reconnect = [&] {
    ASSERT_EQ(c.SetState(h.qp0.qpn, kWireReset), 0);
    ASSERT_EQ(c.SetState(h.qp1.qpn, kWireReset), 0);
    ASSERT_EQ(c.ConnectRc(h.qp0.qpn, h.qp1.qpn, self), 0);
    ASSERT_EQ(c.ConnectRc(h.qp1.qpn, h.qp0.qpn, self), 0);
  };
  reconnect();
  // Each hostile WR ends in an error completion of the hostile QP (and
  // the QP in ERR: the pair is reconnected for the next one).
  auto expect_failure = [&](const SqSlot& s, const RqSlot* recv,
                            nic::WcStatus status) {
    if (recv != nullptr) {
      ASSERT_TRUE(c.PostRecv(h.qp1, *recv));
    }
    ASSERT_TRUE(c.PostSend(h.qp0, s));
    CqeSlot e{};
    bool found = false;
    while (!found && RawCompletion(h.cq, &e)) {
      found = e.wr_id == s.wr_id;
      if (found) {
        EXPECT_EQ(e.status, static_cast<uint8_t>(status)) << "wr " << s.wr_id;
      } else if (recv != nullptr && e.wr_id == recv->wr_id) {
        EXPECT_NE(e.status, ROCEMU_WC_SUCCESS) << "wr " << recv->wr_id;
      }
    }
    ASSERT_TRUE(found) << "wr " << s.wr_id << " did not complete";
    reconnect();
    while (h.cq.ring.Pop(&e)) {  // what the reset left
      if (recv != nullptr && e.wr_id == recv->wr_id) {
        EXPECT_NE(e.status, ROCEMU_WC_SUCCESS) << "wr " << recv->wr_id;
      }
    }
  };
  const uint64_t canary = good.addr + kCanary;

  // During: WRs naming the good client's memory by its key and address.
  round(1, [&] {
    SqSlot s{};
    s.send_flags = nic::send_flags::kSignaled;
    s.num_sge = 1;
    // A SEND gathering the good client's canary: its L_Key is refused.
    s.wr_id = 11;
    s.opcode = 2;
    s.sge[0] = RawSge(canary, 4096, good.key);
    RqSlot r{};
    r.wr_id = 12;
    r.num_sge = 1;
    r.sge[0] = RawSge(h.Addr(0), 8192, h.key);
    expect_failure(s, &r, nic::WcStatus::kLocProtErr);
    // A RECV scattering into the good client's canary, its L_Key again:
    // the SEND that lands there fails at the responder.
    s.wr_id = 13;
    s.sge[0] = RawSge(h.Addr(0), 1024, h.key);
    r.wr_id = 14;
    r.sge[0] = RawSge(canary, 4096, good.key);
    expect_failure(s, &r, nic::WcStatus::kRemOpErr);
    // RDMA WRITE into and READ out of it by its R_Key: the responder is a
    // QP of the hostile client's PD, the key is not.
    s.wr_id = 15;
    s.opcode = 0;
    s.remote_addr = canary;
    s.rkey = good.key;
    expect_failure(s, nullptr, nic::WcStatus::kRemAccessErr);
    s.wr_id = 16;
    s.opcode = 4;
    s.sge[0] = RawSge(h.Addr(4096), 4096, h.key);
    expect_failure(s, nullptr, nic::WcStatus::kRemAccessErr);
    // The good client's address under the hostile client's own key, and a
    // length that wraps the address space.
    s.wr_id = 17;
    s.opcode = 2;
    s.sge[0] = RawSge(canary, 4096, h.key);
    expect_failure(s, nullptr, nic::WcStatus::kLocProtErr);
    s.wr_id = 18;
    s.sge[0] = RawSge(h.Addr(16384 - 8), 0xFFFFFFF0u, h.key);
    expect_failure(s, nullptr, nic::WcStatus::kLocLenErr);
  });
  if (HasFatalFailure()) return;
  // Nothing of the good client reached the hostile client's memory.
  for (size_t i = 0; i < 16384; ++i) {
    ASSERT_EQ(h.buf[i], Pattern(i, kHostileSeed)) << "hostile byte " << i;
  }
  EXPECT_EQ(server_->counters().lkey_violations, 2u);  // WRs 11 and 14

  // Malformed requests and the good client's handles: each answered with
  // an error, the connection kept.
  round(2, [&] {
    const SessionCounters before = server_->counters();
    uint8_t msg[wire::kMaxMessage];
    auto raw_error = [&](const uint8_t* m, size_t n) {
      if (!c.SendRaw(m, n)) return -2;
      for (int i = 0; i < 16; ++i) {
        Pump();
        uint8_t buf[wire::kMaxMessage];
        const ssize_t r = c.ReceiveRaw(buf, sizeof(buf), nullptr);
        if (r < 0) return -1;
        if (r >= static_cast<ssize_t>(sizeof(wire::MsgHeader) +
                                      sizeof(wire::ReplyStatus))) {
          wire::ReplyStatus st;
          std::memcpy(&st, buf + sizeof(wire::MsgHeader), sizeof(st));
          return st.error;
        }
      }
      return -1;
    };
    wire::ModifyQpReq mq{h.qp0.qpn, 1, {}};
    size_t n = wire::EncodeRequest(wire::MsgType::kModifyQp, 7, mq, msg);
    EXPECT_EQ(raw_error(msg, n - 10), EPROTO);  // truncated body
    reinterpret_cast<wire::MsgHeader*>(msg)->length = 4000;
    EXPECT_EQ(raw_error(msg, n), EPROTO);  // length field lies
    n = wire::EncodeRequest(static_cast<wire::MsgType>(200), 8, nullptr, 0,
                            msg);
    EXPECT_EQ(raw_error(msg, n), EPROTO);  // unknown type
    EXPECT_EQ(raw_error(msg, 5), EPROTO);  // shorter than a header
    n = wire::EncodeRequest(wire::MsgType::kQueryDevice, 0xFFFFFFFF,
                            wire::Empty{}, msg);
    EXPECT_EQ(raw_error(msg, n), 0);  // any sequence number is echoed
    const wire::HelloReq hello{wire::kVersion, wire::kVersion, 0, 0, "again"};
    EXPECT_EQ(c.Call(wire::MsgType::kHello, hello), EINVAL);

    // The good client's objects, by their handles.
    wire::ModifyQpReq to_err{good.qpn_a, 1, {}};
    to_err.attr.qp_state = kWireErr;
    EXPECT_EQ(c.Call(wire::MsgType::kModifyQp, to_err), ENOENT);
    for (uint32_t qpn : {good.qpn_a, good.qpn_b}) {
      EXPECT_EQ(c.Call(wire::MsgType::kDestroyQp, wire::HandleReq{qpn, 0}),
                ENOENT);
      wire::QueryQpResp q{};
      EXPECT_EQ(c.Call(wire::MsgType::kQueryQp, wire::HandleReq{qpn, 0}, &q),
                ENOENT);
    }
    EXPECT_EQ(c.Call(wire::MsgType::kDeregMr, wire::HandleReq{good.key, 0}),
              ENOENT);
    EXPECT_EQ(
        c.Call(wire::MsgType::kReregMr, wire::ReregMrReq{good.key, 4, h.pd, 0}),
        ENOENT);
    EXPECT_EQ(c.Call(wire::MsgType::kDestroyCq, wire::HandleReq{good.cq, 0}),
              ENOENT);
    EXPECT_EQ(c.Call(wire::MsgType::kDeallocPd, wire::HandleReq{good.pd, 0}),
              ENOENT);
    uint32_t key = 0;
    EXPECT_EQ(c.RegMr(good.pd, h.fd, 0, 4096, h.Addr(0), 0xF, &key), ENOENT);
    RawQp stolen;
    EXPECT_EQ(c.CreateQp(good.pd, kWireRc, h.cq.handle, h.cq.handle, cap,
                         nullptr, &stolen),
              ENOENT);
    EXPECT_EQ(
        c.CreateQp(h.pd, kWireRc, good.cq, good.cq, cap, nullptr, &stolen),
        ENOENT);
    uint32_t ah = 0;
    EXPECT_EQ(c.CreateAh(good.pd, self, &ah), ENOENT);
    // Doorbells of the good client's queues are ignored.
    RawRing& db = c.doorbells();
    ASSERT_TRUE(db.Push(DoorbellSlot{1, good.qpn_a}));
    ASSERT_TRUE(db.Push(DoorbellSlot{2, good.qpn_b}));
    ASSERT_TRUE(db.Push(DoorbellSlot{77, good.qpn_b}));
    Pump();
    const SessionCounters& after = server_->counters();
    EXPECT_EQ(after.bad_requests - before.bad_requests, 4u);
    EXPECT_EQ(after.failed_requests - before.failed_requests, 14u);
    EXPECT_EQ(after.bad_doorbells - before.bad_doorbells, 3u);
    EXPECT_EQ(server_->num_clients(), 2u);
  });
  if (HasFatalFailure()) return;
  EXPECT_FALSE(c.Closed());

  // Garbage in its own rings: WR slots naming the good client's keys with
  // an impossible SGE count, then a producer index no ring can have. The
  // server drops the client for it and says why.
  const uint32_t hostile_id = c.client_id();
  round(3, [&] {
    SqSlot s{};
    s.wr_id = 31;
    s.opcode = 2;
    s.num_sge = 200;
    for (WireSge& g : s.sge) g = RawSge(canary, 4096, good.key);
    ASSERT_TRUE(c.PostSend(h.qp0, s));
    CqeSlot e{};
    ASSERT_TRUE(RawCompletion(h.cq, &e));
    EXPECT_EQ(e.wr_id, 31u);
    EXPECT_EQ(e.status, ROCEMU_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(server_->counters().ring_corruptions, 0u);
    h.qp0.sq.hdr()->head.store(h.qp0.sq.index + 1000);
    c.RingDoorbell(h.qp0.sq, DoorbellKind::kSq, h.qp0.qpn);
    for (int i = 0; i < 100 && !c.Closed(); ++i) Pump();
    EXPECT_TRUE(c.Closed());
  });
  if (HasFatalFailure()) return;
  EXPECT_EQ(server_->counters().ring_corruptions, 1u);
  EXPECT_EQ(server_->num_clients(), 1u);
  const SessionServer::Holdings held = server_->HoldingsOf(hostile_id);
  EXPECT_EQ(held.pds + held.mrs + held.cqs + held.qps + held.srqs, 0u);
  h.c.reset();

  // A client that sends requests and never reads the replies: dropped
  // once they pile up, rather than stall the daemon.
  round(4, [&] {
    RawVerbsClient flood(path_, [this] { Pump(); });
    ASSERT_TRUE(flood.connected());
    ASSERT_EQ(flood.Hello(), 0);
    uint8_t msg[wire::kMaxMessage];
    for (int i = 0; i < 100000 && !flood.HungUp(); ++i) {
      const size_t n = wire::EncodeRequest(
          wire::MsgType::kQueryDevice, flood.next_seq(), wire::Empty{}, msg);
      if (!flood.SendRaw(msg, n) || i % 16 == 15) Pump();
    }
    EXPECT_TRUE(flood.HungUp());
  });
  if (HasFatalFailure()) return;
  EXPECT_EQ(server_->counters().reply_overflows, 1u);
  EXPECT_EQ(server_->num_clients(), 1u);

  // After: the good client alone again.
  round(5, [] {});
  if (HasFatalFailure()) return;
  ASSERT_EQ(write(to_good, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_EQ(server_->num_clients(), 0u);
}

}  // namespace
}  // namespace rocemu::verbs::testing
