#include "protocol/frame.h"

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/checksum.h"
#include "protocol/opcode.h"
#include "tests/protocol/test_util.h"

namespace rocemu::protocol {
namespace {

using testing::TestNet;

// Sets every header field the opcode carries to a distinct non-default value
// derived from the opcode, and leaves the others at their defaults (which is
// what the parser reports for headers that are absent).
TransportHeaders HeadersFor(uint8_t opcode) {
  const OpcodeInfo& info = GetOpcodeInfo(opcode);
  const uint32_t k = opcode + 1u;
  TransportHeaders h;
  h.bth = {.opcode = opcode,
           .se = (k & 1) != 0,
           .mig_req = (k & 2) != 0,
           .tver = 0,
           .pkey = static_cast<uint16_t>(0x8000 | k),
           .fecn = (k & 4) != 0,
           .becn = (k & 8) != 0,
           .dest_qp = 0xA00000 | k,
           .ack_req = (k & 16) != 0,
           .psn = 0xFFFFF0 + (k & 0xF)};
  if (info.Has(kExtReth)) {
    h.reth = {.va = 0x0102030405060708ull * k,
              .rkey = 0xDEAD0000 | k,
              .dma_len = 0x10000 + k};
  }
  if (info.Has(kExtAeth)) h.aeth = {.syndrome = Aeth::RnrNak(k), .msn = k};
  if (info.Has(kExtDeth)) h.deth = {.qkey = 0x80010000 | k, .src_qp = k};
  if (info.Has(kExtAtomicEth)) {
    h.atomic = {.va = 0x1000 * k,
                .rkey = 7 * k,
                .swap_add = ~uint64_t{k},
                .compare = uint64_t{k} << 40};
  }
  if (info.Has(kExtAtomicAckEth)) h.atomic_ack = {.orig = 0xFEEDull << k % 40};
  if (info.Has(kExtImmDt)) h.imm = 0x11223344 ^ k;
  if (info.Has(kExtIeth)) h.ieth_rkey = 0x55667788 ^ k;
  if (info.Has(kExtXrceth)) {
    h.xrceth = {.srqn = 0xC00000 | k, .resv8 = static_cast<uint8_t>(k)};
  }
  if (info.Has(kExtFeth)) {
    h.feth = {.placement_type = static_cast<uint8_t>(k & 0xF),
              .selectivity_level = static_cast<uint8_t>(k & 3),
              .reserved = k};
  }
  return h;
}

// Checked at compile time (constexpr) and at run time (word compares).
static_assert(IsIpv4Mapped(Ipv4Mapped(10, 0, 0, 1)));
static_assert(!IsIpv4Mapped(IpAddr{0xfe, 0x80}));

TEST(FrameTest, Ipv4MappedFormIsExact) {
  const IpAddr mapped = Ipv4Mapped(192, 0, 2, 7);
  EXPECT_TRUE(IsIpv4Mapped(mapped));
  EXPECT_TRUE(IsIpv4Mapped(Ipv4Mapped(0, 0, 0, 0)));
  for (size_t i = 0; i < 12; ++i) {
    IpAddr a = mapped;
    a[i] ^= 0x01;  // any other byte before the IPv4 address breaks the form
    EXPECT_FALSE(IsIpv4Mapped(a)) << i;
  }
  IpAddr a = mapped;
  a[15] = 0xFF;  // the IPv4 address itself is free
  EXPECT_TRUE(IsIpv4Mapped(a));
  EXPECT_FALSE(IsIpv4Mapped(IpAddr{}));
}

TEST(FrameTest, RoundTripEveryOpcode) {
  int built = 0;
  for (int code = 0; code < 256; ++code) {
    const OpcodeInfo& info = GetOpcodeInfo(static_cast<uint8_t>(code));
    if (!info.supported) continue;
    for (bool ipv6 : {false, true}) {
      for (bool vlan : {false, true}) {
        std::vector<size_t> lengths = {0};
        if (info.payload) lengths = {0, 1, 2, 3, 4, 5, 6, 7, 256, 1021};
        for (size_t len : lengths) {
          SCOPED_TRACE(
              std::string(info.name) + " ipv6=" + std::to_string(ipv6) +
              " vlan=" + std::to_string(vlan) + " len=" + std::to_string(len));
          FrameSpec spec;
          spec.net = TestNet(ipv6, vlan);
          spec.net.udp_checksum =
              ipv6 ? UdpChecksumMode::kCompute : UdpChecksumMode::kZero;
          spec.hdr = HeadersFor(static_cast<uint8_t>(code));
          std::vector<uint8_t> payload(len);
          for (size_t i = 0; i < len; ++i) payload[i] = uint8_t(code + i * 13);
          std::vector<uint8_t> frame(
              RoceFrameLength(spec.net, static_cast<uint8_t>(code), len) + 8,
              0xEE);
          BuildError e;
          const size_t n = BuildRoceFrame(spec, payload, frame, &e);
          ASSERT_EQ(e, BuildError::kOk);
          ASSERT_EQ(n, frame.size() - 8);
          EXPECT_EQ(frame[n], 0xEE) << "wrote past the frame";
          frame.resize(n);
          EXPECT_EQ(n % 2, 0u);
          const size_t pad = (4 - len % 4) % 4;
          EXPECT_EQ(n, (vlan ? 18u : 14u) + (ipv6 ? 40u : 20u) + 8u +
                           info.header_len + len + pad + 4u);

          ParsedFrame p;
          ASSERT_EQ(ParseFrame(frame, &p), ParseError::kOk);
          EXPECT_EQ(p.kind, FrameKind::kRoce);
          EXPECT_EQ(p.op, &GetOpcodeInfo(static_cast<uint8_t>(code)));
          EXPECT_EQ(p.net, spec.net);
          TransportHeaders expected = spec.hdr;
          expected.bth.pad_cnt = static_cast<uint8_t>(pad);
          EXPECT_EQ(p.hdr, expected);
          EXPECT_EQ(std::vector<uint8_t>(p.payload.begin(), p.payload.end()),
                    payload);
          EXPECT_EQ(p.ethertype, ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4);

          // Re-encoding what was parsed gives the same bytes.
          std::vector<uint8_t> again(n);
          EXPECT_EQ(BuildRoceFrame(SpecFromParsed(p), p.payload, again), n);
          EXPECT_EQ(again, frame);
          ++built;
        }
      }
    }
  }
  // 63 supported opcodes (RC 25, UC 12, UD 2, CNP, XRC 23); 12 carry no
  // payload (RC and XRC read request, ACK, atomic ACK, CAS, FADD; FLUSH,
  // CNP).
  EXPECT_EQ(built, (63 - 12) * 10 * 4 + 12 * 4);
}

// XRC requests, byte by byte: the XRCETH (8 reserved bits, the 24-bit XRC
// SRQ number) right after the BTH, before the RETH or the AtomicETH; an XRC
// response has none.
TEST(FrameTest, XrcethLayout) {
  constexpr size_t kBth = 14 + 20 + 8;  // Ethernet, IPv4, UDP
  const auto be32 = [](const std::vector<uint8_t>& f, size_t at) {
    return uint32_t{f[at]} << 24 | uint32_t{f[at + 1]} << 16 |
           uint32_t{f[at + 2]} << 8 | f[at + 3];
  };
  FrameSpec spec;
  spec.net = TestNet(false, false);
  spec.hdr.bth.opcode = kXrcSendFirst + kRcRdmaWriteOnlyWithImmediate;
  spec.hdr.xrceth.srqn = 0xABCDEF;
  spec.hdr.reth = {.va = 0x1122334455667788, .rkey = 0x99AA, .dma_len = 3};
  spec.hdr.imm = 0x01020304;
  const uint8_t payload[3] = {7, 8, 9};
  std::vector<uint8_t> f(RoceFrameLength(spec.net, spec.hdr.bth.opcode, 3));
  ASSERT_EQ(BuildRoceFrame(spec, payload, f), f.size());
  EXPECT_EQ(f.size(), kBth + 12 + 4 + 16 + 4 + 3 + 1 + 4);
  EXPECT_EQ(f[kBth], 0xAB);
  EXPECT_EQ(be32(f, kBth + 12), 0x00ABCDEFu);
  EXPECT_EQ(be32(f, kBth + 16), 0x11223344u);
  EXPECT_EQ(be32(f, kBth + 24), 0x99AAu);
  EXPECT_EQ(be32(f, kBth + 32), 0x01020304u);
  EXPECT_EQ(f[kBth + 36], 7);
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(f, &p), ParseError::kOk);
  EXPECT_EQ(p.op->service, ServiceType::kXrc);
  EXPECT_EQ(p.hdr.xrceth.srqn, 0xABCDEFu);
  EXPECT_EQ(p.hdr.reth, spec.hdr.reth);
  EXPECT_EQ(p.hdr.imm, spec.hdr.imm);

  spec.hdr.bth.opcode = kXrcCmpSwap;
  spec.hdr.atomic = {.va = 0x1000, .rkey = 5, .swap_add = 6, .compare = 7};
  f.assign(RoceFrameLength(spec.net, kXrcCmpSwap, 0), 0);
  ASSERT_EQ(BuildRoceFrame(spec, {}, f), f.size());
  EXPECT_EQ(be32(f, kBth + 12), 0x00ABCDEFu);
  EXPECT_EQ(be32(f, kBth + 20), 0x1000u);  // AtomicETH VA after the XRCETH
  ASSERT_EQ(ParseFrame(f, &p), ParseError::kOk);
  EXPECT_EQ(p.hdr.atomic, spec.hdr.atomic);

  // XRC_ACKNOWLEDGE: BTH + AETH only.
  spec.hdr.bth.opcode = kXrcAcknowledge;
  spec.hdr.aeth = {.syndrome = 0x1F, .msn = 0x123456};
  f.assign(RoceFrameLength(spec.net, kXrcAcknowledge, 0), 0);
  ASSERT_EQ(BuildRoceFrame(spec, {}, f), f.size());
  EXPECT_EQ(f.size(), kBth + 12 + 4 + 4);
  EXPECT_EQ(be32(f, kBth + 12), 0x1F123456u);
}

// IBTA 1.5's two requests, byte by byte: FLUSH is BTH, FETH (placement type
// in bits 3..0, selectivity level in bits 5..4), RETH; ATOMIC WRITE is BTH,
// RETH and the 8 bytes to store.
TEST(FrameTest, FlushAndAtomicWriteLayouts) {
  constexpr size_t kBth = 14 + 20 + 8;  // Ethernet, IPv4, UDP
  const auto be32 = [](const std::vector<uint8_t>& f, size_t at) {
    return uint32_t{f[at]} << 24 | uint32_t{f[at + 1]} << 16 |
           uint32_t{f[at + 2]} << 8 | f[at + 3];
  };
  FrameSpec spec;
  spec.net = TestNet(false, false);
  spec.hdr.bth.opcode = kRcFlush;
  spec.hdr.bth.psn = 9;
  spec.hdr.feth = {.placement_type = feth::kGlobal | feth::kPersistent,
                   .selectivity_level = feth::kMemoryRegion};
  spec.hdr.reth = {.va = 0x1122334455667788, .rkey = 0xABCD, .dma_len = 4096};
  std::vector<uint8_t> f(RoceFrameLength(spec.net, kRcFlush, 0));
  ASSERT_EQ(BuildRoceFrame(spec, {}, f), f.size());
  EXPECT_EQ(f.size(), kBth + 12 + 4 + 16 + 4);
  EXPECT_EQ(f[kBth], 0x1C);
  EXPECT_EQ(be32(f, kBth + 12), 0x13u);  // SEL 1, PLT 3
  EXPECT_EQ(be32(f, kBth + 16), 0x11223344u);
  EXPECT_EQ(be32(f, kBth + 20), 0x55667788u);
  EXPECT_EQ(be32(f, kBth + 24), 0xABCDu);
  EXPECT_EQ(be32(f, kBth + 28), 4096u);
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(f, &p), ParseError::kOk);
  EXPECT_EQ(p.op->operation, Operation::kFlush);
  EXPECT_EQ(p.hdr.feth, spec.hdr.feth);
  EXPECT_EQ(p.hdr.reth, spec.hdr.reth);

  spec.hdr.bth.opcode = kRcAtomicWrite;
  spec.hdr.reth.dma_len = 8;
  const uint8_t value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  f.assign(RoceFrameLength(spec.net, kRcAtomicWrite, 8), 0);
  ASSERT_EQ(BuildRoceFrame(spec, value, f), f.size());
  EXPECT_EQ(f.size(), kBth + 12 + 16 + 8 + 4);
  EXPECT_EQ(f[kBth], 0x1D);
  EXPECT_EQ(be32(f, kBth + 12), 0x11223344u);  // RETH right after the BTH
  EXPECT_EQ(be32(f, kBth + 24), 8u);
  EXPECT_EQ(std::vector<uint8_t>(f.begin() + kBth + 28, f.begin() + kBth + 36),
            std::vector<uint8_t>(value, value + 8));
  ASSERT_EQ(ParseFrame(f, &p), ParseError::kOk);
  EXPECT_EQ(p.op->operation, Operation::kAtomicWrite);
  EXPECT_EQ(p.payload.size(), 8u);
}

TEST(FrameTest, TwoPhaseWriterFillsPayloadInPlace) {
  FrameSpec spec;
  spec.net = TestNet(true, false);
  spec.hdr.bth.opcode = kRcRdmaWriteOnly;
  spec.hdr.reth.dma_len = 10;
  std::vector<uint8_t> buf(200);
  RoceFrameWriter w;
  ASSERT_EQ(w.Begin(spec, 10, buf), BuildError::kOk);
  ASSERT_EQ(w.payload().size(), 10u);
  for (size_t i = 0; i < 6; ++i) w.payload()[i] = 0xA0 + i;   // segment 1
  for (size_t i = 6; i < 10; ++i) w.payload()[i] = 0xB0 + i;  // segment 2
  const size_t n = w.Finish();
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(std::span(buf).first(n), &p), ParseError::kOk);
  EXPECT_EQ(p.hdr.bth.pad_cnt, 2);
  EXPECT_EQ(p.payload[5], 0xA5);
  EXPECT_EQ(p.payload[9], 0xB9);
  // kAuto computes the UDP checksum on IPv6.
  EXPECT_NE(p.udp_checksum, 0);
}

TEST(FrameTest, UdpChecksumModes) {
  for (bool ipv6 : {false, true}) {
    for (UdpChecksumMode mode : {UdpChecksumMode::kAuto, UdpChecksumMode::kZero,
                                 UdpChecksumMode::kCompute}) {
      FrameSpec spec;
      spec.net = TestNet(ipv6, false);
      spec.net.udp_checksum = mode;
      spec.hdr.bth.opcode = kUdSendOnly;
      const std::vector<uint8_t> payload(40, 0x5A);
      std::vector<uint8_t> frame(256);
      frame.resize(BuildRoceFrame(spec, payload, frame));
      ParsedFrame p;
      ASSERT_EQ(ParseFrame(frame, &p), ParseError::kOk);
      const bool computed = mode == UdpChecksumMode::kCompute ||
                            (mode == UdpChecksumMode::kAuto && ipv6);
      EXPECT_EQ(p.udp_checksum != 0, computed);
      if (computed) {
        const size_t l3 = 14, ip = ipv6 ? 40 : 20;
        EXPECT_TRUE(
            UdpChecksumOk(&frame[l3], ipv6, std::span(frame).subspan(l3 + ip)));
      }
    }
  }
}

TEST(FrameTest, BuildErrors) {
  FrameSpec spec;
  spec.net = TestNet(false, false);
  std::vector<uint8_t> out(100);
  const std::vector<uint8_t> payload(8);
  BuildError e;
  spec.hdr.bth.opcode = 0x80;
  EXPECT_EQ(BuildRoceFrame(spec, payload, out, &e), 0u);
  EXPECT_EQ(e, BuildError::kUnknownOpcode);
  spec.hdr.bth.opcode = kRcAcknowledge;
  EXPECT_EQ(BuildRoceFrame(spec, payload, out, &e), 0u);
  EXPECT_EQ(e, BuildError::kPayloadNotAllowed);
  spec.hdr.bth.opcode = kRcSendOnly;
  EXPECT_EQ(BuildRoceFrame(spec, std::vector<uint8_t>(60), out, &e), 0u);
  EXPECT_EQ(e, BuildError::kBufferTooSmall);
  std::vector<uint8_t> big(70000);
  EXPECT_EQ(BuildRoceFrame(spec, std::span(big).first(65500), big, &e), 0u);
  EXPECT_EQ(e, BuildError::kPayloadTooLarge);
  std::set<std::string_view> names;
  for (BuildError b :
       {BuildError::kOk, BuildError::kBufferTooSmall,
        BuildError::kUnknownOpcode, BuildError::kPayloadNotAllowed,
        BuildError::kPayloadTooLarge}) {
    names.insert(BuildErrorName(b));
  }
  EXPECT_EQ(names.size(), 5u);
  EXPECT_EQ(BuildErrorName(BuildError::kBufferTooSmall), "buffer_too_small");
}

TEST(FrameTest, NonRoceFramesAreClassified) {
  struct Case {
    uint16_t ethertype;
    uint8_t ip_protocol;
    uint16_t udp_port;
    FrameKind kind;
  };
  const Case cases[] = {
      {kEtherTypeArp, 0, 0, FrameKind::kArp},
      {kEtherTypeIpv4, kIpProtoIcmp, 0, FrameKind::kIcmpV4},
      {kEtherTypeIpv4, 6, 0, FrameKind::kOtherIpv4},
      {kEtherTypeIpv4, kIpProtoUdp, 53, FrameKind::kOtherIpv4},
      {kEtherTypeIpv6, kIpProtoIcmpV6, 0, FrameKind::kIcmpV6},
      {kEtherTypeIpv6, kIpProtoUdp, 4792, FrameKind::kOtherIpv6},
      {kEtherTypeIpv6, 0 /* hop-by-hop */, 0, FrameKind::kOtherIpv6},
      {0x88CC /* LLDP */, 0, 0, FrameKind::kOther},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> f(100, 0);
    f[12] = c.ethertype >> 8;
    f[13] = c.ethertype & 0xFF;
    if (c.ethertype == kEtherTypeIpv4) {
      f[14] = 0x45;
      f[16] = 0;
      f[17] = 86;
      f[23] = c.ip_protocol;
      f[14 + 22] = c.udp_port >> 8;
      f[14 + 23] = c.udp_port & 0xFF;
      const uint16_t ck = Ipv4HeaderChecksum(std::span(f).subspan(14, 20));
      f[24] = ck >> 8;
      f[25] = ck & 0xFF;
    } else if (c.ethertype == kEtherTypeIpv6) {
      f[14] = 0x60;
      f[19] = 46;
      f[20] = c.ip_protocol;
      f[14 + 42] = c.udp_port >> 8;
      f[14 + 43] = c.udp_port & 0xFF;
    }
    ParsedFrame p;
    EXPECT_EQ(ParseFrame(f, &p), ParseError::kOk) << FrameKindName(c.kind);
    EXPECT_EQ(p.kind, c.kind) << FrameKindName(c.kind);
    EXPECT_EQ(p.ethertype, c.ethertype);
  }
}

TEST(FrameTest, ShortFrameMayCarryEthernetPadding) {
  FrameSpec spec;
  spec.net = TestNet(false, false);
  spec.hdr.bth.opcode = kRcSendOnly;
  std::vector<uint8_t> frame(60, 0);
  const size_t n = BuildRoceFrame(spec, {}, frame);
  ASSERT_EQ(n, 58u);
  ParsedFrame p;
  EXPECT_EQ(ParseFrame(frame, &p), ParseError::kOk);  // 2 bytes of padding
  EXPECT_TRUE(p.payload.empty());
}

TEST(FrameTest, StatusOrWrapper) {
  FrameSpec spec;
  spec.net = TestNet(false, false);
  spec.hdr.bth.opcode = kRcSendOnly;
  std::vector<uint8_t> frame(100);
  frame.resize(BuildRoceFrame(spec, std::vector<uint8_t>(4, 1), frame));
  auto ok = ParseFrameOrStatus(frame);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->payload.size(), 4u);
  frame.back() ^= 1;
  auto bad = ParseFrameOrStatus(frame);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("bad_icrc"),
            std::string::npos);
}

// --- One frame per ParseError -------------------------------------------

std::vector<uint8_t> Roce(bool ipv6, uint8_t opcode, size_t payload_len,
                          UdpChecksumMode mode = UdpChecksumMode::kAuto,
                          uint8_t tver = 0) {
  FrameSpec spec;
  spec.net = TestNet(ipv6, false);
  spec.net.udp_checksum = mode;
  spec.hdr = HeadersFor(opcode);
  spec.hdr.bth.tver = tver;
  std::vector<uint8_t> f(RoceFrameLength(spec.net, opcode, payload_len));
  BuildError e;
  EXPECT_EQ(
      BuildRoceFrame(spec, std::vector<uint8_t>(payload_len, 0x42), f, &e),
      f.size());
  EXPECT_EQ(e, BuildError::kOk);
  return f;
}

void FixIpv4Checksum(std::vector<uint8_t>& f) {
  const size_t ihl = (f[14] & 0xF) * 4u;
  f[24] = f[25] = 0;
  const uint16_t ck = Ipv4HeaderChecksum(std::span(f).subspan(14, ihl));
  f[24] = ck >> 8;
  f[25] = ck & 0xFF;
}

constexpr size_t kBth4 = 14 + 20 + 8;  // BTH offset, untagged IPv4

struct NegativeCase {
  ParseError error;
  std::function<std::vector<uint8_t>()> make;
};

std::vector<NegativeCase> NegativeCases() {
  return {
      {ParseError::kTooShort,
       [] { return Roce(false, kRcSendOnly, 4); }},  // truncated below
      {ParseError::kBadIpVersion,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[14] = 0x55;
         return f;
       }},
      {ParseError::kBadIhl,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[14] = 0x44;
         return f;
       }},
      {ParseError::kIpOptions,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f.insert(f.begin() + 34, {0x01, 0x01, 0x01, 0x00});  // NOP NOP NOP EOL
         f[14] = 0x46;
         f[17] += 4;
         FixIpv4Checksum(f);
         return f;
       }},
      {ParseError::kIpFragment,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[20] = 0x20;  // MF, offset 0
         FixIpv4Checksum(f);
         return f;
       }},
      {ParseError::kIpReservedFlag,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[20] |= 0x80;  // reserved flag, DF kept
         FixIpv4Checksum(f);
         return f;
       }},
      {ParseError::kIpLengthMismatch,
       [] {
         auto f = Roce(false, kRcSendOnly, 40);
         f.push_back(0);  // a trailer on a frame longer than 60 bytes
         return f;
       }},
      {ParseError::kBadIpChecksum,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[25] ^= 0x01;
         return f;
       }},
      {ParseError::kUdpLengthMismatch,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[14 + 20 + 5] -= 4;
         return f;
       }},
      {ParseError::kBadUdpChecksum,
       [] {
         auto f = Roce(true, kRcSendOnly, 4, UdpChecksumMode::kCompute);
         f[14 + 40 + 7] ^= 0x01;
         return f;
       }},
      {ParseError::kBadTver,
       [] { return Roce(false, kRcSendOnly, 4, UdpChecksumMode::kAuto, 1); }},
      {ParseError::kUnknownOpcode,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[kBth4] = 0x80;
         return f;
       }},
      {ParseError::kUnsupportedOpcode,
       [] { return Roce(false, 0x44 /* RD_SEND_ONLY */, 4); }},
      {ParseError::kHeadersDoNotFit,
       [] {
         auto f = Roce(false, kRcSendOnly, 0);
         f[kBth4] = kRcRdmaWriteOnly;  // needs a RETH that is not there
         return f;
       }},
      {ParseError::kPayloadNotAllowed,
       [] {
         auto f = Roce(false, kRcSendOnly, 16);
         f[kBth4] = kRcAcknowledge;
         return f;
       }},
      {ParseError::kBadPad,
       [] {
         auto f = Roce(false, kRcSendOnly, 0);
         f[kBth4 + 1] |= 0x10;  // PadCnt 1 with no payload
         return f;
       }},
      {ParseError::kBadIcrc,
       [] {
         auto f = Roce(false, kRcSendOnly, 4);
         f[kBth4 + 12] ^= 0x01;
         return f;
       }},
      {ParseError::kBadMacControl,
       [] {
         std::vector<uint8_t> f(64);
         EXPECT_EQ(BuildPfcFrame({2, 0, 0, 0, 0, 1}, {.enable_vector = 8}, f),
                   60u);
         f[16] = 0x01;  // reserved high octet of the enable vector
         return f;
       }},
  };
}

TEST(FrameTest, EveryParseErrorHasANegativeCase) {
  std::set<ParseError> covered;
  std::set<std::string_view> names;
  for (const NegativeCase& c : NegativeCases()) {
    std::vector<uint8_t> f = c.make();
    if (c.error == ParseError::kTooShort) f.resize(14 + 19);  // inside IP
    ParsedFrame p;
    EXPECT_EQ(ParseFrame(f, &p), c.error)
        << "expected " << ParseErrorName(c.error);
    covered.insert(c.error);
    names.insert(ParseErrorName(c.error));
  }
  EXPECT_EQ(covered.size(), static_cast<size_t>(kParseErrorCount - 1));
  EXPECT_EQ(covered.count(ParseError::kOk), 0u);
  EXPECT_EQ(names.size(), covered.size());
  for (std::string_view n : names) {
    for (char ch : n) EXPECT_TRUE((ch >= 'a' && ch <= 'z') || ch == '_') << n;
  }
}

TEST(FrameTest, VerificationCanBeSwitchedOff) {
  auto f = Roce(false, kRcSendOnly, 4);
  f[25] ^= 1;     // IP checksum
  f.back() ^= 1;  // ICRC
  ParsedFrame p;
  EXPECT_EQ(
      ParseFrame(f, &p, {.verify_icrc = false, .verify_ip_checksum = false}),
      ParseError::kOk);
  EXPECT_EQ(ParseFrame(f, &p, {.verify_icrc = false}),
            ParseError::kBadIpChecksum);
}

TEST(FrameTest, EveryTruncationIsRejectedNotCrashed) {
  for (bool ipv6 : {false, true}) {
    const auto f = Roce(ipv6, kRcRdmaWriteOnlyWithImmediate, 9);
    for (size_t n = 0; n < f.size(); ++n) {
      ParsedFrame p;
      EXPECT_NE(ParseFrame(std::span(f).first(n), &p), ParseError::kOk) << n;
    }
  }
}

// Deterministic byte mutations of valid frames: whatever the verdict, the
// parser's view stays inside the frame (run under ASan in CI), and an accepted
// RoCE frame is exactly what the builder makes from it.
TEST(FrameTest, MutatedFramesStayInBounds) {
  std::mt19937 rng(12345);
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    const bool ipv6 = round % 2 != 0;
    const uint8_t opcodes[] = {kRcSendOnly,    kRcRdmaWriteFirst,
                               kRcAcknowledge, kUdSendOnlyWithImmediate,
                               kCnp,           kRcCmpSwap};
    const uint8_t opcode = opcodes[round % 6];
    const OpcodeInfo& info = GetOpcodeInfo(opcode);
    auto f = Roce(ipv6, opcode, info.payload ? round % 9 : 0,
                  UdpChecksumMode::kZero);
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < flips; ++i) {
      f[rng() % f.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    if (rng() % 4 == 0) f.resize(rng() % f.size());
    ParsedFrame p;
    const ParseError e = ParseFrame(f, &p, {.verify_icrc = round % 3 != 0});
    if (!p.payload.empty()) {
      EXPECT_GE(p.payload.data(), f.data());
      EXPECT_LE(p.payload.data() + p.payload.size(), f.data() + f.size());
    }
    if (e == ParseError::kOk && p.kind == FrameKind::kRoce) {
      ++accepted;
      std::vector<uint8_t> again(f.size());
      again.resize(BuildRoceFrame(SpecFromParsed(p), p.payload, again));
      if (round % 3 != 0) {
        // With the ICRC verified, only masked fields (and pad bytes) can
        // differ from a fresh build; the ICRC still matches.
        EXPECT_EQ(again.size(), f.size());
        EXPECT_TRUE(std::equal(again.end() - 4, again.end(), f.end() - 4));
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace rocemu::protocol
