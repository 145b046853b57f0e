// Issue 36 in the engines: every reason class is produced by a crafted or
// disturbed frame, and then checked where it must show: the frame's
// verdict (reason, action, arguments and words), the per-reason counter
// (and the mlx5/rxe counter it agrees with), the NAK or retransmission
// naming the frame behind it by packet id, the QP's error cause, the error
// completion's note and the flight recorder.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "nic/frame_verdict.h"
#include "nic/qp_why.h"
#include "protocol/frame.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;
using R = DropReason;

// `bytes` rebuilt with `edit` applied to its headers and `payload_len`
// bytes of payload (the original's, cut or zero-extended), ICRC and all.
std::vector<uint8_t> Rebuild(
    const std::vector<uint8_t>& bytes,
    const std::function<void(protocol::FrameSpec&)>& edit,
    int payload_len = -1) {
  protocol::ParsedFrame p;
  EXPECT_EQ(protocol::ParseFrame(bytes, &p), protocol::ParseError::kOk);
  protocol::FrameSpec spec = protocol::SpecFromParsed(p);
  edit(spec);
  std::vector<uint8_t> payload(p.payload.begin(), p.payload.end());
  if (payload_len >= 0) payload.resize(static_cast<size_t>(payload_len));
  std::vector<uint8_t> out(9216);
  protocol::BuildError err = protocol::BuildError::kOk;
  out.resize(protocol::BuildRoceFrame(spec, payload, out, &err));
  EXPECT_EQ(err, protocol::BuildError::kOk);
  return out;
}

const FrameVerdict& VerdictOf(const Rnic& nic, uint64_t id) {
  static const FrameVerdict kNone;
  const FrameVerdict* v = nic.verdicts().Find(id);
  EXPECT_NE(v, nullptr) << "no verdict for packet " << id;
  return v != nullptr ? *v : kNone;
}

std::vector<ErrorNote> Notes(Rnic& nic) {
  std::vector<ErrorNote> out;
  nic.TakeErrorNotes([&](const ErrorNote& n) { out.push_back(n); });
  return out;
}

// The reasons counted on `nic` other than `except`, by name (a test
// checks that nothing else moved).
std::string OtherReasons(const Rnic& nic, std::initializer_list<R> except) {
  std::string s;
  for (size_t i = 1; i < kDropReasonCount; ++i) {
    const R r = static_cast<R>(i);
    if (std::find(except.begin(), except.end(), r) != except.end()) continue;
    if (nic.reason_counters()[r] != 0) {
      s += std::string(DropReasonName(r)) + "=" +
           std::to_string(nic.reason_counters()[r]) + " ";
    }
  }
  return s;
}

TEST(VerdictTest, ReasonTableIsConsistent) {
  EXPECT_EQ(std::string_view(DropReasonName(R::kNone)), "none");
  EXPECT_EQ(std::string_view(DropReasonName(R::kRkeyBounds)), "rkey_bounds");
  for (size_t i = 0; i < kDropReasonCount; ++i) {
    const R r = static_cast<R>(i);
    EXPECT_EQ(DropReasonByName(DropReasonName(r)), r);
    EXPECT_EQ(DropReasonByCode(static_cast<uint32_t>(i)), r);
    EXPECT_FALSE(std::string_view(DropReasonText(r)).empty());
  }
  EXPECT_EQ(DropReasonByName("no_such_reason"), std::nullopt);
  EXPECT_EQ(DropReasonByCode(kDropReasonCount), std::nullopt);
}

TEST(VerdictTest, BadIcrcMalformedAndUnknownQpnAreDroppedWithTheirReason) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 64)).ok());
  net.Run();
  std::vector<uint8_t> good = net.Frames(0)[0]->bytes;

  std::vector<uint8_t> bad_icrc = good;
  bad_icrc.back() ^= 0x40;
  const uint64_t id1 = net.Inject(1, bad_icrc);
  const FrameVerdict& v1 = VerdictOf(net.b(), id1);
  EXPECT_EQ(v1.reason, R::kBadIcrc);
  EXPECT_EQ(v1.action, VerdictAction::kDropped);
  EXPECT_NE(DescribeVerdict(v1).find("ICRC"), std::string::npos)
      << DescribeVerdict(v1);

  std::vector<uint8_t> cut(good.begin(), good.begin() + 50);
  const uint64_t id2 = net.Inject(1, cut);
  EXPECT_EQ(VerdictOf(net.b(), id2).reason, R::kMalformed);
  EXPECT_NE(DescribeVerdict(VerdictOf(net.b(), id2)).find("malformed header"),
            std::string::npos);

  std::vector<uint8_t> other =
      Rebuild(good, [](protocol::FrameSpec& s) { s.hdr.bth.dest_qp = 0x777; });
  const uint64_t id3 = net.Inject(1, other);
  EXPECT_EQ(VerdictOf(net.b(), id3).reason, R::kUnknownQpn);
  EXPECT_EQ(DescribeVerdict(VerdictOf(net.b(), id3)),
            "dropped: no QP 0x000777");

  const DeviceCounters c = net.b().QueryCounters();
  const DropReasonCounters& r = net.b().reason_counters();
  EXPECT_EQ(r[R::kBadIcrc], 1u);
  EXPECT_EQ(r[R::kBadIcrc], c.rx_icrc_encapsulated);
  EXPECT_EQ(r[R::kMalformed], 1u);
  EXPECT_EQ(r[R::kMalformed] + r[R::kIpChecksum], c.rx_malformed);
  EXPECT_EQ(r[R::kUnknownQpn], 1u);
  EXPECT_EQ(r[R::kUnknownQpn], c.rx_unknown_qp);
  EXPECT_EQ(OtherReasons(net.b(), {R::kBadIcrc, R::kMalformed, R::kUnknownQpn}),
            "");
}

TEST(VerdictTest, PkeyMismatchNamesBothKeys) {
  BackToBack net;
  Pair p = Connect(net);
  net.rewrite = [](const WireFrame& f, std::vector<uint8_t>& b) {
    if (f.dir == 0) {
      b = Rebuild(b, [](protocol::FrameSpec& s) { s.hdr.bth.pkey = 0x8001; });
    }
  };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 64)).ok());
  net.RunUntil(net.clock().Now() + 1'000'000);
  const WireFrame* f = net.Frames(0)[0];
  const FrameVerdict& v = VerdictOf(net.b(), f->rx_id);
  EXPECT_EQ(v.reason, R::kBadPkey);
  EXPECT_EQ(v.qpn, p.eb.qpn);
  EXPECT_EQ(DescribeVerdict(v),
            "dropped: P_Key 0x8001 does not match the QP's (index 0: 0xffff)");
  EXPECT_EQ(net.b().reason_counters()[R::kBadPkey], 1u);
  EXPECT_EQ(net.b().QueryCounters().bad_pkey_cntr, 1u);
}

TEST(VerdictTest, RkeyBoundsNakNamesTheRequestAndFailsTheWr) {
  BackToBack net;
  Pair p = Connect(net);
  SendWr wr = WriteWr(p, 7, 4096);
  // 2048 bytes before the end of B's 64 KiB region: half of it outside.
  wr.rdma.remote_addr = Va(p.eb, p.eb.buf.size() - 2048);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  const WireFrame* req = net.Frames(0)[0];
  const WireFrame* nak = net.Frames(1, Opcode::kRcAcknowledge)[0];
  // B: the request's verdict says what was wrong, in numbers and words.
  const FrameVerdict& v = VerdictOf(net.b(), req->rx_id);
  EXPECT_EQ(v.reason, R::kRkeyBounds);
  EXPECT_EQ(v.action, VerdictAction::kNaked);
  EXPECT_EQ(v.args[0], p.eb.key);
  EXPECT_EQ(v.args[1], wr.rdma.remote_addr);
  EXPECT_EQ(v.args[2], 4096u);
  EXPECT_EQ(v.args[3], Va(p.eb, 0));
  EXPECT_EQ(v.args[4], p.eb.buf.size());
  char want[160];
  std::snprintf(want, sizeof(want),
                "NAKed: R_Key 0x%x: VA 0x%lx+4096 outside MR [0x%lx,+65536)",
                p.eb.key, static_cast<unsigned long>(wr.rdma.remote_addr),
                static_cast<unsigned long>(Va(p.eb, 0)));
  EXPECT_EQ(DescribeVerdict(v), want);
  // The NAK names the request it answers.
  const FrameVerdict& n = VerdictOf(net.b(), nak->tx_id);
  EXPECT_EQ(n.cause_id, req->rx_id);
  EXPECT_EQ(n.sent_reason, R::kRkeyBounds);
  EXPECT_NE(DescribeVerdict(n).find("answers packet " +
                                    std::to_string(req->rx_id) + ": R_Key"),
            std::string::npos)
      << DescribeVerdict(n);
  EXPECT_EQ(net.b().GetQp(p.eb.qpn)->error_cause().reason, R::kRkeyBounds);
  EXPECT_EQ(net.b().GetQp(p.eb.qpn)->error_cause().packet_id, req->rx_id);
  // A: the NAK's verdict, the WR's error completion and its note.
  const FrameVerdict& a = VerdictOf(net.a(), nak->rx_id);
  EXPECT_EQ(a.reason, R::kNakRemoteAccess);
  EXPECT_EQ(a.action, VerdictAction::kFailedWr);
  EXPECT_EQ(a.args[2], 7u);  // wr_id
  auto wc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRemAccessErr);
  std::vector<ErrorNote> notes = Notes(net.a());
  ASSERT_EQ(notes.size(), 2u);  // the QP to ERR, then the completion
  EXPECT_TRUE(notes[0].qp_error);
  EXPECT_EQ(notes[0].reason, R::kNakRemoteAccess);
  EXPECT_FALSE(notes[1].qp_error);
  EXPECT_EQ(notes[1].wr_id, 7u);
  EXPECT_EQ(notes[1].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(notes[1].reason, R::kNakRemoteAccess);
  EXPECT_EQ(notes[1].cause_id, nak->rx_id);
  EXPECT_EQ(net.a().reason_counters()[R::kNakRemoteAccess], 1u);
  EXPECT_EQ(net.b().reason_counters()[R::kRkeyBounds], 1u);
  EXPECT_EQ(net.b().QueryCounters().resp_remote_access_errors, 1u);
  // The rest of the message finds B's QP in ERR.
  EXPECT_EQ(net.b().reason_counters()[R::kQpState], 3u);
  EXPECT_EQ(OtherReasons(net.b(), {R::kRkeyBounds, R::kQpState}), "");
}

TEST(VerdictTest, SequenceNakAndRetransmissionsNameTheirCause) {
  BackToBack net;
  Pair p = Connect(net);
  Fill(p.ea.buf, 0, 5000, 3);
  net.drop = [](const WireFrame& f) { return f.dir == 0 && f.index == 1; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 5000)).ok());
  net.Run();
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 9u);
  // The first frame after the gap (PSN 102) is NAKed, the next two only
  // dropped: one NAK per gap.
  const FrameVerdict& v = VerdictOf(net.b(), req[2]->rx_id);
  EXPECT_EQ(v.reason, R::kPsnSequence);
  EXPECT_EQ(v.action, VerdictAction::kNaked);
  EXPECT_EQ(DescribeVerdict(v),
            "NAKed: PSN out of sequence: expected 0x000065, received "
            "0x000066");
  EXPECT_EQ(VerdictOf(net.b(), req[3]->rx_id).action, VerdictAction::kDropped);
  const WireFrame* nak = net.Frames(1, Opcode::kRcAcknowledge)[0];
  EXPECT_EQ(VerdictOf(net.b(), nak->tx_id).cause_id, req[2]->rx_id);
  // A went back because of that NAK: each resent frame names it.
  EXPECT_EQ(VerdictOf(net.a(), nak->rx_id).reason, R::kNakPsnSequence);
  for (size_t i = 5; i < 9; ++i) {
    const FrameVerdict& r = VerdictOf(net.a(), req[i]->tx_id);
    EXPECT_TRUE(r.resent);
    EXPECT_EQ(r.sent_reason, R::kNakPsnSequence);
    EXPECT_EQ(r.cause_id, nak->rx_id);
  }
  // Counters agree with rxe's.
  const DropReasonCounters& rb = net.b().reason_counters();
  EXPECT_EQ(rb[R::kPsnSequence], net.b().QueryCounters().out_of_sequence);
  EXPECT_EQ(rb[R::kPsnSequence], 3u);
  EXPECT_EQ(net.a().reason_counters()[R::kNakPsnSequence],
            net.a().QueryCounters().rcvd_seq_err);
  EXPECT_EQ(Notes(net.a()).size(), 0u);
}

TEST(VerdictTest, RetryExceededDumpShowsTransmissionsAndMissingAcks) {
  BackToBack net;
  ConnectOptions o;
  o.retry_cnt = 2;
  o.timeout = 8;  // ~1 ms
  Pair p = Connect(net, o);
  // The peer stops answering: nothing from A reaches it.
  net.drop = [](const WireFrame& f) { return f.dir == 0; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 9, 64)).ok());
  net.Run();
  auto sent = net.Frames(0);
  ASSERT_EQ(sent.size(), 3u);  // the first transmission and two retries
  for (size_t i = 1; i < 3; ++i) {
    const FrameVerdict& r = VerdictOf(net.a(), sent[i]->tx_id);
    EXPECT_TRUE(r.resent);
    EXPECT_EQ(r.sent_reason, R::kAckTimeout);
    EXPECT_EQ(r.cause_id, sent[i - 1]->tx_id);  // the one unanswered
  }
  const Qp* qp = net.a().GetQp(p.ea.qpn);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->state(), QpState::kErr);
  EXPECT_EQ(qp->error_cause().reason, R::kRetryExceeded);
  EXPECT_EQ(qp->error_cause().packet_id, sent[2]->tx_id);
  EXPECT_EQ(QpWhyLine(*qp),
            "retry_exceeded: PSN 0x000064 sent 3 times without an ACK "
            "(retry_cnt 2); packet " +
                std::to_string(sent[2]->tx_id));
  const std::string dump = QpWhyReport(*qp, net.a().verdicts());
  // Three transmissions, three timeouts, the state change, the completion.
  size_t tx = 0, timeouts = 0;
  for (size_t at = 0; (at = dump.find("\n  ", at)) != std::string::npos; ++at) {
    const std::string line = dump.substr(at + 1, dump.find('\n', at + 1) - at);
    tx += line.find(" tx ") != std::string::npos;
    timeouts += line.find("-- ACK timeout: no ACK for PSN 0x000064") !=
                std::string::npos;
  }
  EXPECT_EQ(tx, 3u) << dump;
  EXPECT_EQ(timeouts, 3u) << dump;
  EXPECT_NE(dump.find("state RTS -> ERR: retry_exceeded"), std::string::npos)
      << dump;
  EXPECT_NE(dump.find("completion wr_id 0x9 IBV_WC_RETRY_EXC_ERR: "
                      "retry_exceeded (packet " +
                      std::to_string(sent[2]->tx_id) + ")"),
            std::string::npos)
      << dump;
  EXPECT_EQ(net.a().reason_counters()[R::kAckTimeout], 3u);
  EXPECT_EQ(net.a().reason_counters()[R::kAckTimeout],
            net.a().QueryCounters().local_ack_timeout_err);
  EXPECT_EQ(net.a().reason_counters()[R::kRetryExceeded],
            net.a().QueryCounters().retry_exceeded_err);
  // The program that owned it exits: the story stays.
  ASSERT_TRUE(net.a().DestroyQp(p.ea.qpn).ok());
  const QpStory* story = net.a().FindFailedQp(p.ea.qpn);
  ASSERT_NE(story, nullptr);
  EXPECT_TRUE(story->destroyed);
  const std::string after = QpWhyReport(*story, net.a().verdicts());
  EXPECT_NE(after.find("(destroyed)"), std::string::npos) << after;
  EXPECT_EQ(after.substr(after.find('\n')), dump.substr(dump.find('\n')));
  // A QP the application moved to ERR itself is not kept.
  ASSERT_TRUE(net.b().DestroyQp(p.eb.qpn).ok());
  EXPECT_EQ(net.b().FindFailedQp(p.eb.qpn), nullptr);
}

TEST(VerdictTest, ShortReceiveBufferFailsBothSidesWithOneCause) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {5, {SgeOf(p.eb, 0, 64)}}).ok());
  SendWr wr;
  wr.wr_id = 6;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 100)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  const WireFrame* req = net.Frames(0)[0];
  const FrameVerdict& v = VerdictOf(net.b(), req->rx_id);
  EXPECT_EQ(v.reason, R::kRecvTooShort);
  EXPECT_EQ(DescribeVerdict(v),
            "NAKed: message of 100 bytes, the receive WQE's buffers hold 64");
  auto rwc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, WcStatus::kLocLenErr);
  std::vector<ErrorNote> bn = Notes(net.b());
  ASSERT_EQ(bn.size(), 2u);
  EXPECT_EQ(bn[0].wr_id, 5u);
  EXPECT_TRUE(bn[0].recv);
  EXPECT_EQ(bn[0].cause_id, req->rx_id);
  EXPECT_EQ(net.b().reason_counters()[R::kRecvTooShort],
            net.b().QueryCounters().resp_local_length_error);
  auto swc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(swc.size(), 1u);
  EXPECT_EQ(swc[0].status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(net.a().reason_counters()[R::kNakInvalidRequest], 1u);
}

TEST(VerdictTest, RnrRetryExceededAndDuplicates) {
  BackToBack net;
  ConnectOptions o;
  o.rnr_retry = 1;
  Pair p = Connect(net, o);
  SendWr wr;
  wr.wr_id = 3;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 16)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  // Two RNR NAKs: the first retried, the second over rnr_retry 1.
  EXPECT_EQ(net.b().reason_counters()[R::kRnr], 2u);
  EXPECT_EQ(net.b().reason_counters()[R::kRnr],
            net.b().QueryCounters().send_rnr_err);
  EXPECT_EQ(net.a().reason_counters()[R::kNakRnr], 2u);
  EXPECT_EQ(net.a().reason_counters()[R::kNakRnr],
            net.a().QueryCounters().rcvd_rnr_err);
  EXPECT_EQ(net.a().reason_counters()[R::kRnrRetryExceeded], 1u);
  const Qp* qp = net.a().GetQp(p.ea.qpn);
  EXPECT_EQ(qp->error_cause().reason, R::kRnrRetryExceeded);
  auto rnr = net.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_EQ(rnr.size(), 2u);
  EXPECT_EQ(qp->error_cause().packet_id, rnr[1]->rx_id);
  auto resent = net.Frames(0);
  ASSERT_EQ(resent.size(), 2u);
  EXPECT_EQ(VerdictOf(net.a(), resent[1]->tx_id).cause_id, rnr[0]->rx_id);
  EXPECT_EQ(VerdictOf(net.b(), rnr[0]->tx_id).cause_id, resent[0]->rx_id);

  // A duplicate WRITE is answered again, and says so.
  BackToBack net2;
  Pair q = Connect(net2);
  net2.drop = [](const WireFrame& f) { return f.dir == 1 && f.index == 0; };
  ASSERT_TRUE(net2.a().PostSend(q.ea.qpn, WriteWr(q, 1, 64)).ok());
  net2.Run();
  auto w = net2.Frames(0);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(VerdictOf(net2.b(), w[1]->rx_id).reason, R::kDuplicate);
  EXPECT_EQ(VerdictOf(net2.b(), w[1]->rx_id).action, VerdictAction::kAnswered);
  auto acks = net2.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(VerdictOf(net2.b(), acks[1]->tx_id).cause_id, w[1]->rx_id);
  EXPECT_EQ(net2.b().reason_counters()[R::kDuplicate],
            net2.b().QueryCounters().duplicate_request);
}

TEST(VerdictTest, OpcodeSequenceMtuAndLengthErrors) {
  for (int c = 0; c < 3; ++c) {
    BackToBack net;
    Pair p = Connect(net);
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 64)).ok());
    net.Run();
    const std::vector<uint8_t>& good = net.Frames(0)[0]->bytes;
    std::vector<uint8_t> bad;
    R want;
    if (c == 0) {  // a MIDDLE with no FIRST before it
      bad = Rebuild(
          good,
          [](protocol::FrameSpec& s) {
            s.hdr.bth.opcode = Opcode::kRcRdmaWriteMiddle;
            s.hdr.bth.psn = 101;
          },
          1024);
      want = R::kOpcodeSequence;
    } else if (c == 1) {  // 2048 bytes on a 1024-byte path
      bad = Rebuild(
          good, [](protocol::FrameSpec& s) { s.hdr.bth.psn = 101; }, 2048);
      want = R::kMtuExceeded;
    } else {  // a WRITE ONLY whose payload is not the RETH's length
      bad = Rebuild(
          good, [](protocol::FrameSpec& s) { s.hdr.bth.psn = 101; }, 32);
      want = R::kLengthError;
    }
    const uint64_t id = net.Inject(1, bad);
    EXPECT_EQ(VerdictOf(net.b(), id).reason, want) << c;
    EXPECT_EQ(net.b().reason_counters()[want], 1u) << c;
    EXPECT_EQ(net.b().GetQp(p.eb.qpn)->state(), QpState::kErr) << c;
    EXPECT_EQ(OtherReasons(net.b(), {want}), "") << c;
  }
}

TEST(VerdictTest, QkeyQpStateAndCqOverflow) {
  {
    BackToBack net;
    AhHandle ah = 0;
    Pair p = ConnectUd(net, &ah);
    ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 256)}}).ok());
    SendWr wr;
    wr.opcode = WrOpcode::kSend;
    wr.sg_list = {SgeOf(p.ea, 0, 16)};
    wr.ud = {ah, p.eb.qpn, 0x22222222};
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
    net.Run();
    const FrameVerdict& v = VerdictOf(net.b(), net.Frames(0)[0]->rx_id);
    EXPECT_EQ(v.reason, R::kBadQkey);
    EXPECT_EQ(DescribeVerdict(v),
              "dropped: Q_Key 0x22222222, the QP's is 0x11111111");
    EXPECT_EQ(net.b().reason_counters()[R::kBadQkey],
              net.b().QueryCounters().qkey_viol_cntr);
  }
  {
    BackToBack net;
    Pair p = Connect(net);
    QpAttr a;
    a.qp_state = QpState::kErr;
    ASSERT_TRUE(net.b().ModifyQp(p.eb.qpn, a, qp_attr::kState).ok());
    EXPECT_EQ(net.b().reason_counters()[R::kModifyToErr], 1u);
    EXPECT_EQ(net.b().GetQp(p.eb.qpn)->error_cause().reason, R::kModifyToErr);
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 64)).ok());
    net.RunUntil(net.clock().Now() + 100'000);
    const FrameVerdict& v = VerdictOf(net.b(), net.Frames(0)[0]->rx_id);
    EXPECT_EQ(v.reason, R::kQpState);
    EXPECT_EQ(DescribeVerdict(v), "dropped: RC_RDMA_WRITE_ONLY in state ERR");
    EXPECT_EQ(net.b().reason_counters()[R::kQpState],
              net.b().QueryCounters().rx_wrong_state);
  }
  {
    BackToBack net;
    ConnectOptions o;
    o.cq_depth = 1;
    Pair p = Connect(net, o);
    for (uint64_t i = 0; i < 2; ++i) {
      ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, i, 64)).ok());
    }
    net.Run();
    EXPECT_EQ(net.a().reason_counters()[R::kCqOverflow], 1u);
    const Qp* qp = net.a().GetQp(p.ea.qpn);
    EXPECT_EQ(qp->state(), QpState::kErr);
    EXPECT_EQ(QpWhyLine(*qp).rfind("cq_overflow: CQ 0x", 0), 0u)
        << QpWhyLine(*qp);
  }
}

TEST(VerdictTest, NoRecorderStillCountsAndLogs) {
  RnicConfig ca = MakeConfig(1), cb = MakeConfig(2);
  ca.flight_recorder_events = 0;
  cb.flight_recorder_events = 0;
  BackToBack net(ca, cb);
  Pair p = Connect(net);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 64)).ok());
  net.Run();
  EXPECT_EQ(net.a().GetQp(p.ea.qpn)->recorder(), nullptr);
  EXPECT_NE(QpWhyReport(*net.a().GetQp(p.ea.qpn), net.a().verdicts())
                .find("no flight recorder"),
            std::string::npos);
  // Packet ids still go up by one per frame on each side.
  auto f = net.Frames(0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0]->tx_id, 0u);
  EXPECT_EQ(net.Frames(1)[0]->tx_id, f[0]->rx_id + 1);
}

}  // namespace
}  // namespace rocemu::nic::testing
