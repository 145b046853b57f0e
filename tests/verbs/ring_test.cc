// The shared-memory ring and the wire codec on their own: ordering,
// full/empty, wrap-around, arming, and refusal of broken peers and
// malformed messages.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "verbs/wire/ring_slots.h"
#include "verbs/wire/shm_ring.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs {
namespace {

struct Item {
  uint64_t seq;
  uint64_t pad[7];
};

TEST(ShmRing, FifoFullEmptyAndWrap) {
  absl::StatusOr<ShmRing> p = ShmRing::Create("t", sizeof(Item), 5);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->capacity(), 8u);
  absl::StatusOr<ShmRing> c = ShmRing::Attach(dup(p->fd()), sizeof(Item), 8);
  ASSERT_TRUE(c.ok()) << c.status();
  uint64_t next_in = 0, next_out = 0;
  Item it{};
  // 5 rounds of fill-to-full then drain move the indices past the
  // capacity several times.
  for (int round = 0; round < 5; ++round) {
    EXPECT_EQ(c->Pop(&it), RingResult::kEmpty);
    for (int i = 0; i < 8; ++i) {
      it.seq = next_in++;
      ASSERT_EQ(p->Push(it), RingResult::kOk);
    }
    it.seq = 999;
    EXPECT_EQ(p->Push(it), RingResult::kFull);
    EXPECT_EQ(p->FreeSlots(), 0u);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(c->Pop(&it), RingResult::kOk);
      EXPECT_EQ(it.seq, next_out++);
    }
    EXPECT_EQ(p->FreeSlots(), 8u);
  }
}

TEST(ShmRing, CorruptPeerIndicesAreDetected) {
  absl::StatusOr<ShmRing> p = ShmRing::Create("t", sizeof(Item), 4);
  ASSERT_TRUE(p.ok());
  absl::StatusOr<ShmRing> c = ShmRing::Attach(dup(p->fd()), sizeof(Item), 4);
  ASSERT_TRUE(c.ok());
  // A hostile producer claims 100 entries in a 4-entry ring.
  auto* hdr = static_cast<RingHeader*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd(), 0));
  ASSERT_NE(hdr, MAP_FAILED);
  hdr->head.store(100);
  Item it;
  EXPECT_EQ(c->Pop(&it), RingResult::kCorrupt);
  // A hostile consumer claims to have consumed entries never produced.
  hdr->head.store(0);
  hdr->tail.store(50);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p->Push(it), RingResult::kOk);
  EXPECT_EQ(p->Push(it), RingResult::kCorrupt);
  munmap(hdr, 4096);
}

TEST(ShmRing, AttachRefusesWhatIsNotASealedRing) {
  // Unsealed file.
  const int fd = memfd_create("plain", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  EXPECT_FALSE(ShmRing::Attach(fd, 64, 8).ok());
  // A ring of another slot size, or larger than allowed.
  absl::StatusOr<ShmRing> p = ShmRing::Create("t", 64, 16);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(ShmRing::Attach(dup(p->fd()), 128, 16).ok());
  EXPECT_FALSE(ShmRing::Attach(dup(p->fd()), 64, 8).ok());
  EXPECT_TRUE(ShmRing::Attach(dup(p->fd()), 64, 16).ok());
  // Its seals forbid shrinking it under the peer's mapping.
  EXPECT_NE(ftruncate(p->fd(), 0), 0);
}

TEST(ShmRing, ArmSignalsOncePerArmAndHonoursSolicitedOnly) {
  absl::StatusOr<ShmRing> p = ShmRing::Create("t", sizeof(Item), 4);
  ASSERT_TRUE(p.ok());
  absl::StatusOr<ShmRing> c = ShmRing::Attach(dup(p->fd()), sizeof(Item), 4);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(p->TakeArm(true));  // nobody waits: no signal
  c->Arm(ArmMode::kNext);
  EXPECT_TRUE(p->TakeArm(false));
  EXPECT_FALSE(p->TakeArm(false));  // consumed
  EXPECT_EQ(c->signals(), 1u);
  c->Arm(ArmMode::kSolicited);
  EXPECT_FALSE(p->TakeArm(false));  // unsolicited: stays armed
  EXPECT_TRUE(c->armed());
  EXPECT_TRUE(p->TakeArm(true));
  EXPECT_EQ(c->signals(), 2u);
}

TEST(ShmRing, CrossesProcessesWithEventFdWakeUp) {
  absl::StatusOr<ShmRing> ring = ShmRing::Create("t", sizeof(Item), 64);
  ASSERT_TRUE(ring.ok());
  absl::StatusOr<EventFd> ev = EventFd::Create();
  ASSERT_TRUE(ev.ok());
  constexpr uint64_t kCount = 10000;
  const pid_t pid = fork();
  if (pid == 0) {
    absl::StatusOr<ShmRing> c =
        ShmRing::Attach(dup(ring->fd()), sizeof(Item), 64);
    if (!c.ok()) _exit(1);
    Item it;
    for (uint64_t want = 0; want < kCount;) {
      c->Arm(ArmMode::kNext);
      const RingResult r = c->Pop(&it);
      if (r == RingResult::kOk) {
        if (it.seq != want) _exit(2);
        ++want;
      } else if (r == RingResult::kEmpty) {
        ev->Wait(5000);
      } else {
        _exit(3);
      }
    }
    _exit(0);
  }
  Item it{};
  uint64_t signals = 0;
  for (uint64_t i = 0; i < kCount;) {
    it.seq = i;
    if (ring->Push(it) == RingResult::kOk) {
      ++i;
      if (ring->TakeArm(false)) {
        ev->Signal();
        ++signals;
      }
    }
  }
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ring->signals(), signals);
}

TEST(WireProtocol, RoundTripAndStrictLengths) {
  uint8_t buf[wire::kMaxMessage];
  wire::RegMrReq r{1, 2, 3, 4, 5};
  const size_t n = wire::EncodeRequest(wire::MsgType::kRegMr, 77, r, buf);
  ASSERT_EQ(n, sizeof(wire::MsgHeader) + sizeof(r));
  uint32_t seq;
  uint16_t type;
  absl::StatusOr<wire::DecodedRequest> d =
      wire::DecodeRequest({buf, n}, &seq, &type);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->type, wire::MsgType::kRegMr);
  EXPECT_EQ(d->seq, 77u);
  const auto back = wire::BodyAs<wire::RegMrReq>(d->body);
  EXPECT_EQ(back.iova, 3u);
  EXPECT_EQ(back.offset, 5u);
  // Every truncation and one byte too many are refused.
  for (size_t len = 0; len < n; ++len) {
    EXPECT_FALSE(wire::DecodeRequest({buf, len}, &seq, &type).ok()) << len;
  }
  buf[n] = 0;
  EXPECT_FALSE(wire::DecodeRequest({buf, n + 1}, &seq, &type).ok());
  // A reply is not a request.
  auto* h = reinterpret_cast<wire::MsgHeader*>(buf);
  h->type |= wire::kReplyFlag;
  EXPECT_FALSE(wire::DecodeRequest({buf, n}, &seq, &type).ok());
}

TEST(WireProtocol, ReplyMustAnswerItsRequest) {
  uint8_t buf[wire::kMaxMessage];
  const wire::HandleResp body{9, 0};
  size_t n = wire::EncodeReply(static_cast<uint16_t>(wire::MsgType::kAllocPd),
                               3, 0, "", &body, sizeof(body), buf);
  absl::StatusOr<wire::DecodedReply> r =
      wire::DecodeReply({buf, n}, wire::MsgType::kAllocPd, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(wire::BodyAs<wire::HandleResp>(r->body).handle, 9u);
  EXPECT_FALSE(wire::DecodeReply({buf, n}, wire::MsgType::kAllocPd, 4).ok());
  EXPECT_FALSE(wire::DecodeReply({buf, n}, wire::MsgType::kCreateAh, 3).ok());
  EXPECT_FALSE(
      wire::DecodeReply({buf, n - 1}, wire::MsgType::kAllocPd, 3).ok());
  // An error reply carries no body and its message.
  n = wire::EncodeReply(static_cast<uint16_t>(wire::MsgType::kAllocPd), 3,
                        ENOMEM, "PD limit", &body, sizeof(body), buf);
  r = wire::DecodeReply({buf, n}, wire::MsgType::kAllocPd, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->error, ENOMEM);
  EXPECT_STREQ(r->message, "PD limit");
  EXPECT_TRUE(r->body.empty());
}

TEST(RingSlots, InvalidSlotsAreRefused) {
  SqSlot s{};
  nic::SendWr wr;
  s.opcode = 2;
  s.num_sge = 1;
  s.sge[0] = {0x1000, 64, 0x105};
  ASSERT_TRUE(SqSlotToSendWr(s, &wr));
  EXPECT_EQ(wr.sg_list.size(), 1u);
  EXPECT_EQ(wr.sg_list[0].lkey, 0x105u);
  s.num_sge = nic::kMaxSge + 1;
  EXPECT_FALSE(SqSlotToSendWr(s, &wr));
  s.num_sge = 1;
  s.opcode = 200;
  EXPECT_FALSE(SqSlotToSendWr(s, &wr));
  s.opcode = 2;
  s.send_flags = nic::send_flags::kInline;
  s.inline_len = nic::kMaxInlineData + 1;
  EXPECT_FALSE(SqSlotToSendWr(s, &wr));
  RqSlot r{};
  nic::RecvWr rwr;
  r.num_sge = 1000;
  EXPECT_FALSE(RqSlotToRecvWr(r, &rwr));
}

// IBTA 1.5 requests in a slot: ATOMIC WRITE's value in `swap`, FLUSH's
// length in `compare_add` and its placement type | level << 8 in `swap`;
// the opcodes between them and SEND_WITH_INV (TSO, DRIVER1) are refused.
TEST(RingSlots, AtomicWriteAndFlush) {
  SqSlot s{};
  nic::SendWr wr;
  s.opcode = static_cast<uint8_t>(nic::WrOpcode::kAtomicWrite);
  s.remote_addr = 0x7000;
  s.rkey = 0x42;
  s.swap = 0x1122334455667788;
  ASSERT_TRUE(SqSlotToSendWr(s, &wr));
  EXPECT_EQ(wr.opcode, nic::WrOpcode::kAtomicWrite);
  EXPECT_EQ(wr.rdma.remote_addr, 0x7000u);
  EXPECT_EQ(wr.rdma.rkey, 0x42u);
  EXPECT_EQ(wr.atomic.swap, 0x1122334455667788u);
  EXPECT_TRUE(wr.sg_list.empty());
  s.opcode = static_cast<uint8_t>(nic::WrOpcode::kFlush);
  s.compare_add = 4096;
  s.swap = 1 | 1 << 8;
  ASSERT_TRUE(SqSlotToSendWr(s, &wr));
  EXPECT_EQ(wr.flush.length, 4096u);
  EXPECT_EQ(wr.flush.type, 1);
  EXPECT_EQ(wr.flush.level, 1);
  s.compare_add = uint64_t{1} << 32;  // more than a RETH can say
  EXPECT_FALSE(SqSlotToSendWr(s, &wr));
  for (uint8_t op : {10, 11, 12, 13, 16}) {
    s.opcode = op;
    EXPECT_FALSE(SqSlotToSendWr(s, &wr)) << int{op};
  }
}

TEST(RingSlots, CopiesOnlyTheUsedPartOfASlot) {
  // The source is a heap slot of exactly the slot's size, so that a copy
  // reading past it trips the sanitizer build.
  auto src = std::make_unique<SqSlot>();
  std::memset(src.get(), 0x11, sizeof(SqSlot));
  src->send_flags = 0;
  src->num_sge = 2;
  SqSlot out;
  std::memset(&out, 0xEE, sizeof(out));
  CopySqSlot(src.get(), &out);
  EXPECT_EQ(out.wr_id, src->wr_id);
  EXPECT_EQ(out.remote_srqn, src->remote_srqn);
  EXPECT_EQ(std::memcmp(out.sge, src->sge, 2 * sizeof(WireSge)), 0);
  EXPECT_EQ(out.sge[2].lkey, 0xEEEEEEEEu);
  // BIND_MW: no SGEs, but sge[0].lkey names the region.
  src->num_sge = 0;
  std::memset(&out, 0xEE, sizeof(out));
  CopySqSlot(src.get(), &out);
  EXPECT_EQ(out.sge[0].lkey, src->sge[0].lkey);
  EXPECT_EQ(out.sge[1].lkey, 0xEEEEEEEEu);
  // Inline: the payload's length, whatever num_sge says.
  src->send_flags = nic::send_flags::kInline;
  src->inline_len = 100;
  src->num_sge = 0;
  std::memset(&out, 0xEE, sizeof(out));
  CopySqSlot(src.get(), &out);
  EXPECT_EQ(std::memcmp(out.inline_data, src->inline_data, 100), 0);
  EXPECT_EQ(out.inline_data[100], 0xEE);
  // Counts beyond the slot's capacity copy the capacity, and the
  // conversion then refuses the slot.
  src->inline_len = 100000;
  CopySqSlot(src.get(), &out);
  EXPECT_EQ(std::memcmp(out.inline_data, src->inline_data, nic::kMaxInlineData),
            0);
  nic::SendWr wr;
  src->opcode = 0;
  out.opcode = 0;
  EXPECT_FALSE(SqSlotToSendWr(out, &wr));
  src->send_flags = 0;
  src->num_sge = 255;
  CopySqSlot(src.get(), &out);
  EXPECT_EQ(out.sge[nic::kMaxSge - 1].lkey, src->sge[nic::kMaxSge - 1].lkey);
  EXPECT_FALSE(SqSlotToSendWr(out, &wr));

  auto rsrc = std::make_unique<RqSlot>();
  std::memset(rsrc.get(), 0x22, sizeof(RqSlot));
  rsrc->num_sge = 3;
  RqSlot rout;
  std::memset(&rout, 0xEE, sizeof(rout));
  CopyRqSlot(rsrc.get(), &rout);
  EXPECT_EQ(rout.wr_id, rsrc->wr_id);
  EXPECT_EQ(std::memcmp(rout.sge, rsrc->sge, 3 * sizeof(WireSge)), 0);
  EXPECT_EQ(rout.sge[3].lkey, 0xEEEEEEEEu);
  // One SGE (the fixed-size copy), and none.
  rsrc->num_sge = 1;
  std::memset(&rout, 0xEE, sizeof(rout));
  CopyRqSlot(rsrc.get(), &rout);
  EXPECT_EQ(std::memcmp(&rout.sge[0], &rsrc->sge[0], sizeof(WireSge)), 0);
  EXPECT_EQ(rout.sge[1].lkey, 0xEEEEEEEEu);
  rsrc->num_sge = 0;
  std::memset(&rout, 0xEE, sizeof(rout));
  CopyRqSlot(rsrc.get(), &rout);
  EXPECT_EQ(rout.num_sge, 0u);
  EXPECT_EQ(rout.sge[0].lkey, 0xEEEEEEEEu);
  rsrc->num_sge = 1000;
  CopyRqSlot(rsrc.get(), &rout);
  EXPECT_EQ(rout.sge[nic::kMaxSge - 1].lkey, rsrc->sge[nic::kMaxSge - 1].lkey);
  nic::RecvWr rwr;
  EXPECT_FALSE(RqSlotToRecvWr(rout, &rwr));
}

}  // namespace
}  // namespace rocemu::verbs
