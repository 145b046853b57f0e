// The session server with forked library clients: the data path through
// the rings, cleanup of dead clients, isolation, malformed requests.
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

#include <cstring>
#include <string>

#include "tests/verbs/session_fixture.h"

namespace rocemu::verbs::testing {
namespace {

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
        ClientObjs o = OpenConnectedClient(path, kLen, peer, up, down);
        rocemu_sge sge{reinterpret_cast<uint64_t>(o.buf->addr), kLen,
                       o.mr->lkey};
        rocemu_send_wr wr = RdmaWriteWr(1, &sge, 1, peer);
        rocemu_send_wr* bad = nullptr;
        if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
        WriteAll(up, "g", 1);  // echoes the go
        pause();               // killed here, mid-transfer
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
  ASSERT_TRUE(PeerSend(eb, 5, 0, 64).ok());
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
  ASSERT_EQ(chmod(tmp_.path().c_str(), 0755), 0);
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
        ClientObjs o = OpenConnectedClient(path, 4096, peer, up, down);
        rocemu_sge sge{victim_info.addr, 4096, victim_info.lkey};
        rocemu_send_wr wr = RdmaWriteWr(13, &sge, 1, peer);
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

// The session remembers the L_Key a queue last used (OwnedKey); a region
// deregistered since must not pass on that memory.
TEST_F(VerbsSessionTest, KeyOfADeregisteredRegionIsRefusedAfterUse) {
  StartServer();
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  const std::string path = path_;
  int from, to;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenConnectedClient(path, 4096, peer, up, down);
        rocemu_sge sge{reinterpret_cast<uint64_t>(o.buf->addr), 64, o.mr->lkey};
        rocemu_send_wr wr = RdmaWriteWr(1, &sge, 1, peer);
        rocemu_send_wr* bad = nullptr;
        if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
        rocemu_wc w = PollCompletion(o);
        if (w.wr_id != 1 || w.status != ROCEMU_WC_SUCCESS) _exit(kWriteWc);
        if (rocemu_dereg_mr(o.mr) != 0) _exit(kMr);
        wr.wr_id = 2;
        if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
        w = PollCompletion(o);
        if (w.wr_id != 2 || w.status != ROCEMU_WC_LOC_PROT_ERR) _exit(kProtWc);
      },
      &from, &to);
  ClientInfo info;
  ASSERT_NO_FATAL_FAILURE(AcceptConnectedClient(pid, from, to, eb, &info));
  EXPECT_EQ(PumpUntilExit(pid), 0);
  // Refused by the session (not only by the RNIC, which no longer knows
  // the key either): the remembered key was forgotten at the release.
  EXPECT_EQ(server_->counters().sq_wqes, 2u);
  EXPECT_EQ(server_->counters().lkey_violations, 1u);
  close(from);
  close(to);
}

// Doorbells (verbs/wire/doorbell.h): a queue that had work at the last pass is
// polled with its doorbell left rung, so the next post rings nothing; a
// pass that finds it empty clears the doorbell, and the post after that
// rings again. Each post is drained either way.
TEST_F(VerbsSessionTest, BusyQueueIsPolledWithoutNewDoorbells) {
  StartServer();
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  const std::string path = path_;
  int from, to;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenConnectedClient(path, 4096, peer, up, down);
        rocemu_sge sge{reinterpret_cast<uint64_t>(o.buf->addr), 64, o.mr->lkey};
        for (uint64_t id = 1; id <= 3; ++id) {
          rocemu_send_wr wr = RdmaWriteWr(id, &sge, 1, peer);
          rocemu_send_wr* bad = nullptr;
          if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
          const char posted = static_cast<char>('0' + id);
          WriteAll(up, &posted, 1);
          if (id < 3) {
            char go;
            ReadAll(down, &go, 1);
          }
        }
        for (uint64_t id = 1; id <= 3; ++id) {
          const rocemu_wc w = PollCompletion(o);
          if (w.wr_id != id || w.status != ROCEMU_WC_SUCCESS) _exit(kWriteWc);
        }
      },
      &from, &to);
  ClientInfo info;
  ASSERT_NO_FATAL_FAILURE(AcceptConnectedClient(pid, from, to, eb, &info));
  // The parent pumps only when told, so each pass is known.
  auto posted = [&](char want) {
    ASSERT_EQ(ReadByteWithoutPumping(from), want)
        << "client exited with " << PumpUntilExit(pid);
  };
  const uint64_t d0 = server_->counters().doorbells;
  ASSERT_NO_FATAL_FAILURE(posted('1'));
  Pump();
  EXPECT_EQ(server_->counters().sq_wqes, 1u);
  EXPECT_EQ(server_->counters().doorbells, d0 + 1);
  ASSERT_EQ(write(to, "g", 1), 1);
  ASSERT_NO_FATAL_FAILURE(posted('2'));
  Pump();  // still active from the pass that took WRITE 1
  EXPECT_EQ(server_->counters().sq_wqes, 2u);
  EXPECT_EQ(server_->counters().doorbells, d0 + 1);
  Pump();  // found empty: the doorbell is cleared
  ASSERT_EQ(write(to, "g", 1), 1);
  ASSERT_NO_FATAL_FAILURE(posted('3'));
  Pump();
  EXPECT_EQ(server_->counters().sq_wqes, 3u);
  EXPECT_EQ(server_->counters().doorbells, d0 + 2);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  close(from);
  close(to);
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
          // Outside any buffer of the library: process memory.
          static char outside[64];
          absl::StatusOr<Mr> pmr =
              RegMr(pd->get(), outside, sizeof(outside), 0);
          if (!pmr.ok() || (*pmr)->lkey == (*mr)->lkey) _exit(kMr);
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
  EXPECT_EQ(h.mrs, 2u);
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

// A peer whose uid is not allowed learns why (EACCES and a message naming
// the setting) rather than seeing its connection reset, and holds nothing.
TEST_F(VerbsSessionTest, RefusedUidIsToldWhyAndClosed) {
  SessionServerOptions opts;
  opts.allowed_uids = {getuid() + 1};
  StartServer(opts);
  RawClient c(path_);
  ASSERT_TRUE(c.connected());
  c.SendHello(7);
  server_->Poll();
  wire::MsgHeader h;
  wire::ReplyStatus st;
  ASSERT_TRUE(c.Receive(&h, &st));
  EXPECT_EQ(h.type,
            static_cast<uint16_t>(wire::MsgType::kHello) | wire::kReplyFlag);
  EXPECT_EQ(h.seq, 7u);
  EXPECT_EQ(st.error, EACCES);
  EXPECT_NE(std::strstr(st.message, "allowed_uids"), nullptr) << st.message;
  // Then the daemon hangs up: EOF, not a reset.
  char b;
  EXPECT_EQ(recv(c.fd(), &b, 1, 0), 0);
  EXPECT_EQ(server_->counters().clients_refused, 1u);
  EXPECT_EQ(server_->counters().clients_accepted, 0u);
  EXPECT_EQ(server_->counters().clients_closed, 0u);
  EXPECT_EQ(server_->num_clients(), 0u);
}

// A client that says Hello and exits before the daemon accepts it: the
// EOF read right after the Hello is a departure, not an empty request.
TEST_F(VerbsSessionTest, ClientGoneBeforeAcceptIsNotABadRequest) {
  StartServer();
  {
    RawClient c(path_);
    ASSERT_TRUE(c.connected());
    c.SendHello(1);
  }
  server_->Poll();
  server_->Poll();
  EXPECT_EQ(server_->counters().clients_accepted, 1u);
  EXPECT_EQ(server_->counters().clients_closed, 1u);
  EXPECT_EQ(server_->counters().bad_requests, 0u);
  EXPECT_EQ(server_->num_clients(), 0u);
}

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
  // reg_mr without an fd (process memory) of an unmapped range, then with
  // an fd that is not a sealed buffer.
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
  expect_error(static_cast<uint16_t>(wire::MsgType::kRegMr), EINVAL);
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
  EXPECT_EQ(server_->counters().bad_requests, 6u);
  EXPECT_EQ(server_->counters().failed_requests, 4u);
}

// ibv_resize_cq must leave room for every completion the CQ will hold,
// however far the daemon has got with them: signaled WRITEs that wait for
// an ACK count although no CQE exists yet; unsignaled ones do not.
TEST_F(VerbsSessionTest, ResizeCqCountsSignaledWorkNotYetCompleted) {
  StartServer();
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  const std::string path = path_;
  enum { kShrinkAccepted = 40, kExactRefused, kWc, kAfterPoll, kActual };
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int /*down*/) {
        ClientObjs o = OpenClient(path, 1 << 16);
        const uint32_t qpn = rocemu_qp_num(o.qp);
        ConnectClient(o, peer);
        rocemu_sge sge{reinterpret_cast<uint64_t>(o.buf->addr), 256,
                       o.mr->lkey};
        // B's QP is still in RESET: nothing is acknowledged yet.
        for (uint64_t i = 0; i < 5; ++i) {
          rocemu_send_wr wr = RdmaWriteWr(i, &sge, 1, peer, i * 256);
          if (i % 2 == 1) wr.send_flags = 0;  // 1 and 3 unsignaled
          rocemu_send_wr* bad = nullptr;
          if (rocemu_post_send(o.qp, &wr, &bad) != 0) _exit(kPostSend);
        }
        int actual = 0;
        if (rocemu_resize_cq(o.cq, 2, &actual) != EINVAL)
          _exit(kShrinkAccepted);
        if (rocemu_resize_cq(o.cq, 3, &actual) != 0) _exit(kExactRefused);
        if (actual < 3) _exit(kActual);
        WriteAll(up, &qpn, sizeof(qpn));
        for (uint64_t want : {0u, 2u, 4u}) {
          const rocemu_wc w = PollCompletion(o);
          if (w.wr_id != want || w.status != ROCEMU_WC_SUCCESS) _exit(kWc);
        }
        if (rocemu_resize_cq(o.cq, 1, &actual) != 0) _exit(kAfterPoll);
      },
      &from_child, &to_child);
  uint32_t qpn = 0;
  ASSERT_TRUE(PumpRead(from_child, &qpn, sizeof(qpn)))
      << "client exited with " << PumpUntilExit(pid);
  ConnectPeer(eb, qpn);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_EQ(server_->counters().failed_requests, 1u);  // the refused shrink
}

// perftest's pattern: post receives, tell the peer over TCP, the peer
// sends at once. The receive is still in the ring (the daemon's loop has not
// run) when the SEND arrives; the RNIC must find it there, as a hardware
// RNIC reads the WQE from host memory, instead of RNR-NAKing (RC) or
// dropping (UC/UD) a message whose receive was posted first.
TEST_F(VerbsSessionTest, ReceiveStillInTheRingIsFoundByTheSend) {
  StartServer();
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  const std::string path = path_;
  constexpr size_t kSendLen = 3000;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenConnectedClient(path, 1 << 16, peer, up, down);
        auto* base = static_cast<uint8_t*>(o.buf->addr);
        rocemu_sge rsge{reinterpret_cast<uint64_t>(base), 4096, o.mr->lkey};
        rocemu_recv_wr rwr{11, nullptr, &rsge, 1};
        rocemu_recv_wr* bad_r = nullptr;
        if (rocemu_post_recv(o.qp, &rwr, &bad_r) != 0) _exit(kPostRecv);
        WriteAll(up, "g", 1);  // posted: the peer may send
        const rocemu_wc r = PollCompletion(o);
        if (r.wr_id != 11 || r.status != ROCEMU_WC_SUCCESS ||
            r.opcode != ROCEMU_WC_RECV || r.byte_len != kSendLen) {
          _exit(kRecvWc);
        }
        for (size_t i = 0; i < kSendLen; ++i) {
          if (base[i] != Pattern(i, 9)) _exit(kRecvBytes);
        }
      },
      &from_child, &to_child);
  ClientInfo info;
  ASSERT_NO_FATAL_FAILURE(
      AcceptConnectedClient(pid, from_child, to_child, eb, &info));
  // Waits for "posted" without serving the client: its RQ ring is not
  // drained by the loop.
  ASSERT_EQ(ReadByteWithoutPumping(from_child), 'g')
      << "client exited with " << PumpUntilExit(pid);
  EXPECT_EQ(server_->counters().rq_wqes, 0u);
  for (size_t i = 0; i < kSendLen; ++i) eb.buf[i] = Pattern(i, 9);
  ASSERT_TRUE(PeerSend(eb, 5, 0, kSendLen).ok());
  net_.RunUntil(net_.clock().Now() + 1'000'000);
  EXPECT_EQ(server_->counters().rq_fetches, 1u);
  EXPECT_EQ(server_->counters().rq_wqes, 1u);
  const nic::DeviceCounters ca = net_.a().QueryCounters();
  EXPECT_EQ(ca.out_of_buffer, 0u);  // no RNR NAK, nothing dropped
  EXPECT_EQ(ca.rdma_recvs, 1u);
  const std::vector<nic::WorkCompletion> wcs =
      nic::testing::Poll(net_.b(), eb.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 5u);
  EXPECT_EQ(wcs[0].status, nic::WcStatus::kSuccess);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  close(from_child);
  close(to_child);
}

// A receive-only QP (max_send_wr 0) and a send-only one (max_recv_wr 0)
// as qperf creates them: both are granted, their empty queues refuse posts
// with ENOMEM, and a QP asked for no inline data gets what its one SGE's
// room holds (16 bytes, written back and in query_qp), which a SEND with
// ROCEMU_SEND_INLINE may then use (rdma_xclient's post); one byte more is
// EINVAL.
TEST_F(VerbsSessionTest, SendOnlyAndReceiveOnlyQpsAndTheInlineGrant) {
  StartServer();
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  const std::string path = path_;
  constexpr uint32_t kInline = 16;
  enum { kRecvOnly = 40, kRecvOnlyPost, kSendOnly, kSendOnlyPost, kInlineWc };
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenClient(path, 1 << 16);
        auto* base = static_cast<uint8_t*>(o.buf->addr);
        rocemu_qp_init_attr init{};
        init.send_cq = o.cq;
        init.recv_cq = o.cq;
        init.qp_type = ROCEMU_QPT_RC;
        init.cap = {0, 8, 1, 1, 0};
        rocemu_qp* rq_only = rocemu_create_qp(o.pd, &init);
        if (rq_only == nullptr || init.cap.max_send_wr != 0 ||
            init.cap.max_recv_wr != 8 || init.cap.max_inline_data != kInline ||
            init.cap.max_send_sge != 1) {
          _exit(kRecvOnly);
        }
        rocemu_qp_attr q{};
        if (rocemu_query_qp(rq_only, &q, 0) != 0 || q.cap.max_send_wr != 0 ||
            q.cap.max_inline_data != kInline) {
          _exit(kRecvOnly);
        }
        rocemu_sge sge{reinterpret_cast<uint64_t>(base), kInline, o.mr->lkey};
        rocemu_send_wr swr{};
        swr.wr_id = 1;
        swr.sg_list = &sge;
        swr.num_sge = 1;
        swr.opcode = ROCEMU_WR_SEND;
        swr.send_flags = ROCEMU_SEND_SIGNALED | ROCEMU_SEND_INLINE;
        rocemu_send_wr* bad = nullptr;
        ConnectClient(ClientObjs{o.ctx, o.pd, o.buf, o.mr, o.ch, o.cq, rq_only},
                      peer);
        if (rocemu_post_send(rq_only, &swr, &bad) != ENOMEM || bad != &swr) {
          _exit(kRecvOnlyPost);
        }
        init.cap = {8, 0, 1, 1, 0};
        rocemu_qp* sq_only = rocemu_create_qp(o.pd, &init);
        if (sq_only == nullptr || init.cap.max_recv_wr != 0 ||
            init.cap.max_send_wr != 8 || init.cap.max_inline_data != kInline) {
          _exit(kSendOnly);
        }
        o.qp = sq_only;
        ConnectClient(o, peer);
        rocemu_recv_wr rwr{2, nullptr, &sge, 1};
        rocemu_recv_wr* bad_r = nullptr;
        if (rocemu_post_recv(sq_only, &rwr, &bad_r) != ENOMEM ||
            bad_r != &rwr) {
          _exit(kSendOnlyPost);
        }
        ClientInfo info{rocemu_qp_num(sq_only), o.mr->lkey, 0,
                        rocemu_client_id(o.ctx)};
        WriteAll(up, &info, sizeof(info));
        char go;
        ReadAll(down, &go, 1);  // B connected, its receive posted
        for (uint32_t i = 0; i <= kInline; ++i) base[i] = Pattern(i, 5);
        sge.length = kInline + 1;
        if (rocemu_post_send(sq_only, &swr, &bad) != EINVAL) {
          _exit(kSendOnlyPost);
        }
        sge.length = kInline;
        if (rocemu_post_send(sq_only, &swr, &bad) != 0) _exit(kPostSend);
        // The bytes were taken at the post: changing them now changes
        // nothing.
        std::memset(base, 0, kInline);
        const rocemu_wc w = PollCompletion(o);
        if (w.wr_id != 1 || w.status != ROCEMU_WC_SUCCESS) _exit(kInlineWc);
      },
      &from_child, &to_child);
  ClientInfo info;
  ASSERT_TRUE(PumpRead(from_child, &info, sizeof(info)))
      << "client exited with " << PumpUntilExit(pid);
  ASSERT_NO_FATAL_FAILURE(ConnectPeer(eb, info.qpn));
  ASSERT_TRUE(net_.b()
                  .PostRecv(eb.qpn, {9, {nic::testing::SgeOf(eb, 1024, 4096)}})
                  .ok());
  ASSERT_EQ(write(to_child, "g", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  const std::vector<nic::WorkCompletion> wcs =
      nic::testing::Poll(net_.b(), eb.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 9u);
  EXPECT_EQ(wcs[0].byte_len, kInline);
  for (uint32_t i = 0; i < kInline; ++i) {
    EXPECT_EQ(eb.buf[1024 + i], Pattern(i, 5)) << "byte " << i;
  }
  close(from_child);
  close(to_child);
}

}  // namespace
}  // namespace rocemu::verbs::testing
