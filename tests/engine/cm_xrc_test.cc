// XRC connections through the Communication Manager (IBTA annex A14, as
// Linux's ib_cm makes them): A's XRC INI QP connects to a TGT QP of B's XRC
// domain. The REQ offers transport XRC and the REP names the TGT QP in its
// Local EE Context Number; each QP gets the attributes of its half of a
// reliable connection; a SEND then reaches B's XRC SRQ. A REQ for a
// transport the listener does not take is rejected.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "nic/cm/cm_agent.h"
#include "protocol/cm_messages.h"
#include "protocol/mad.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

namespace rej = protocol::cm_rej_reason;
using protocol::cm_attr::kRep;
using protocol::cm_attr::kReq;

constexpr uint64_t kService = 0x1000000000000077ull;

// The CM message of `attr` in direction `dir` (the first one), parsed.
template <typename Msg>
std::optional<Msg> FirstCm(BackToBack& net, int dir, uint16_t attr) {
  for (const auto& f : net.log()) {
    if (f->dir != dir || f->parsed.hdr.bth.dest_qp != protocol::kGsiQpn ||
        f->parsed.payload.size() < protocol::kMadHeaderSize) {
      continue;
    }
    protocol::MadHeader h;
    protocol::ParseMadHeader(f->parsed.payload, &h);
    if (h.attr_id != attr) continue;
    Msg m;
    protocol::ParseCm(f->parsed.payload.subspan(protocol::kMadHeaderSize), &m);
    return m;
  }
  return std::nullopt;
}

class CmXrcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A: the INI QP (a PD, a send CQ, no receive queue) and its buffer.
    ini_.pd = *a().AllocPd();
    ini_.cq = *a().CreateCq(64);
    QpInitAttr ia;
    ia.qp_type = QpType::kXrcIni;
    ia.send_cq = ini_.cq;
    ia.cap = {16, 0, 1, 0, 64};
    ini_.qpn = *a().CreateQp(ini_.pd, ia);
    ini_.buf.assign(4096, 0);
    ini_.key = *a().RegMr(ini_.pd, ini_.buf.data(), ini_.buf.size(),
                          access::kLocalWrite);
    // B: a domain, its TGT QP and an XRC SRQ with its PD, CQ and buffer.
    xrcd_ = *b().AllocXrcd();
    srq_pd_ = *b().AllocPd();
    srq_cq_ = *b().CreateCq(64);
    srq_buf_.assign(4096, 0);
    srq_key_ = *b().RegMr(srq_pd_, srq_buf_.data(), srq_buf_.size(),
                          access::kLocalWrite);
    srq_ = *b().CreateXrcSrq(srq_pd_, xrcd_, srq_cq_, {16, 1, 0});
    srqn_ = *b().GetSrqNum(srq_);
    QpInitAttr ta;
    ta.qp_type = QpType::kXrcTgt;
    ta.xrcd = xrcd_;
    tgt_ = *b().CreateQp(kInvalidHandle, ta);
  }

  Rnic& a() { return net_.a(); }
  Rnic& b() { return net_.b(); }
  TimeNs Now() { return net_.clock().Now(); }
  void Settle() { net_.RunUntil(Now()); }

  CmConnectParams Connect(uint32_t qpn) {
    CmConnectParams p;
    p.service_id = kService;
    p.qpn = qpn;
    p.path.dgid = b().config().gid;
    p.path.dmac = b().config().mac;
    p.responder_resources = 4;
    p.initiator_depth = 4;
    p.retry_count = 6;
    p.rnr_retry_count = 5;
    p.srq = true;  // ignored for an INI QP: it has no responder
    return p;
  }
  static std::vector<CmEvent> Events(Rnic& nic) {
    std::vector<CmEvent> out;
    CmEvent ev;
    while (nic.cm().PollEvent(&ev)) out.push_back(ev);
    return out;
  }

  BackToBack net_;
  Endpoint ini_;
  XrcdHandle xrcd_ = 0;
  PdHandle srq_pd_ = 0;
  CqHandle srq_cq_ = 0;
  SrqHandle srq_ = 0;
  uint32_t srqn_ = 0;
  std::vector<uint8_t> srq_buf_;
  uint32_t srq_key_ = 0;
  uint32_t tgt_ = 0;
};

TEST_F(CmXrcTest, IniConnectsToTgtAndSendsToTheSrq) {
  const CmId listen =
      *b().cm().Listen({.service_id = kService, .qp_type = QpType::kXrcTgt});
  absl::StatusOr<CmId> aid = a().cm().Connect(Connect(ini_.qpn), Now());
  ASSERT_TRUE(aid.ok()) << aid.status();
  Settle();

  // The REQ as Linux's CM formats an XRC INI QP's.
  const std::optional<protocol::CmReq> req =
      FirstCm<protocol::CmReq>(net_, 0, kReq);
  ASSERT_TRUE(req.has_value());
  EXPECT_EQ(req->transport, protocol::cm_transport::kExtended);
  EXPECT_EQ(req->extended_transport, protocol::cm_extended_transport::kXrc);
  EXPECT_EQ(req->local_qpn, ini_.qpn);
  EXPECT_EQ(req->initiator_depth, 4);
  EXPECT_EQ(req->responder_resources, 0);
  EXPECT_EQ(req->retry_count, 0);
  EXPECT_EQ(req->rnr_retry_count, 0);
  EXPECT_FALSE(req->srq);

  std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(bev.size(), 1u);
  EXPECT_EQ(bev[0].type, CmEventType::kReqReceived);
  EXPECT_EQ(bev[0].listen_id, listen);
  EXPECT_EQ(bev[0].qp_type, QpType::kXrcTgt);
  EXPECT_EQ(bev[0].remote_qpn, ini_.qpn);
  const CmId bid = bev[0].id;

  // Each half's attributes: the TGT QP has no requester, the INI QP no
  // responder.
  absl::StatusOr<std::pair<QpAttr, QpAttrMask>> rts =
      b().cm().InitQpAttr(bid, QpState::kRts);
  ASSERT_TRUE(rts.ok()) << rts.status();
  EXPECT_EQ(rts->second, qp_attr::kState | qp_attr::kSqPsn | qp_attr::kTimeout);
  absl::StatusOr<std::pair<QpAttr, QpAttrMask>> rtr =
      b().cm().InitQpAttr(bid, QpState::kRtr);
  ASSERT_TRUE(rtr.ok()) << rtr.status();
  EXPECT_NE(rtr->second & qp_attr::kMaxDestRdAtomic, 0u);
  EXPECT_EQ(rtr->first.dest_qp_num, ini_.qpn);

  // The REP carries the SRQ number as rdma_xserver sends it.
  CmAcceptParams acc;
  acc.qpn = tgt_;
  acc.responder_resources = 4;
  acc.initiator_depth = 4;
  acc.private_data = {
      static_cast<uint8_t>(srqn_ >> 24), static_cast<uint8_t>(srqn_ >> 16),
      static_cast<uint8_t>(srqn_ >> 8), static_cast<uint8_t>(srqn_)};
  absl::Status s = b().cm().Accept(bid, acc, Now());
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(b().GetQp(tgt_)->state(), QpState::kRtr);
  Settle();

  const std::optional<protocol::CmRep> rep =
      FirstCm<protocol::CmRep>(net_, 1, kRep);
  ASSERT_TRUE(rep.has_value());
  EXPECT_EQ(rep->local_eecn, tgt_);
  EXPECT_EQ(rep->local_qpn, 0u);
  EXPECT_TRUE(rep->srq);

  std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(aev.size(), 2u);
  EXPECT_EQ(aev[0].type, CmEventType::kRepReceived);
  EXPECT_EQ(aev[0].remote_qpn, tgt_);
  EXPECT_EQ(aev[0].qp_type, QpType::kXrcIni);
  ASSERT_GE(aev[0].private_data.size(), 4u);
  const uint32_t got_srqn = uint32_t{aev[0].private_data[0]} << 24 |
                            uint32_t{aev[0].private_data[1]} << 16 |
                            uint32_t{aev[0].private_data[2]} << 8 |
                            aev[0].private_data[3];
  EXPECT_EQ(got_srqn, srqn_);
  EXPECT_EQ(aev[1].type, CmEventType::kEstablished);
  bev = Events(b());
  ASSERT_EQ(bev.size(), 1u);
  EXPECT_EQ(bev[0].type, CmEventType::kEstablished);

  // The CM moved both QPs with their attributes: INI to RTS towards the
  // TGT QP with its requester's retry counts, the TGT QP to RTS on the RTU.
  absl::StatusOr<QpAttr> ia = a().QueryQp(ini_.qpn);
  ASSERT_TRUE(ia.ok());
  EXPECT_EQ(ia->qp_state, QpState::kRts);
  EXPECT_EQ(ia->dest_qp_num, tgt_);
  EXPECT_EQ(ia->retry_cnt, 6);
  EXPECT_EQ(ia->rnr_retry, 7);  // the REP's, as accepted
  absl::StatusOr<QpAttr> ta = b().QueryQp(tgt_);
  ASSERT_TRUE(ta.ok());
  EXPECT_EQ(ta->qp_state, QpState::kRts);
  EXPECT_EQ(ta->dest_qp_num, ini_.qpn);

  // A SEND from the INI QP lands in the SRQ the REP named.
  ASSERT_TRUE(
      b().PostSrqRecv(srq_, {5,
                             {Sge{reinterpret_cast<uint64_t>(srq_buf_.data()),
                                  64, srq_key_}}})
          .ok());
  std::memcpy(ini_.buf.data(), "xrc through the cm", 18);
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.remote_srqn = got_srqn;
  wr.sg_list = {SgeOf(ini_, 0, 18)};
  ASSERT_TRUE(a().PostSend(ini_.qpn, wr).ok());
  net_.RunUntil(Now() + 1'000'000'000);
  const std::vector<WorkCompletion> awc = Poll(a(), ini_.cq);
  ASSERT_EQ(awc.size(), 1u);
  EXPECT_EQ(awc[0].status, WcStatus::kSuccess);
  const std::vector<WorkCompletion> bwc = Poll(b(), srq_cq_);
  ASSERT_EQ(bwc.size(), 1u);
  EXPECT_EQ(bwc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(bwc[0].byte_len, 18u);
  EXPECT_EQ(std::memcmp(srq_buf_.data(), "xrc through the cm", 18), 0);
}

TEST_F(CmXrcTest, XrcReqToAnRcListenerIsRejected) {
  b().cm()
      .Listen({.service_id = kService, .qp_type = QpType::kRc})
      .IgnoreError();
  const CmId aid = *a().cm().Connect(Connect(ini_.qpn), Now());
  Settle();
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(aev.size(), 1u);
  EXPECT_EQ(aev[0].type, CmEventType::kRejected);
  EXPECT_EQ(aev[0].reason, rej::kInvalidTransportType);
  EXPECT_EQ(a().cm().Query(aid)->state, CmState::kIdle);
  EXPECT_EQ(a().GetQp(ini_.qpn)->state(), QpState::kErr);
  EXPECT_TRUE(Events(b()).empty());
  EXPECT_EQ(b().cm().num_ids(), 1u);  // the listener only
  EXPECT_EQ(b().device_counters().cm_rej_sent, 1u);
}

TEST_F(CmXrcTest, RcReqToAnXrcListenerIsRejected) {
  Endpoint rc;
  ASSERT_TRUE(SetupEndpoint(a(), ConnectOptions{}, &rc).ok());
  b().cm()
      .Listen({.service_id = kService, .qp_type = QpType::kXrcTgt})
      .IgnoreError();
  (void)*a().cm().Connect(Connect(rc.qpn), Now());
  Settle();
  const std::vector<CmEvent> aev = Events(a());
  ASSERT_EQ(aev.size(), 1u);
  EXPECT_EQ(aev[0].type, CmEventType::kRejected);
  EXPECT_EQ(aev[0].reason, rej::kInvalidTransportType);
  EXPECT_TRUE(Events(b()).empty());
  EXPECT_EQ(b().cm().num_ids(), 1u);
}

TEST_F(CmXrcTest, AnXrcReqIsNotAcceptedOntoAnRcQp) {
  Endpoint rc;
  ASSERT_TRUE(SetupEndpoint(b(), ConnectOptions{}, &rc).ok());
  // A listener of no QP type (ib_cm's) takes the REQ; the QP must fit it.
  b().cm().Listen({.service_id = kService}).IgnoreError();
  (void)*a().cm().Connect(Connect(ini_.qpn), Now());
  Settle();
  const std::vector<CmEvent> bev = Events(b());
  ASSERT_EQ(bev.size(), 1u);
  CmAcceptParams acc;
  acc.qpn = rc.qpn;
  EXPECT_EQ(b().cm().Accept(bev[0].id, acc, Now()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b().GetQp(rc.qpn)->state(), QpState::kReset);
  acc.qpn = tgt_;
  EXPECT_TRUE(b().cm().Accept(bev[0].id, acc, Now()).ok());
}

TEST_F(CmXrcTest, ATgtQpCannotSendTheReq) {
  // The TGT QP is the passive side's: no REQ offers one.
  CmConnectParams p = Connect(0);
  p.path.dgid = a().config().gid;
  p.path.dmac = a().config().mac;
  p.qpn = tgt_;
  EXPECT_EQ(b().cm().Connect(p, Now()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b().cm().num_ids(), 0u);
}

}  // namespace
}  // namespace rocemu::nic::testing
