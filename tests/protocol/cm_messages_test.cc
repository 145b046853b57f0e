// The MAD header and the CM messages against the byte layout of IBTA vol. 1
// ch. 12.6 (offsets as ../shared/reference/cm.md lists them, checked on a
// Linux rxe capture), and every message through encode -> parse.
#include "protocol/cm_messages.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <typeinfo>

#include "protocol/cm_ip.h"
#include "protocol/mad.h"

namespace rocemu::protocol {
namespace {

using Mad = std::array<uint8_t, kMadSize>;

IpAddr V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddr g{};
  g[10] = g[11] = 0xFF;
  g[12] = a;
  g[13] = b;
  g[14] = c;
  g[15] = d;
  return g;
}

uint32_t Be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
         p[3];
}

// What Linux rxe's rping put in its REQ (cm.md §4), plus odd values where
// rxe uses zero so that every field is seen at its offset.
CmReq RpingReq() {
  CmReq r;
  r.local_comm_id = 0xA1B2C3D4;
  r.service_id = IpServiceId(RdmaPortSpace::kTcp, 7174);
  r.local_ca_guid = 0x505400FFFE123402ull;
  r.local_qkey = 0;
  r.local_qpn = 0x000011;
  r.responder_resources = 1;
  r.initiator_depth = 1;
  r.remote_cm_response_timeout = 20;
  r.transport = cm_transport::kUc;
  r.end_to_end_flow_control = true;
  r.starting_psn = 0xABCDEF;
  r.local_cm_response_timeout = 20;
  r.retry_count = 7;
  r.pkey = 0xFFFF;
  r.path_mtu = 3;
  r.rnr_retry_count = 7;
  r.max_cm_retries = 15;
  r.srq = true;
  r.primary.local_lid = kPermissiveLid;
  r.primary.remote_lid = kPermissiveLid;
  r.primary.local_gid = V4(10, 99, 0, 2);
  r.primary.remote_gid = V4(10, 99, 0, 1);
  r.primary.flow_label = 0x001C2;
  r.primary.packet_rate = 0x1C;
  r.primary.traffic_class = 0x68;
  r.primary.hop_limit = 64;
  r.primary.sl = 3;
  r.primary.local_ack_timeout = 19;
  for (size_t i = 0; i < r.private_data.size(); ++i) {
    r.private_data[i] = static_cast<uint8_t>(i + 1);
  }
  return r;
}

TEST(MadHeader, LayoutAndRoundTrip) {
  Mad mad{};
  EncodeCmMad(0x0000000112345678ull, CmRtu{}, mad);
  EXPECT_EQ(mad[0], 1);     // base version
  EXPECT_EQ(mad[1], 0x07);  // CM class
  EXPECT_EQ(mad[2], 2);     // class version
  EXPECT_EQ(mad[3], 0x03);  // Send
  EXPECT_EQ(mad[4] | mad[5], 0);
  EXPECT_EQ(Be32(&mad[8]), 0x00000001u);
  EXPECT_EQ(Be32(&mad[12]), 0x12345678u);
  EXPECT_EQ(mad[16] << 8 | mad[17], cm_attr::kRtu);
  EXPECT_EQ(Be32(&mad[20]), 0u);
  MadHeader h;
  ASSERT_TRUE(ParseMadHeader(mad, &h));
  EXPECT_EQ(h, CmMadHeader(cm_attr::kRtu, 0x0000000112345678ull));
  EXPECT_FALSE(h.is_response());
  EXPECT_FALSE(ParseMadHeader(std::span<const uint8_t>(mad.data(), 23), &h));
}

TEST(CmReq, EveryFieldAtItsOffset) {
  const CmReq r = RpingReq();
  std::array<uint8_t, kMadDataSize> d;
  d.fill(0xEE);  // Encode must write every byte
  EncodeCm(r, d);
  EXPECT_EQ(Be32(&d[0]), 0xA1B2C3D4u);
  EXPECT_EQ(Be32(&d[4]), 0u);
  EXPECT_EQ(Be32(&d[8]), 0u);
  EXPECT_EQ(Be32(&d[12]), 0x01061C06u);  // rping's service ID
  EXPECT_EQ(Be32(&d[16]), 0x505400FFu);
  EXPECT_EQ(Be32(&d[20]), 0xFE123402u);
  EXPECT_EQ(Be32(&d[32]), 0x00001101u);  // QPN | responder resources
  EXPECT_EQ(d[39], 1);                   // initiator depth
  // Remote CM response timeout 5b, transport 2b, flow control 1b.
  EXPECT_EQ(d[43], 20 << 3 | 1 << 1 | 1);
  EXPECT_EQ(Be32(&d[44]) >> 8, 0xABCDEFu);
  EXPECT_EQ(d[47], 20 << 3 | 7);  // local CM response timeout, retry count
  EXPECT_EQ(d[48] << 8 | d[49], 0xFFFF);
  EXPECT_EQ(d[50], 3 << 4 | 0 << 3 | 7);  // MTU, RDC, RNR retry
  EXPECT_EQ(d[51], 15 << 4 | 1 << 3);     // max CM retries, SRQ
  EXPECT_EQ(d[52] << 8 | d[53], 0xFFFF);
  EXPECT_EQ(d[54] << 8 | d[55], 0xFFFF);
  EXPECT_EQ(d[56 + 10], 0xFF);
  EXPECT_EQ(d[56 + 15], 2);  // ::ffff:10.99.0.2
  EXPECT_EQ(d[72 + 15], 1);
  EXPECT_EQ(Be32(&d[88]), 0x001C2u << 12 | 0x1C);
  EXPECT_EQ(d[92], 0x68);
  EXPECT_EQ(d[93], 64);
  EXPECT_EQ(d[94], 3 << 4);
  EXPECT_EQ(d[95], 19 << 3);
  for (int i = 96; i < 140; ++i) EXPECT_EQ(d[i], 0) << "alternate path " << i;
  EXPECT_EQ(d[140], 1);
  EXPECT_EQ(d[231], 92);
  CmReq back;
  ASSERT_TRUE(ParseCm(d, &back));
  EXPECT_EQ(back, r);
}

TEST(CmRep, EveryFieldAtItsOffset) {
  CmRep r;
  r.local_comm_id = 0x11223344;
  r.remote_comm_id = 0x55667788;
  r.local_qkey = 0x01020304;
  r.local_qpn = 0xABCDEF;
  r.local_eecn = 0x123456;
  r.starting_psn = 0x654321;
  r.responder_resources = 4;
  r.initiator_depth = 2;
  r.target_ack_delay = 15;
  r.failover_accepted = 3;
  r.end_to_end_flow_control = true;
  r.rnr_retry_count = 5;
  r.srq = true;
  r.local_ca_guid = 0x0102030405060708ull;
  r.private_data.fill(0x5A);
  std::array<uint8_t, kMadDataSize> d;
  EncodeCm(r, d);
  EXPECT_EQ(Be32(&d[0]), 0x11223344u);
  EXPECT_EQ(Be32(&d[4]), 0x55667788u);
  EXPECT_EQ(Be32(&d[8]), 0x01020304u);
  EXPECT_EQ(Be32(&d[12]), 0xABCDEF00u);
  EXPECT_EQ(Be32(&d[16]), 0x12345600u);
  EXPECT_EQ(Be32(&d[20]), 0x65432100u);
  EXPECT_EQ(d[24], 4);
  EXPECT_EQ(d[25], 2);
  EXPECT_EQ(d[26], 15 << 3 | 3 << 1 | 1);
  EXPECT_EQ(d[27], 5 << 5 | 1 << 4);
  EXPECT_EQ(Be32(&d[28]), 0x01020304u);
  EXPECT_EQ(d[36], 0x5A);
  EXPECT_EQ(d[231], 0x5A);
  CmRep back;
  ASSERT_TRUE(ParseCm(d, &back));
  EXPECT_EQ(back, r);
}

TEST(CmShortMessages, Offsets) {
  std::array<uint8_t, kMadDataSize> d;
  CmMra mra;
  mra.local_comm_id = 1;
  mra.remote_comm_id = 2;
  mra.message_mraed = cm_msg_response::kRep;
  mra.service_timeout = 17;
  mra.private_data[0] = 0x77;
  EncodeCm(mra, d);
  EXPECT_EQ(d[8], 1 << 6);
  EXPECT_EQ(d[9], 17 << 3);
  EXPECT_EQ(d[10], 0x77);

  CmRej rej;
  rej.local_comm_id = 3;
  rej.remote_comm_id = 4;
  rej.message_rejected = cm_msg_response::kOther;
  rej.rejected_info_length = 16;
  rej.reason = cm_rej_reason::kConsumerDefined;
  rej.ari[0] = 0x99;
  rej.private_data[0] = 0x42;
  EncodeCm(rej, d);
  EXPECT_EQ(Be32(&d[0]), 3u);
  EXPECT_EQ(Be32(&d[4]), 4u);
  EXPECT_EQ(d[8], 2 << 6);
  EXPECT_EQ(d[9], 16 << 1);
  EXPECT_EQ(d[10] << 8 | d[11], 28);
  EXPECT_EQ(d[12], 0x99);
  EXPECT_EQ(d[84], 0x42);

  CmDreq dreq;
  dreq.remote_qpn = 0x000011;
  dreq.private_data[0] = 9;
  EncodeCm(dreq, d);
  EXPECT_EQ(Be32(&d[8]), 0x00001100u);
  EXPECT_EQ(d[12], 9);

  CmSidrReq sreq;
  sreq.request_id = 0xCAFEBABE;
  sreq.pkey = 0x8001;
  sreq.service_id = IpServiceId(RdmaPortSpace::kUdp, 7174);
  sreq.private_data[0] = 5;
  EncodeCm(sreq, d);
  EXPECT_EQ(Be32(&d[0]), 0xCAFEBABEu);
  EXPECT_EQ(d[4] << 8 | d[5], 0x8001);
  EXPECT_EQ(Be32(&d[12]), 0x01111C06u);
  EXPECT_EQ(d[16], 5);

  CmSidrRep srep;
  srep.request_id = 7;
  srep.status = cm_sidr_status::kServiceIdNotSupported;
  srep.additional_info_length = 4;
  srep.qpn = 0x123456;
  srep.service_id = 0x1122334455667788ull;
  srep.qkey = 0x80010000;
  srep.additional_info[0] = 0xA5;
  srep.private_data[0] = 0x5A;
  EncodeCm(srep, d);
  EXPECT_EQ(d[4], 1);
  EXPECT_EQ(d[5], 4);
  EXPECT_EQ(Be32(&d[8]), 0x12345600u);
  EXPECT_EQ(Be32(&d[12]), 0x11223344u);
  EXPECT_EQ(Be32(&d[20]), 0x80010000u);
  EXPECT_EQ(d[24], 0xA5);
  EXPECT_EQ(d[96], 0x5A);
  CmSidrRep back;
  ASSERT_TRUE(ParseCm(d, &back));
  EXPECT_EQ(back, srep);
}

template <typename T>
void ExpectRoundTrip(const T& m) {
  Mad mad{};
  EncodeCmMad(0x1234, m, mad);
  MadHeader h;
  ASSERT_TRUE(ParseMadHeader(mad, &h));
  EXPECT_EQ(h.attr_id, kCmAttrOf<T>);
  T back;
  ASSERT_TRUE(
      ParseCm(std::span<const uint8_t>(mad).subspan(kMadHeaderSize), &back));
  EXPECT_EQ(back, m);
  EXPECT_FALSE(ParseCm(std::span<const uint8_t>(mad.data(), 100), &back));
}

TEST(CmMessages, RoundTripAndShortInput) {
  ExpectRoundTrip(RpingReq());
  CmMra mra;
  mra.local_comm_id = 9;
  mra.service_timeout = 31;
  ExpectRoundTrip(mra);
  CmRej rej;
  rej.reason = 10;
  rej.ari.fill(3);
  rej.rejected_info_length = 72;
  ExpectRoundTrip(rej);
  CmRtu rtu;
  rtu.private_data.fill(1);
  ExpectRoundTrip(rtu);
  CmDrep drep;
  drep.local_comm_id = 0xFFFFFFFF;
  ExpectRoundTrip(drep);
  CmDreq dreq;
  dreq.remote_qpn = 0xFFFFFF;
  ExpectRoundTrip(dreq);
  CmSidrReq sreq;
  sreq.private_data.fill(0xFF);
  ExpectRoundTrip(sreq);
}

// Junk decodes without complaint (the CM judges the values), and
// re-encoding a decoded message reproduces every non-reserved bit: for every
// message, so that a field each layout carries is read and written at the
// same place.
template <typename T>
void ExpectJunkRoundTrips() {
  std::array<uint8_t, kMadDataSize> junk;
  for (size_t i = 0; i < junk.size(); ++i) {
    junk[i] = static_cast<uint8_t>(i * 37 + 11);
  }
  T m;
  ASSERT_TRUE(ParseCm(junk, &m));
  std::array<uint8_t, kMadDataSize> again;
  again.fill(0xA5);  // Encode clears what it does not set
  EncodeCm(m, again);
  T m2;
  ASSERT_TRUE(ParseCm(again, &m2));
  EXPECT_EQ(m2, m) << typeid(T).name();
  EXPECT_NE(m, T{}) << typeid(T).name() << ": junk read as all-default";
}

TEST(CmMessages, AnyBytesDecode) {
  ExpectJunkRoundTrips<CmReq>();
  ExpectJunkRoundTrips<CmMra>();
  ExpectJunkRoundTrips<CmRej>();
  ExpectJunkRoundTrips<CmRep>();
  ExpectJunkRoundTrips<CmRtu>();
  ExpectJunkRoundTrips<CmDreq>();
  ExpectJunkRoundTrips<CmDrep>();
  ExpectJunkRoundTrips<CmSidrReq>();
  ExpectJunkRoundTrips<CmSidrRep>();
  ExpectJunkRoundTrips<CmLap>();
  ExpectJunkRoundTrips<CmApr>();
}

TEST(CmIpHeader, LayoutOfAnIpv4Request) {
  CmIpHeader h;
  h.ip_version = 4;
  h.src_port = 0xC001;
  h.src_addr = V4(10, 99, 0, 2);
  h.dst_addr = V4(10, 99, 0, 1);
  std::array<uint8_t, kCmIpHeaderSize> b;
  b.fill(0xEE);
  EncodeCmIpHeader(h, b);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[1], 0x40);
  EXPECT_EQ(b[2] << 8 | b[3], 0xC001);
  // IPv4 in the last 4 of the 16 bytes, zeros before (not ::ffff:).
  for (int i = 4; i < 16; ++i) EXPECT_EQ(b[i], 0) << i;
  EXPECT_EQ(Be32(&b[16]), 0x0A630002u);
  for (int i = 20; i < 32; ++i) EXPECT_EQ(b[i], 0) << i;
  EXPECT_EQ(Be32(&b[32]), 0x0A630001u);
  const std::optional<CmIpHeader> back = ParseCmIpHeader(b);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, h);
  b[0] = 0x10;  // version 1.0: refused
  EXPECT_FALSE(ParseCmIpHeader(b).has_value());
  b[0] = 0;
  b[1] = 0x50;  // IP version 5
  EXPECT_FALSE(ParseCmIpHeader(b).has_value());
}

TEST(CmIpService, ServiceIds) {
  EXPECT_EQ(IpServiceId(RdmaPortSpace::kTcp, 7174), 0x0000000001061C06ull);
  const std::optional<IpService> s = ParseIpServiceId(0x0000000001111C06ull);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->port_space, RdmaPortSpace::kUdp);
  EXPECT_EQ(s->port, 7174);
  EXPECT_FALSE(ParseIpServiceId(0x0000000001061C06ull | 1ull << 40));
  EXPECT_TRUE(ParseIpServiceId(IpServiceId(RdmaPortSpace::kIb, 1)));
  EXPECT_FALSE(ParseIpServiceId(0x0000000001051C06ull));  // no such space
}

}  // namespace
}  // namespace rocemu::protocol
