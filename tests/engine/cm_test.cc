// The Communication Manager's conformance suite (IBTA vol. 1 ch. 12, as
// Linux's ib_cm behaves): two RNICs back to back, CM MADs on QP1, frames
// lost, duplicated or delayed on purpose. Every case ends with both sides'
// CM events, QP states and counters asserted.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "nic/cm/cm_agent.h"
#include "nic/cm/cm_timing.h"
#include "protocol/cm_ip.h"
#include "protocol/cm_messages.h"
#include "protocol/mad.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::cm_attr::kDrep;
using protocol::cm_attr::kDreq;
using protocol::cm_attr::kRep;
using protocol::cm_attr::kReq;
using protocol::cm_attr::kRtu;

// A plain IB CM service ID (not in rdma_cm's IP ranges: no IP header).
constexpr uint64_t kService = 0x1000000000000042ull;
constexpr uint64_t kRdmaTcp7174 = 0x0000000001061C06ull;

// The CM attribute of a QP1 frame, or -1 for any other frame.
int AttrOf(const WireFrame& f) {
  if (f.parsed.hdr.bth.dest_qp != protocol::kGsiQpn ||
      f.parsed.payload.size() < protocol::kMadHeaderSize) {
    return -1;
  }
  protocol::MadHeader h;
  protocol::ParseMadHeader(f.parsed.payload, &h);
  return h.attr_id;
}

class CmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConnectOptions o;
    ASSERT_TRUE(SetupEndpoint(net_.a(), o, &ea_).ok());
    ASSERT_TRUE(SetupEndpoint(net_.b(), o, &eb_).ok());
  }

  Rnic& a() { return net_.a(); }
  Rnic& b() { return net_.b(); }
  TimeNs Now() { return net_.clock().Now(); }

  static CmPath PathTo(const Rnic& peer) {
    CmPath p;
    p.dgid = peer.config().gid;
    p.dmac = peer.config().mac;
    return p;
  }
  CmConnectParams ConnectParams() {
    CmConnectParams p;
    p.service_id = kService;
    p.qpn = ea_.qpn;
    p.path = PathTo(b());
    p.responder_resources = 4;
    p.initiator_depth = 4;
    p.private_data = {'h', 'e', 'l', 'l', 'o'};
    return p;
  }
  CmAcceptParams AcceptParams() {
    CmAcceptParams p;
    p.qpn = eb_.qpn;
    p.responder_resources = 4;
    p.initiator_depth = 4;
    p.private_data = {'r', 'e', 'p'};
    return p;
  }

  // Frames move at this instant; no timer fires.
  void Settle() { net_.RunUntil(Now()); }
  // Runs (timers included) until `nic` has a CM event or `limit` passes.
  bool RunUntilEvent(Rnic& nic, TimeNs limit = kNever) {
    for (int i = 0; i < 10000; ++i) {
      Settle();
      if (nic.cm().pending_events() > 0) return true;
      const TimeNs t = std::min(a().NextEventTime(), b().NextEventTime());
      if (t == kNever || t > limit) return false;
      net_.clock().Set(std::max(t, Now() + 1));
    }
    return false;
  }
  static std::vector<CmEvent> Events(Rnic& nic) {
    std::vector<CmEvent> out;
    CmEvent ev;
    while (nic.cm().PollEvent(&ev)) out.push_back(ev);
    return out;
  }
  static std::vector<CmEventType> Types(const std::vector<CmEvent>& evs) {
    std::vector<CmEventType> t;
    for (const CmEvent& e : evs) t.push_back(e.type);
    return t;
  }
  static QpState State(Rnic& nic, uint32_t qpn) {
    return nic.GetQp(qpn)->state();
  }
  static CmState CmStateOf(Rnic& nic, CmId id) {
    absl::StatusOr<CmIdInfo> i = nic.cm().Query(id);
    EXPECT_TRUE(i.ok()) << i.status();
    return i.ok() ? i->state : CmState::kIdle;
  }
  // Frames of direction `dir` carrying CM attribute `attr`.
  size_t CountAttr(int dir, int attr) {
    size_t n = 0;
    for (const auto& f : net_.log()) {
      if (f->dir == dir && AttrOf(*f) == attr) ++n;
    }
    return n;
  }
  // Drops the first `n` frames of `dir` carrying `attr`.
  void DropFirst(int dir, int attr, int n = 1) {
    auto left = std::make_shared<int>(n);
    net_.drop = [dir, attr, left](const WireFrame& f) {
      if (f.dir == dir && AttrOf(f) == attr && *left > 0) {
        --*left;
        return true;
      }
      return false;
    };
  }

  struct Conn {
    CmId listen = 0, a = 0, b = 0;
  };
  // Listen on B, connect from A, accept on B: both ESTABLISHED.
  Conn Establish() {
    Conn c;
    c.listen = *b().cm().Listen({.service_id = kService});
    absl::StatusOr<CmId> id = a().cm().Connect(ConnectParams(), Now());
    EXPECT_TRUE(id.ok()) << id.status();
    c.a = *id;
    EXPECT_TRUE(RunUntilEvent(b()));
    std::vector<CmEvent> ev = Events(b());
    EXPECT_EQ(Types(ev), std::vector{CmEventType::kReqReceived});
    c.b = ev.empty() ? 0 : ev[0].id;
    EXPECT_TRUE(b().cm().Accept(c.b, AcceptParams(), Now()).ok());
    Settle();
    EXPECT_EQ(Types(Events(a())), (std::vector{CmEventType::kRepReceived,
                                               CmEventType::kEstablished}));
    EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kEstablished});
    return c;
  }

  // One signaled RDMA WRITE of `len` bytes A -> B, run to completion.
  WcStatus WriteAToB(uint32_t len, uint8_t seed) {
    Fill(ea_.buf, 0, len, seed);
    SendWr wr;
    wr.wr_id = 77;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {SgeOf(ea_, 0, len)};
    wr.rdma.remote_addr = Va(eb_, 0);
    wr.rdma.rkey = eb_.key;
    EXPECT_TRUE(a().PostSend(ea_.qpn, wr).ok());
    net_.RunUntil(Now() + 1'000'000'000);
    const std::vector<WorkCompletion> wc = Poll(a(), ea_.cq);
    if (wc.size() != 1) return WcStatus::kGeneralErr;
    for (uint32_t i = 0; i < len; ++i) {
      if (eb_.buf[i] != ea_.buf[i]) return WcStatus::kGeneralErr;
    }
    return wc[0].status;
  }

  BackToBack net_;
  Endpoint ea_, eb_;
};

TEST_F(CmTest, ConnectTransferDisconnect) {
  const CmId listen = *b().cm().Listen({.service_id = kService});
  EXPECT_EQ(b().cm().Listen({.service_id = kService}).status().code(),
            absl::StatusCode::kAlreadyExists);
  const CmId aid = *a().cm().Connect(ConnectParams(), Now());
  EXPECT_EQ(State(a(), ea_.qpn), QpState::kInit);
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kReqSent);
  Settle();
  std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kReqReceived});
  const CmEvent& req = bev[0];
  EXPECT_EQ(req.listen_id, listen);
  EXPECT_EQ(req.remote_qpn, ea_.qpn);
  EXPECT_EQ(req.remote_ca_guid, a().cm().local_ca_guid());
  EXPECT_EQ(req.responder_resources, 4);
  EXPECT_EQ(req.qp_type, QpType::kRc);
  EXPECT_EQ(req.path.dgid, a().config().gid);
  EXPECT_EQ(req.path.dmac, a().config().mac);
  ASSERT_GE(req.private_data.size(), 5u);
  EXPECT_EQ(std::string(req.private_data.begin(), req.private_data.begin() + 5),
            "hello");
  const CmId bid = req.id;
  EXPECT_EQ(CmStateOf(b(), bid), CmState::kReqRcvd);

  ASSERT_TRUE(b().cm().Accept(bid, AcceptParams(), Now()).ok());
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kRtr);
  Settle();
  std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), (std::vector{CmEventType::kRepReceived,
                                     CmEventType::kEstablished}));
  EXPECT_EQ(aev[0].remote_qpn, eb_.qpn);
  EXPECT_EQ(
      std::string(aev[0].private_data.begin(), aev[0].private_data.begin() + 3),
      "rep");
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kEstablished});
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kEstablished);
  EXPECT_EQ(CmStateOf(b(), bid), CmState::kEstablished);

  // The QPs were set from the exchange: each one's send PSN is the other's
  // receive PSN, the destination QPs cross, reads allowed both ways.
  const QpAttr qa = *a().QueryQp(ea_.qpn);
  const QpAttr qb = *b().QueryQp(eb_.qpn);
  EXPECT_EQ(qa.qp_state, QpState::kRts);
  EXPECT_EQ(qb.qp_state, QpState::kRts);
  EXPECT_EQ(qa.dest_qp_num, eb_.qpn);
  EXPECT_EQ(qb.dest_qp_num, ea_.qpn);
  EXPECT_EQ(qa.sq_psn, qb.rq_psn);
  EXPECT_EQ(qb.sq_psn, qa.rq_psn);
  EXPECT_EQ(qa.max_rd_atomic, 4);
  EXPECT_EQ(qb.max_dest_rd_atomic, 4);
  EXPECT_EQ(qa.timeout, CmAckTimeout(15, 18));
  EXPECT_EQ(qa.path_mtu, PathMtu::kMtu1024);
  EXPECT_EQ(WriteAToB(5000, 3), WcStatus::kSuccess);

  // The MADs on the wire: UD SEND_ONLY to QP1 from QP1, the GSI Q_Key.
  size_t mads = 0;
  for (const auto& f : net_.log()) {
    if (AttrOf(*f) < 0) continue;
    ++mads;
    EXPECT_EQ(f->parsed.hdr.bth.opcode, 0x64);
    EXPECT_EQ(f->parsed.hdr.deth.qkey, protocol::kGsiQkey);
    EXPECT_EQ(f->parsed.hdr.deth.src_qp, protocol::kGsiQpn);
    EXPECT_EQ(f->parsed.hdr.bth.pkey, kDefaultPKey);
    EXPECT_EQ(f->parsed.payload.size(), protocol::kMadSize);
  }
  EXPECT_EQ(mads, 3u);  // REQ, REP, RTU

  ASSERT_TRUE(a().cm().Disconnect(aid, {}, Now()).ok());
  EXPECT_EQ(State(a(), ea_.qpn), QpState::kErr);
  Settle();
  bev = Events(b());
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kDisconnected});
  EXPECT_TRUE(bev[0].by_peer);
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kErr);
  aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kDisconnected});
  EXPECT_FALSE(aev[0].by_peer);
  EXPECT_FALSE(aev[0].timed_out);
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kTimewait);
  EXPECT_EQ(CmStateOf(b(), bid), CmState::kTimewait);
  net_.Run();
  EXPECT_EQ(Types(Events(a())), std::vector{CmEventType::kTimewaitExit});
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kTimewaitExit});
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kIdle);

  const DeviceCounters& ca = a().device_counters();
  const DeviceCounters& cb = b().device_counters();
  EXPECT_EQ(ca.cm_req_sent, 1u);
  EXPECT_EQ(ca.cm_rep_rcvd, 1u);
  EXPECT_EQ(ca.cm_rtu_sent, 1u);
  EXPECT_EQ(ca.cm_dreq_sent, 1u);
  EXPECT_EQ(ca.cm_drep_rcvd, 1u);
  EXPECT_EQ(cb.cm_req_rcvd, 1u);
  EXPECT_EQ(cb.cm_rep_sent, 1u);
  EXPECT_EQ(cb.cm_rtu_rcvd, 1u);
  EXPECT_EQ(cb.cm_dreq_rcvd, 1u);
  EXPECT_EQ(cb.cm_drep_sent, 1u);
  EXPECT_EQ(ca.mad_sent, 3u);
  EXPECT_EQ(cb.mad_sent, 2u);
  EXPECT_EQ(ca.mad_rcvd, 2u);
  EXPECT_EQ(cb.mad_rcvd, 3u);
  EXPECT_EQ(ca.cm_retries + cb.cm_retries, 0u);
  EXPECT_EQ(ca.rx_unknown_qp + cb.rx_unknown_qp, 0u);
}

TEST_F(CmTest, LostReqIsRetransmitted) {
  DropFirst(0, kReq);
  b().cm().Listen({.service_id = kService}).IgnoreError();
  const TimeNs t0 = Now();
  const CmId aid = *a().cm().Connect(ConnectParams(), Now());
  ASSERT_TRUE(RunUntilEvent(b()));
  // The REQ came again after the REQ's round trip plus the remote CM
  // response time (rdma_cm's 18 and 20: about 6.4 s).
  EXPECT_EQ(Now() - t0, 2 * IbTimeNs(18) + IbTimeNs(20));
  std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kReqReceived});
  ASSERT_TRUE(b().cm().Accept(bev[0].id, AcceptParams(), Now()).ok());
  Settle();
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kEstablished);
  EXPECT_EQ(a().device_counters().cm_retries, 1u);
  EXPECT_EQ(a().device_counters().cm_req_sent, 2u);
  EXPECT_EQ(CountAttr(0, kReq), 2u);
  EXPECT_EQ(WriteAToB(100, 9), WcStatus::kSuccess);
}

TEST_F(CmTest, UnansweredReqEndsUnreachable) {
  net_.drop = [](const WireFrame& f) { return AttrOf(f) == kReq; };
  b().cm().Listen({.service_id = kService}).IgnoreError();
  CmConnectParams p = ConnectParams();
  p.max_cm_retries = 3;
  const CmId aid = *a().cm().Connect(p, Now());
  net_.Run();
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kUnreachable});
  EXPECT_EQ(aev[0].id, aid);
  EXPECT_EQ(CountAttr(0, kReq), 4u);  // the first and 3 retries
  EXPECT_EQ(a().device_counters().cm_retries, 3u);
  EXPECT_EQ(a().device_counters().cm_timeouts, 1u);
  EXPECT_EQ(State(a(), ea_.qpn), QpState::kErr);
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kIdle);
  EXPECT_EQ(b().device_counters().mad_rcvd, 0u);
  EXPECT_TRUE(Events(b()).empty());
}

TEST_F(CmTest, LostRepIsResentOnTheDuplicateReq) {
  DropFirst(1, kRep);
  b().cm().Listen({.service_id = kService}).IgnoreError();
  CmConnectParams p = ConnectParams();
  // B waits longer for the RTU than A for the REP: A's REQ retry comes
  // first, and B answers it with its REP again.
  p.local_cm_response_timeout = 23;
  const CmId aid = *a().cm().Connect(p, Now());
  Settle();
  std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kReqReceived});
  const CmId bid = bev[0].id;
  ASSERT_TRUE(b().cm().Accept(bid, AcceptParams(), Now()).ok());
  Settle();
  EXPECT_TRUE(Events(a()).empty());
  ASSERT_TRUE(RunUntilEvent(a()));
  EXPECT_EQ(Types(Events(a())), (std::vector{CmEventType::kRepReceived,
                                             CmEventType::kEstablished}));
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kEstablished});
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kEstablished);
  EXPECT_EQ(CmStateOf(b(), bid), CmState::kEstablished);
  EXPECT_EQ(b().device_counters().cm_dup_req_rcvd, 1u);
  EXPECT_EQ(b().device_counters().cm_rep_sent, 2u);
  EXPECT_EQ(b().device_counters().cm_retries, 0u);
  EXPECT_EQ(a().device_counters().cm_retries, 1u);
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kRts);
}

TEST_F(CmTest, LostRtuFirstDataEstablishesThePassiveSide) {
  DropFirst(0, kRtu);
  const Conn c = [&] {
    Conn c;
    b().cm().Listen({.service_id = kService}).IgnoreError();
    c.a = *a().cm().Connect(ConnectParams(), Now());
    Settle();
    c.b = Events(b()).at(0).id;
    EXPECT_TRUE(b().cm().Accept(c.b, AcceptParams(), Now()).ok());
    Settle();
    return c;
  }();
  EXPECT_EQ(CmStateOf(a(), c.a), CmState::kEstablished);
  EXPECT_EQ(CmStateOf(b(), c.b), CmState::kRepSent);
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kRtr);
  Events(a());
  EXPECT_TRUE(Events(b()).empty());
  // A's first WRITE reaches B's QP in RTR: communication established.
  EXPECT_EQ(WriteAToB(2000, 5), WcStatus::kSuccess);
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kEstablished});
  EXPECT_EQ(CmStateOf(b(), c.b), CmState::kEstablished);
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kRts);
  EXPECT_EQ(b().device_counters().cm_comm_est, 1u);
  // B's REP timer ended with the connection: no REP is ever resent.
  net_.Run();
  EXPECT_EQ(b().device_counters().cm_rep_sent, 1u);
  EXPECT_EQ(b().device_counters().cm_retries, 0u);
}

TEST_F(CmTest, LostRtuWithoutDataTheRepRetryGetsItAgain) {
  DropFirst(0, kRtu);
  b().cm().Listen({.service_id = kService}).IgnoreError();
  const CmId aid = *a().cm().Connect(ConnectParams(), Now());
  Settle();
  const CmId bid = Events(b()).at(0).id;
  ASSERT_TRUE(b().cm().Accept(bid, AcceptParams(), Now()).ok());
  Settle();
  Events(a());
  ASSERT_TRUE(RunUntilEvent(b()));
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kEstablished});
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kEstablished);
  EXPECT_EQ(CmStateOf(b(), bid), CmState::kEstablished);
  EXPECT_EQ(b().device_counters().cm_retries, 1u);
  EXPECT_EQ(a().device_counters().cm_dup_rep_rcvd, 1u);
  EXPECT_EQ(a().device_counters().cm_rtu_sent, 2u);
  EXPECT_TRUE(Events(a()).empty());  // nothing new for A's consumer
}

TEST_F(CmTest, MraStretchesTheRequestersTimeout) {
  b().cm().Listen({.service_id = kService}).IgnoreError();
  const TimeNs t0 = Now();
  const CmId aid = *a().cm().Connect(ConnectParams(), Now());
  Settle();
  const CmId bid = Events(b()).at(0).id;
  // The consumer needs 4.096 us * 2^24 (about 69 s).
  const std::array<uint8_t, 3> why = {'w', 'a', 'i'};
  ASSERT_TRUE(b().cm().Mra(bid, 24, why).ok());
  Settle();
  std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kMraReceived});
  EXPECT_EQ(aev[0].service_timeout, 24);
  EXPECT_EQ(aev[0].private_data.at(0), 'w');
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kMraReqRcvd);
  // Well past the REQ's own timeout: no retransmission.
  net_.RunUntil(t0 + 4 * (2 * IbTimeNs(18) + IbTimeNs(20)));
  EXPECT_EQ(a().device_counters().cm_retries, 0u);
  EXPECT_EQ(CountAttr(0, kReq), 1u);
  ASSERT_TRUE(b().cm().Accept(bid, AcceptParams(), Now()).ok());
  Settle();
  EXPECT_EQ(Types(Events(a())), (std::vector{CmEventType::kRepReceived,
                                             CmEventType::kEstablished}));
  EXPECT_EQ(CmStateOf(b(), bid), CmState::kEstablished);
  EXPECT_EQ(b().device_counters().cm_mra_sent, 1u);
  EXPECT_EQ(a().device_counters().cm_mra_rcvd, 1u);
}

TEST_F(CmTest, MraedRequestIsRetriedAfterTheServiceTime) {
  b().cm().Listen({.service_id = kService}).IgnoreError();
  const CmId aid = *a().cm().Connect(ConnectParams(), Now());
  Settle();
  const CmId bid = Events(b()).at(0).id;
  ASSERT_TRUE(b().cm().Mra(bid, 22, {}).ok());
  Settle();
  Events(a());
  const TimeNs t_mra = Now();
  // B's consumer never answers: A retries after the MRA's service time
  // plus the round trip, and B answers each duplicate REQ with its MRA.
  net_.RunUntil(t_mra + IbTimeNs(22) + 2 * IbTimeNs(18));
  EXPECT_EQ(a().device_counters().cm_retries, 1u);
  EXPECT_EQ(b().device_counters().cm_dup_req_rcvd, 1u);
  EXPECT_EQ(b().device_counters().cm_mra_sent, 2u);
  EXPECT_EQ(a().device_counters().cm_dup_mra_rcvd, 1u);
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kMraReqRcvd);
}

TEST_F(CmTest, ReqToAnUnknownServiceIsRejected) {
  b().cm().Listen({.service_id = kService + 1}).IgnoreError();
  const CmId aid = *a().cm().Connect(ConnectParams(), Now());
  Settle();
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kRejected});
  EXPECT_EQ(aev[0].reason, protocol::cm_rej_reason::kInvalidServiceId);
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kIdle);
  EXPECT_EQ(State(a(), ea_.qpn), QpState::kErr);
  EXPECT_TRUE(Events(b()).empty());
  EXPECT_EQ(b().device_counters().cm_rej_sent, 1u);
  EXPECT_EQ(b().cm().num_ids(), 1u);  // the listener only
  net_.Run();
  EXPECT_EQ(a().device_counters().cm_retries, 0u);
}

TEST_F(CmTest, ConsumerRejectCarriesPrivateData) {
  b().cm().Listen({.service_id = kService}).IgnoreError();
  const CmId aid = *a().cm().Connect(ConnectParams(), Now());
  Settle();
  const CmId bid = Events(b()).at(0).id;
  const std::array<uint8_t, 4> no = {'n', 'o', 'p', 'e'};
  ASSERT_TRUE(
      b().cm()
          .Reject(bid, protocol::cm_rej_reason::kConsumerDefined, no, Now())
          .ok());
  Settle();
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kRejected});
  EXPECT_EQ(aev[0].reason, protocol::cm_rej_reason::kConsumerDefined);
  ASSERT_EQ(aev[0].private_data.size(), protocol::kCmRejPrivateDataSize);
  EXPECT_EQ(
      std::string(aev[0].private_data.begin(), aev[0].private_data.begin() + 4),
      "nope");
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kIdle);
  EXPECT_EQ(CmStateOf(b(), bid), CmState::kIdle);
  EXPECT_EQ(State(a(), ea_.qpn), QpState::kErr);
  // The passive QP was never handed to the CM: untouched.
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kReset);
}

TEST_F(CmTest, PKeyNotInThePeersTableIsDroppedAndCounted) {
  ASSERT_TRUE(a().pkey_table().Set(1, 0x8005).ok());
  b().cm().Listen({.service_id = kService}).IgnoreError();
  CmConnectParams p = ConnectParams();
  p.path.pkey = 0x8005;
  p.max_cm_retries = 2;
  const CmId aid = *a().cm().Connect(p, Now());
  EXPECT_EQ(a().QueryQp(ea_.qpn)->pkey_index, 1);
  net_.Run();
  EXPECT_EQ(Types(Events(a())), std::vector{CmEventType::kUnreachable});
  EXPECT_EQ(CmStateOf(a(), aid), CmState::kIdle);
  EXPECT_EQ(b().device_counters().mad_rx_drop_pkey, 3u);
  EXPECT_EQ(b().device_counters().bad_pkey_cntr, 3u);
  EXPECT_EQ(b().device_counters().cm_req_rcvd, 0u);
  EXPECT_TRUE(Events(b()).empty());

  // A partition A itself does not have is refused before anything is sent.
  p.path.pkey = 0x8007;
  EXPECT_EQ(a().cm().Connect(p, Now()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CmTest, StaleConnectionIsRejectedAndTheOldOneEnded) {
  const Conn c = Establish();
  // A loses its connection without B hearing of it (its DREQs are lost),
  // then reuses the same QP for a new connection.
  net_.drop = [](const WireFrame& f) { return f.dir == 0; };
  ASSERT_TRUE(a().cm().Destroy(c.a, Now()).ok());
  Settle();
  net_.drop = nullptr;
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ASSERT_TRUE(a().ModifyQp(ea_.qpn, reset, qp_attr::kState).ok());
  const CmId again = *a().cm().Connect(ConnectParams(), Now());
  Settle();
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_FALSE(aev.empty());
  EXPECT_EQ(aev[0].type, CmEventType::kRejected);
  EXPECT_EQ(aev[0].id, again);
  EXPECT_EQ(aev[0].reason, protocol::cm_rej_reason::kStaleConnection);
  EXPECT_EQ(b().device_counters().cm_stale_conn, 1u);
  // B ended the old connection: its QP stopped, its DREQ was answered by
  // A (whose destroyed id still sat out its DREQ).
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kErr);
  const std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kDisconnected});
  EXPECT_EQ(bev[0].id, c.b);
  net_.Run();
  EXPECT_EQ(CmStateOf(b(), c.b), CmState::kIdle);
  EXPECT_EQ(CmStateOf(a(), again), CmState::kIdle);
  // Only the new id is left on A (the destroyed one finished quietly).
  EXPECT_EQ(a().cm().num_ids(), 1u);
}

TEST_F(CmTest, SimultaneousDisconnect) {
  const Conn c = Establish();
  ASSERT_TRUE(a().cm().Disconnect(c.a, {}, Now()).ok());
  ASSERT_TRUE(b().cm().Disconnect(c.b, {}, Now()).ok());
  Settle();
  const std::vector<CmEvent> aev = Events(a());
  const std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kDisconnected});
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kDisconnected});
  EXPECT_FALSE(aev[0].timed_out);
  EXPECT_FALSE(bev[0].timed_out);
  EXPECT_EQ(CmStateOf(a(), c.a), CmState::kTimewait);
  EXPECT_EQ(CmStateOf(b(), c.b), CmState::kTimewait);
  EXPECT_EQ(State(a(), ea_.qpn), QpState::kErr);
  EXPECT_EQ(State(b(), eb_.qpn), QpState::kErr);
  net_.Run();
  EXPECT_EQ(Types(Events(a())), std::vector{CmEventType::kTimewaitExit});
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kTimewaitExit});
  EXPECT_EQ(a().device_counters().cm_dreq_sent, 1u);
  EXPECT_EQ(b().device_counters().cm_dreq_sent, 1u);
  EXPECT_EQ(a().device_counters().cm_retries + b().device_counters().cm_retries,
            0u);
  // Each DREQ crossed the other: each side's DREP found it in TimeWait, a
  // duplicate (as Linux counts it), not a message in the wrong state.
  EXPECT_EQ(a().device_counters().cm_dup_drep_rcvd, 1u);
  EXPECT_EQ(b().device_counters().cm_dup_drep_rcvd, 1u);
  EXPECT_EQ(a().device_counters().cm_rx_wrong_state +
                b().device_counters().cm_rx_wrong_state,
            0u);
}

TEST_F(CmTest, LostDrepIsResentForTheDuplicateDreq) {
  const Conn c = Establish();
  DropFirst(1, kDrep);
  ASSERT_TRUE(a().cm().Disconnect(c.a, {}, Now()).ok());
  Settle();
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kDisconnected});
  EXPECT_TRUE(Events(a()).empty());
  ASSERT_TRUE(RunUntilEvent(a()));
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kDisconnected});
  EXPECT_FALSE(aev[0].timed_out);
  EXPECT_EQ(a().device_counters().cm_retries, 1u);
  EXPECT_EQ(b().device_counters().cm_dup_dreq_rcvd, 1u);
  // B's TimeWait (2.1 s) ended before A's DREQ retry (6.4 s): B answers
  // the DREQ of a connection it no longer holds, so A is not left to time
  // out.
  EXPECT_EQ(CmStateOf(b(), c.b), CmState::kIdle);
  EXPECT_EQ(b().device_counters().cm_drep_sent, 2u);
  EXPECT_EQ(CountAttr(1, kDrep), 2u);
  EXPECT_EQ(CountAttr(0, kDreq), 2u);
}

TEST_F(CmTest, DuplicateReqAfterEstablishIsIgnored) {
  const Conn c = Establish();
  // Replay A's REQ (a late copy from the network).
  const WireFrame* req = nullptr;
  for (const auto& f : net_.log()) {
    if (AttrOf(*f) == kReq) req = f.get();
  }
  ASSERT_NE(req, nullptr);
  const std::vector<uint8_t> copy = req->bytes;
  net_.Inject(1, copy);
  Settle();
  EXPECT_EQ(b().device_counters().cm_dup_req_rcvd, 1u);
  EXPECT_EQ(b().device_counters().cm_rej_sent, 0u);
  EXPECT_TRUE(Events(b()).empty());
  EXPECT_EQ(CmStateOf(b(), c.b), CmState::kEstablished);
  EXPECT_EQ(WriteAToB(64, 1), WcStatus::kSuccess);
}

// rdma_cm over IP: the REQ carries the IP header, the listener is matched
// on the service ID and, when bound, on the destination address; the
// consumer sees the header decoded and the 56 bytes after it.
TEST_F(CmTest, RdmaCmIpServiceMatchesOnAddress) {
  CmListenParams l;
  l.service_id = kRdmaTcp7174;
  l.bound_addr = GidFromIpv4(10, 0, 0, 99);  // not B's address
  const CmId elsewhere = *b().cm().Listen(l);
  l.bound_addr = b().config().gid;
  const CmId bound = *b().cm().Listen(l);
  CmConnectParams p = ConnectParams();
  p.service_id = kRdmaTcp7174;
  protocol::CmIpHeader ip;
  ip.src_addr = a().config().gid;
  ip.dst_addr = b().config().gid;
  ip.src_port = 40000;
  p.ip = ip;
  ASSERT_TRUE(a().cm().Connect(p, Now()).ok());
  Settle();
  std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kReqReceived});
  EXPECT_EQ(bev[0].listen_id, bound);
  EXPECT_NE(bev[0].listen_id, elsewhere);
  ASSERT_TRUE(bev[0].ip.has_value());
  EXPECT_EQ(*bev[0].ip, ip);
  ASSERT_EQ(bev[0].private_data.size(), protocol::kRdmaCmReqPrivateDataSize);
  EXPECT_EQ(
      std::string(bev[0].private_data.begin(), bev[0].private_data.begin() + 5),
      "hello");
  ASSERT_TRUE(b().cm().Accept(bev[0].id, AcceptParams(), Now()).ok());
  Settle();
  EXPECT_EQ(Types(Events(b())), std::vector{CmEventType::kEstablished});

  // The same service without the IP header: rdma_cm refuses it (REJ 28).
  ASSERT_TRUE(a().cm().Destroy(Events(a()).at(0).id, Now()).ok());
  net_.Run();
  Events(a());
  Events(b());
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ASSERT_TRUE(a().ModifyQp(ea_.qpn, reset, qp_attr::kState).ok());
  p.ip.reset();
  ASSERT_TRUE(a().cm().Connect(p, Now()).ok());
  Settle();
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kRejected});
  EXPECT_EQ(aev[0].reason, protocol::cm_rej_reason::kConsumerDefined);
  EXPECT_TRUE(Events(b()).empty());
}

TEST_F(CmTest, SidrResolvesAUdService) {
  ConnectOptions o;
  o.type = QpType::kUd;
  Endpoint ud;
  ASSERT_TRUE(SetupEndpoint(b(), o, &ud).ok());
  const uint64_t udp_service =
      protocol::IpServiceId(protocol::RdmaPortSpace::kUdp, 7174);
  b().cm().Listen({.service_id = udp_service}).IgnoreError();
  CmSidrQueryParams q;
  q.service_id = udp_service;
  q.path = PathTo(b());
  protocol::CmIpHeader ip;
  ip.src_addr = a().config().gid;
  ip.dst_addr = b().config().gid;
  ip.src_port = 4000;
  q.ip = ip;
  q.private_data = {1, 2, 3};
  const CmId aid = *a().cm().SidrQuery(q, Now());
  Settle();
  std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(Types(bev), std::vector{CmEventType::kSidrReqReceived});
  ASSERT_TRUE(bev[0].ip.has_value());
  EXPECT_EQ(bev[0].ip->src_port, 4000);
  EXPECT_EQ(bev[0].private_data.at(2), 3);
  CmSidrReplyParams r;
  r.qpn = ud.qpn;
  r.qkey = 0x11111111;
  ASSERT_TRUE(b().cm().SidrReply(bev[0].id, r).ok());
  Settle();
  std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kSidrRepReceived});
  EXPECT_EQ(aev[0].id, aid);
  EXPECT_EQ(aev[0].sidr_status, protocol::cm_sidr_status::kValid);
  EXPECT_EQ(aev[0].sidr_qpn, ud.qpn);
  EXPECT_EQ(aev[0].sidr_qkey, 0x11111111u);

  // An unknown service: status 1, no event on B.
  q.service_id = udp_service + 1;
  ASSERT_TRUE(a().cm().SidrQuery(q, Now()).ok());
  Settle();
  aev = Events(a());
  ASSERT_EQ(Types(aev), std::vector{CmEventType::kSidrRepReceived});
  EXPECT_EQ(aev[0].sidr_status,
            protocol::cm_sidr_status::kServiceIdNotSupported);
  EXPECT_TRUE(Events(b()).empty());
  EXPECT_EQ(b().device_counters().cm_sidr_rep_sent, 2u);
}

// Frames to QP1 that are not CM messages for us: dropped and counted, or
// answered with the MAD error status where the spec asks for one.
TEST_F(CmTest, BadMadsAreCountedAndNeverReachTheCm) {
  b().cm().Listen({.service_id = kService + 5}).IgnoreError();
  ASSERT_TRUE(a().cm().Connect(ConnectParams(), Now()).ok());
  // Keep A's REQ (B rejects it: no listener for kService).
  Settle();
  const WireFrame* req = nullptr;
  for (const auto& f : net_.log()) {
    if (AttrOf(*f) == kReq) req = f.get();
  }
  ASSERT_NE(req, nullptr);
  const uint64_t req_rcvd = b().device_counters().cm_req_rcvd;
  auto inject = [&](auto edit) {
    protocol::FrameSpec spec = protocol::SpecFromParsed(req->parsed);
    std::array<uint8_t, protocol::kMadSize + 8> mad{};
    std::memcpy(mad.data(), req->parsed.payload.data(), protocol::kMadSize);
    size_t mad_len = protocol::kMadSize;
    edit(spec, mad.data(), &mad_len);
    std::vector<uint8_t> frame(2048);
    const size_t n = protocol::BuildRoceFrame(
        spec, std::span<const uint8_t>(mad.data(), mad_len), frame);
    ASSERT_GT(n, 0u);
    frame.resize(n);
    net_.Inject(1, frame);
  };
  const DeviceCounters& cb = b().device_counters();
  inject([](protocol::FrameSpec&, uint8_t* m, size_t*) { m[0] = 2; });
  EXPECT_EQ(cb.mad_rx_drop_bad_version, 1u);
  inject([](protocol::FrameSpec& s, uint8_t*, size_t*) {
    s.hdr.deth.qkey = 0x12345678;
  });
  EXPECT_EQ(cb.mad_rx_drop_qkey, 1u);
  EXPECT_EQ(cb.qkey_viol_cntr, 1u);
  inject([](protocol::FrameSpec&, uint8_t*, size_t* len) { *len = 200; });
  EXPECT_EQ(cb.mad_rx_drop_malformed, 1u);
  // A CM MAD of class version 1 (a Send: nothing to answer).
  inject([](protocol::FrameSpec&, uint8_t* m, size_t*) { m[2] = 1; });
  EXPECT_EQ(cb.mad_rx_drop_unsupported, 1u);
  // A Get of a class nobody serves here (PerfMgt): GetResp, status 1.
  inject([](protocol::FrameSpec&, uint8_t* m, size_t*) {
    m[1] = protocol::mgmt_class::kPerfMgt;
    m[2] = 1;
    m[3] = protocol::mad_method::kGet;
  });
  EXPECT_EQ(cb.mad_err_resp_sent, 1u);
  EXPECT_EQ(cb.cm_req_rcvd, req_rcvd);
  Settle();
  const WireFrame& resp = *net_.log().back();
  ASSERT_EQ(resp.dir, 1);
  ASSERT_EQ(resp.parsed.hdr.bth.dest_qp, protocol::kGsiQpn);
  protocol::MadHeader h;
  ASSERT_TRUE(protocol::ParseMadHeader(resp.parsed.payload, &h));
  EXPECT_EQ(h.mgmt_class, protocol::mgmt_class::kPerfMgt);
  EXPECT_EQ(h.method, protocol::mad_method::kGetResp);
  EXPECT_EQ(h.status, protocol::mad_status::kBadVersion);
  protocol::MadHeader req_hdr;
  ASSERT_TRUE(protocol::ParseMadHeader(req->parsed.payload, &req_hdr));
  EXPECT_EQ(h.tid, req_hdr.tid);
  EXPECT_EQ(cb.rx_unknown_qp, 0u);
}

}  // namespace
}  // namespace rocemu::nic::testing
