#include "emulator/net/net_stack.h"

#include <cstring>
#include <vector>

#include "emulator/net/checksum.h"
#include "emulator/net/neighbour_cache.h"
#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr MacAddr kOurMac = {0x02, 0, 0, 0x77, 0, 0x02};
constexpr MacAddr kPeerMac = {0x02, 0, 0, 0x77, 0, 0x01};
constexpr uint8_t kOur4[4] = {10, 77, 0, 2};
constexpr uint8_t kPeer4[4] = {10, 77, 0, 1};
const IpAddr kOur6 = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
const IpAddr kPeer6 = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

// Reference one's-complement sum, written independently of checksum.cc.
uint16_t RefChecksum(const Bytes& data) {
  uint64_t sum = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    sum += (i % 2 == 0) ? data[i] * 256u : data[i];
  }
  while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xFFFF);
}

uint16_t RefIcmpv6Checksum(const uint8_t* src, const uint8_t* dst,
                           const uint8_t* msg, size_t len) {
  Bytes pseudo(src, src + 16);
  pseudo.insert(pseudo.end(), dst, dst + 16);
  pseudo.push_back(0);
  pseudo.push_back(0);
  pseudo.push_back(static_cast<uint8_t>(len >> 8));
  pseudo.push_back(static_cast<uint8_t>(len));
  pseudo.insert(pseudo.end(), {0, 0, 0, 58});
  pseudo.insert(pseudo.end(), msg, msg + len);
  return RefChecksum(pseudo);
}

void Put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void PutBytes(Bytes& b, const uint8_t* p, size_t n) {
  b.insert(b.end(), p, p + n);
}
void PutEth(Bytes& b, const MacAddr& dst, const MacAddr& src, uint16_t type) {
  PutBytes(b, dst.data(), 6);
  PutBytes(b, src.data(), 6);
  Put16(b, type);
}

Bytes ArpRequest(const uint8_t target[4], const MacAddr& dst = kBroadcastMac) {
  Bytes b;
  PutEth(b, dst, kPeerMac, kEtherTypeArp);
  Put16(b, 1);
  Put16(b, 0x0800);
  b.push_back(6);
  b.push_back(4);
  Put16(b, 1);
  PutBytes(b, kPeerMac.data(), 6);
  PutBytes(b, kPeer4, 4);
  b.insert(b.end(), 6, 0);
  PutBytes(b, target, 4);
  return b;
}

Bytes Ipv4Echo(const uint8_t dst[4], size_t payload = 16) {
  Bytes b;
  PutEth(b, kOurMac, kPeerMac, kEtherTypeIpv4);
  size_t ip = b.size();
  Bytes hdr = {0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 1, 0, 0};
  uint16_t total = static_cast<uint16_t>(20 + 8 + payload);
  hdr[2] = static_cast<uint8_t>(total >> 8);
  hdr[3] = static_cast<uint8_t>(total);
  b.insert(b.end(), hdr.begin(), hdr.end());
  PutBytes(b, kPeer4, 4);
  PutBytes(b, dst, 4);
  uint16_t c = RefChecksum(Bytes(b.begin() + ip, b.end()));
  b[ip + 10] = static_cast<uint8_t>(c >> 8);
  b[ip + 11] = static_cast<uint8_t>(c);
  size_t icmp = b.size();
  b.insert(b.end(), {8, 0, 0, 0, 0x12, 0x34, 0, 1});
  for (size_t i = 0; i < payload; ++i) b.push_back(static_cast<uint8_t>(i));
  c = RefChecksum(Bytes(b.begin() + icmp, b.end()));
  b[icmp + 2] = static_cast<uint8_t>(c >> 8);
  b[icmp + 3] = static_cast<uint8_t>(c);
  return b;
}

Bytes Ipv6Icmp(const MacAddr& dst_mac, const IpAddr& src, const IpAddr& dst,
               Bytes msg, uint8_t hop_limit = 255) {
  Bytes b;
  PutEth(b, dst_mac, kPeerMac, kEtherTypeIpv6);
  b.insert(b.end(), {0x60, 0, 0, 0});
  Put16(b, static_cast<uint16_t>(msg.size()));
  b.push_back(58);
  b.push_back(hop_limit);
  PutBytes(b, src.data(), 16);
  PutBytes(b, dst.data(), 16);
  uint16_t c =
      RefIcmpv6Checksum(src.data(), dst.data(), msg.data(), msg.size());
  msg[2] = static_cast<uint8_t>(c >> 8);
  msg[3] = static_cast<uint8_t>(c);
  b.insert(b.end(), msg.begin(), msg.end());
  return b;
}

Bytes NeighbourSolicit(const IpAddr& target, const IpAddr& src = kPeer6) {
  IpAddr group = {0xff, 0x02, 0, 0, 0,    0,          0,          0,
                  0,    0,    0, 1, 0xff, target[13], target[14], target[15]};
  MacAddr mac = {0x33, 0x33, 0xff, target[13], target[14], target[15]};
  Bytes msg = {135, 0, 0, 0, 0, 0, 0, 0};
  PutBytes(msg, target.data(), 16);
  msg.insert(msg.end(), {1, 1});
  PutBytes(msg, kPeerMac.data(), 6);
  return Ipv6Icmp(mac, src, group, msg);
}

class NetStackTest : public ::testing::Test {
 protected:
  NetStackTest() : stack_(kOurMac, Addresses(), &cache_) {}
  static std::vector<NetAddress> Addresses() {
    return {{Ipv4Mapped(kOur4), false, 24}, {kOur6, true, 64}};
  }
  RxVerdict Rx(const Bytes& frame, nic::TimeNs now = 1000) {
    reply_.assign(2048, 0xAA);
    RxVerdict v = stack_.Receive(frame, now, reply_, &reply_len_);
    reply_.resize(reply_len_);
    return v;
  }

  NeighbourCache cache_;
  NetStack stack_;
  Bytes reply_;
  size_t reply_len_ = 0;
};

TEST(ChecksumTest, Rfc1071Example) {
  // RFC 1071 section 3: the sum of these words is 0xddf2.
  const uint8_t data[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(ChecksumPartial(data), 0xddf2u);
  EXPECT_EQ(InternetChecksum(data), 0x220d);
  const uint8_t odd[] = {0x01, 0x02, 0x03};
  EXPECT_EQ(InternetChecksum(odd), RefChecksum({0x01, 0x02, 0x03}));
}

TEST_F(NetStackTest, AnswersArpForOurAddressAndLearnsSender) {
  ASSERT_EQ(Rx(ArpRequest(kOur4)), RxVerdict::kReply);
  ASSERT_EQ(reply_.size(), NetStack::kMinFrame);
  EXPECT_TRUE(std::equal(kPeerMac.begin(), kPeerMac.end(), reply_.begin()));
  EXPECT_TRUE(std::equal(kOurMac.begin(), kOurMac.end(), reply_.begin() + 6));
  EXPECT_EQ(LoadBe16(&reply_[12]), kEtherTypeArp);
  EXPECT_EQ(LoadBe16(&reply_[20]), 2);  // op: reply
  EXPECT_TRUE(std::equal(kOurMac.begin(), kOurMac.end(), reply_.begin() + 22));
  EXPECT_EQ(0, std::memcmp(&reply_[28], kOur4, 4));
  EXPECT_TRUE(
      std::equal(kPeerMac.begin(), kPeerMac.end(), reply_.begin() + 32));
  EXPECT_EQ(0, std::memcmp(&reply_[38], kPeer4, 4));
  EXPECT_EQ(stack_.counters().rx_arp_requests, 1u);
  EXPECT_EQ(stack_.counters().tx_arp_replies, 1u);
  std::optional<MacAddr> learned = cache_.Lookup(Ipv4Mapped(kPeer4), 2000);
  ASSERT_TRUE(learned.has_value());
  EXPECT_EQ(*learned, kPeerMac);
}

TEST_F(NetStackTest, IgnoresArpForOtherAddresses) {
  const uint8_t other[4] = {10, 77, 0, 9};
  EXPECT_EQ(Rx(ArpRequest(other)), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_not_for_us, 1u);
  EXPECT_EQ(stack_.counters().tx_arp_replies, 0u);
  // Not the target: the sender is not added (RFC 826 merge rule).
  EXPECT_FALSE(cache_.Lookup(Ipv4Mapped(kPeer4), 2000).has_value());
}

TEST_F(NetStackTest, DropsFramesForOtherMacs) {
  MacAddr other = {0x02, 9, 9, 9, 9, 9};
  Bytes f = Ipv4Echo(kOur4);
  std::memcpy(f.data(), other.data(), 6);
  EXPECT_EQ(Rx(f), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_not_for_us, 1u);
}

TEST_F(NetStackTest, AnswersIcmpEcho) {
  Bytes req = Ipv4Echo(kOur4, 40);
  ASSERT_EQ(Rx(req), RxVerdict::kReply);
  ASSERT_EQ(reply_.size(), req.size());
  const uint8_t* ip = &reply_[14];
  EXPECT_EQ(0, std::memcmp(ip + 12, kOur4, 4));
  EXPECT_EQ(0, std::memcmp(ip + 16, kPeer4, 4));
  EXPECT_EQ(RefChecksum(Bytes(ip, ip + 20)), 0);
  Bytes icmp(reply_.begin() + 34, reply_.end());
  EXPECT_EQ(icmp[0], 0);  // echo reply
  EXPECT_EQ(RefChecksum(icmp), 0);
  // Identifier, sequence and data are echoed.
  EXPECT_TRUE(std::equal(req.begin() + 38, req.end(), reply_.begin() + 38));
  EXPECT_EQ(stack_.counters().tx_icmp_echo_reply, 1u);
}

TEST_F(NetStackTest, CountsBadIpv4Checksum) {
  Bytes req = Ipv4Echo(kOur4);
  req[14 + 10] ^= 0x01;
  EXPECT_EQ(Rx(req), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_bad_checksum, 1u);
}

// An IPv4 echo request made a UDP datagram to port 4791 (RoCEv2), the IP
// checksum redone.
Bytes AsRoce(Bytes f) {
  f[14 + 9] = 17;  // UDP
  f[14 + 10] = f[14 + 11] = 0;
  uint16_t c = RefChecksum(Bytes(f.begin() + 14, f.begin() + 34));
  f[24] = static_cast<uint8_t>(c >> 8);
  f[25] = static_cast<uint8_t>(c);
  f[36] = 4791 >> 8;
  f[37] = 4791 & 0xFF;
  return f;
}

TEST_F(NetStackTest, PassesRoceToTheNic) {
  EXPECT_EQ(Rx(AsRoce(Ipv4Echo(kOur4))), RxVerdict::kNic);
  EXPECT_EQ(stack_.counters().rx_nic, 1u);
}

// UD multicast: RoCE to an IPv4 group on its group MAC reaches the RNIC
// (which keeps what its QPs joined); an echo request to a group does not
// get an answer, and a group frame on another MAC than the group's is not
// ours.
TEST_F(NetStackTest, PassesRoceToIpv4GroupsToTheNic) {
  const uint8_t group[4] = {239, 1, 2, 3};
  Bytes echo = Ipv4Echo(group);
  const MacAddr group_mac = {0x01, 0x00, 0x5e, 0x01, 0x02, 0x03};
  std::copy(group_mac.begin(), group_mac.end(), echo.begin());
  EXPECT_EQ(Rx(echo), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().tx_icmp_echo_reply, 0u);
  EXPECT_EQ(stack_.counters().rx_not_for_us, 1u);
  Bytes f = AsRoce(echo);
  EXPECT_EQ(Rx(f), RxVerdict::kNic);
  Bytes slow = f;  // 802.1 slow-protocol MAC: not an IP group
  slow[1] = 0x80;
  slow[2] = 0xc2;
  EXPECT_EQ(Rx(slow), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_nic, 1u);
}

TEST_F(NetStackTest, PassesRoceToIpv6GroupsToTheNic) {
  const IpAddr group = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2};
  Bytes udp = {0xc0, 0x00, 4791 >> 8, 4791 & 0xFF, 0, 20, 0, 0};
  udp.resize(20, 0);
  Bytes f = Ipv6Icmp({0x33, 0x33, 0, 1, 0, 2}, kPeer6, group, udp, 64);
  // Next header UDP, and the destination port Ipv6Icmp's checksum
  // overwrote (the RNIC checks the UDP datagram itself).
  f[14 + 6] = 17;
  f[14 + 40 + 2] = 4791 >> 8;
  f[14 + 40 + 3] = 4791 & 0xFF;
  EXPECT_EQ(Rx(f), RxVerdict::kNic);
  EXPECT_EQ(stack_.counters().rx_nic, 1u);
}

// IGMPv3 / MLDv2 membership reports for the RNIC's groups, each family in
// one frame, and the answers to general queries.
class GroupReportTest : public NetStackTest {
 protected:
  const IpAddr g4a_ = Ipv4Mapped(std::array<uint8_t, 4>{239, 1, 2, 3}.data());
  const IpAddr g4b_ = Ipv4Mapped(std::array<uint8_t, 4>{239, 9, 9, 9}.data());
  const IpAddr g6_ = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2};
  Bytes Build(bool ipv6, GroupRecord record) {
    Bytes out(2048);
    const IpAddr groups[] = {g4a_, g6_, g4b_};
    out.resize(stack_.BuildGroupReport(groups, ipv6, record, out));
    return out;
  }
  // Checks an IGMPv3 report of the two IPv4 groups with `record`.
  static void ExpectIgmpReport(const Bytes& f, uint8_t record) {
    ASSERT_GE(f.size(), 14u + 24u + 8u + 16u);
    EXPECT_EQ(Bytes(f.begin(), f.begin() + 6),
              (Bytes{0x01, 0x00, 0x5e, 0x00, 0x00, 0x16}));
    EXPECT_EQ(Bytes(f.begin() + 6, f.begin() + 12),
              Bytes(kOurMac.begin(), kOurMac.end()));
    const uint8_t* ip = f.data() + 14;
    EXPECT_EQ(ip[0], 0x46);  // IHL 6: Router Alert
    EXPECT_EQ(ip[8], 1);     // TTL
    EXPECT_EQ(ip[9], 2);     // IGMP
    EXPECT_EQ(RefChecksum(Bytes(ip, ip + 24)), 0);
    EXPECT_EQ(0, std::memcmp(ip + 12, kOur4, 4));
    EXPECT_EQ(Bytes(ip + 16, ip + 24),
              (Bytes{224, 0, 0, 22, 0x94, 0x04, 0, 0}));
    const uint8_t* igmp = ip + 24;
    EXPECT_EQ(RefChecksum(Bytes(igmp, igmp + 24)), 0);
    EXPECT_EQ(igmp[0], 0x22);
    EXPECT_EQ(igmp[7], 2);  // records
    EXPECT_EQ(
        Bytes(igmp + 8, igmp + 24),
        (Bytes{record, 0, 0, 0, 239, 1, 2, 3, record, 0, 0, 0, 239, 9, 9, 9}));
  }
};

TEST_F(GroupReportTest, Igmpv3ReportCarriesEveryIpv4Group) {
  ExpectIgmpReport(Build(false, GroupRecord::kToExclude), 4);
  ExpectIgmpReport(Build(false, GroupRecord::kToInclude), 3);
  EXPECT_EQ(stack_.counters().tx_igmp_reports, 2u);
}

TEST_F(GroupReportTest, Mldv2ReportCarriesEveryIpv6Group) {
  const Bytes f = Build(true, GroupRecord::kToExclude);
  ASSERT_EQ(f.size(), 14u + 40u + 8u + 8u + 20u);
  EXPECT_EQ(Bytes(f.begin(), f.begin() + 6),
            (Bytes{0x33, 0x33, 0, 0, 0, 0x16}));
  const uint8_t* ip = f.data() + 14;
  EXPECT_EQ(ip[6], 0);     // Hop-by-Hop header first
  EXPECT_EQ(ip[7], 1);     // hop limit
  EXPECT_EQ(ip[8], 0xfe);  // link-local source
  EXPECT_EQ(ip[9], 0x80);
  EXPECT_EQ(Bytes(ip + 40, ip + 48), (Bytes{58, 0, 5, 2, 0, 0, 1, 0}));
  const uint8_t* mld = ip + 48;
  EXPECT_EQ(mld[0], 143);
  EXPECT_EQ(mld[7], 1);
  EXPECT_EQ(mld[8], 4);
  EXPECT_EQ(0, std::memcmp(mld + 12, g6_.data(), 16));
  Bytes msg(mld, mld + 28);
  const uint16_t stored = static_cast<uint16_t>(msg[2] << 8 | msg[3]);
  msg[2] = msg[3] = 0;
  EXPECT_EQ(RefIcmpv6Checksum(ip + 8, ip + 24, msg.data(), msg.size()), stored);
  EXPECT_EQ(stack_.counters().tx_mld_reports, 1u);
  // No group of a family: no frame.
  Bytes out(2048);
  EXPECT_EQ(
      stack_.BuildGroupReport({&g6_, 1}, false, GroupRecord::kToExclude, out),
      0u);
}

TEST_F(GroupReportTest, GeneralQueriesAreAnsweredWithTheGroupsJoined) {
  // IGMPv2 general query to 224.0.0.1.
  const uint8_t all_hosts[4] = {224, 0, 0, 1};
  Bytes q = Ipv4Echo(all_hosts, 0);
  const MacAddr all_hosts_mac = {0x01, 0x00, 0x5e, 0, 0, 1};
  std::copy(all_hosts_mac.begin(), all_hosts_mac.end(), q.begin());
  q[14 + 9] = 2;  // IGMP
  q[14 + 10] = q[14 + 11] = 0;
  uint16_t c = RefChecksum(Bytes(q.begin() + 14, q.begin() + 34));
  q[24] = static_cast<uint8_t>(c >> 8);
  q[25] = static_cast<uint8_t>(c);
  Bytes igmp = {0x11, 100, 0, 0, 0, 0, 0, 0};
  c = RefChecksum(igmp);
  igmp[2] = static_cast<uint8_t>(c >> 8);
  igmp[3] = static_cast<uint8_t>(c);
  std::copy(igmp.begin(), igmp.end(), q.begin() + 34);
  EXPECT_EQ(Rx(q), RxVerdict::kConsumed);  // no group yet
  stack_.set_groups({g4a_, g6_, g4b_});
  ASSERT_EQ(Rx(q), RxVerdict::kReply);
  ExpectIgmpReport(reply_, 2);  // MODE_IS_EXCLUDE
  // MLDv1 general query to ff02::1, behind a Hop-by-Hop Router Alert.
  const IpAddr all_nodes = {0xff, 0x02, 0, 0, 0, 0, 0, 0,
                            0,    0,    0, 0, 0, 0, 0, 1};
  Bytes mld = {130, 0, 0, 0, 0, 100, 0, 0};
  mld.resize(24, 0);
  Bytes f = Ipv6Icmp({0x33, 0x33, 0, 0, 0, 1}, kPeer6, all_nodes, mld, 1);
  f[14 + 6] = 0;  // Hop-by-Hop, then ICMPv6
  f[14 + 5] += 8;
  const Bytes hbh = {58, 0, 5, 2, 0, 0, 1, 0};
  f.insert(f.begin() + 14 + 40, hbh.begin(), hbh.end());
  ASSERT_EQ(Rx(f), RxVerdict::kReply);
  EXPECT_EQ(reply_[14 + 48], 143);
  EXPECT_EQ(reply_[14 + 48 + 8], 2);
  EXPECT_EQ(stack_.counters().rx_group_queries, 3u);
}

TEST_F(NetStackTest, PassesPfcToTheNic) {
  Bytes f;
  PutEth(f, {0x01, 0x80, 0xc2, 0, 0, 0x01}, kPeerMac, 0x8808);
  f.resize(60, 0);
  EXPECT_EQ(Rx(f), RxVerdict::kNic);
}

TEST_F(NetStackTest, TruncatedFramesAreMalformed) {
  Bytes f = ArpRequest(kOur4);
  f.resize(30);
  EXPECT_EQ(Rx(f), RxVerdict::kDropped);
  EXPECT_EQ(Rx(Bytes(10, 0)), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_malformed, 2u);
}

TEST_F(NetStackTest, AnswersNeighbourSolicitation) {
  ASSERT_EQ(Rx(NeighbourSolicit(kOur6)), RxVerdict::kReply);
  ASSERT_EQ(reply_.size(), 14u + 40 + 32);
  EXPECT_TRUE(std::equal(kPeerMac.begin(), kPeerMac.end(), reply_.begin()));
  const uint8_t* ip = &reply_[14];
  EXPECT_EQ(ip[6], 58);
  EXPECT_EQ(ip[7], 255);
  EXPECT_EQ(0, std::memcmp(ip + 8, kOur6.data(), 16));
  EXPECT_EQ(0, std::memcmp(ip + 24, kPeer6.data(), 16));
  const uint8_t* na = ip + 40;
  EXPECT_EQ(na[0], 136);
  EXPECT_EQ(na[4], 0x60);  // solicited + override
  EXPECT_EQ(0, std::memcmp(na + 8, kOur6.data(), 16));
  EXPECT_EQ(na[24], 2);  // target link-layer address option
  EXPECT_EQ(0, std::memcmp(na + 26, kOurMac.data(), 6));
  EXPECT_EQ(RefIcmpv6Checksum(ip + 8, ip + 24, na, 32), 0);
  ASSERT_TRUE(cache_.Lookup(kPeer6, 2000).has_value());
  EXPECT_EQ(*cache_.Lookup(kPeer6, 2000), kPeerMac);
}

TEST_F(NetStackTest, AnswersSolicitationForLinkLocal) {
  ASSERT_EQ(Rx(NeighbourSolicit(stack_.link_local())), RxVerdict::kReply);
  // fe80::ff:fe77:2 from 02:00:00:77:00:02 (universal/local bit flipped).
  const IpAddr expected = {0xfe, 0x80, 0, 0,    0,    0,    0, 0,
                           0,    0,    0, 0xff, 0xfe, 0x77, 0, 0x02};
  EXPECT_EQ(stack_.link_local(), expected);
}

TEST_F(NetStackTest, DuplicateAddressProbeIsAnsweredToAllNodes) {
  IpAddr unspecified{};
  ASSERT_EQ(Rx(NeighbourSolicit(kOur6, unspecified)), RxVerdict::kReply);
  const uint8_t* ip = &reply_[14];
  EXPECT_EQ(reply_[0], 0x33);
  EXPECT_EQ(ip[24], 0xff);
  EXPECT_EQ(ip[39], 0x01);
  EXPECT_EQ(ip[40 + 4], 0x20);  // override only
}

TEST_F(NetStackTest, RejectsSolicitationWithWrongHopLimitOrChecksum) {
  Bytes ns = NeighbourSolicit(kOur6);
  ns[14 + 7] = 64;
  EXPECT_EQ(Rx(ns), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_malformed, 1u);
  ns = NeighbourSolicit(kOur6);
  ns.back() ^= 0x01;
  EXPECT_EQ(Rx(ns), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_bad_checksum, 1u);
}

TEST_F(NetStackTest, AnswersIcmpv6Echo) {
  Bytes msg = {128, 0, 0, 0, 0x12, 0x34, 0, 7, 'p', 'i', 'n', 'g'};
  ASSERT_EQ(Rx(Ipv6Icmp(kOurMac, kPeer6, kOur6, msg, 64)), RxVerdict::kReply);
  const uint8_t* ip = &reply_[14];
  EXPECT_EQ(0, std::memcmp(ip + 8, kOur6.data(), 16));
  EXPECT_EQ(0, std::memcmp(ip + 24, kPeer6.data(), 16));
  EXPECT_EQ(ip[40], 129);
  EXPECT_EQ(0, std::memcmp(ip + 44, msg.data() + 4, msg.size() - 4));
  EXPECT_EQ(RefIcmpv6Checksum(ip + 8, ip + 24, ip + 40, msg.size()), 0);
  EXPECT_EQ(stack_.counters().tx_icmpv6_echo_reply, 1u);
}

// A netdev port's stack: the kernel answers ARP, ND and echo requests on
// the interface, so the stack answers nothing and learns nothing, and
// still gives the RNIC its RoCEv2 frames, to the addresses it is told.
TEST_F(NetStackTest, KernelOwnedStackAnswersNothingAndPassesRoce) {
  stack_.set_kernel_owned(true);
  EXPECT_EQ(Rx(ArpRequest(kOur4)), RxVerdict::kDropped);
  EXPECT_FALSE(cache_.Lookup(Ipv4Mapped(kPeer4), 2000).has_value());
  EXPECT_EQ(Rx(Ipv4Echo(kOur4)), RxVerdict::kDropped);
  EXPECT_EQ(Rx(NeighbourSolicit(kOur6)), RxVerdict::kDropped);
  Bytes msg = {128, 0, 0, 0, 0x12, 0x34, 0, 7, 'p', 'i', 'n', 'g'};
  EXPECT_EQ(Rx(Ipv6Icmp(kOurMac, kPeer6, kOur6, msg, 64)), RxVerdict::kDropped);
  EXPECT_EQ(stack_.counters().rx_kernel, 4u);
  EXPECT_EQ(stack_.counters().tx_arp_replies + stack_.counters().tx_nd_adverts +
                stack_.counters().tx_icmp_echo_reply +
                stack_.counters().tx_icmpv6_echo_reply,
            0u);
  EXPECT_EQ(Rx(AsRoce(Ipv4Echo(kOur4))), RxVerdict::kNic);

  // The interface's address changed: RoCEv2 follows the new one only, and
  // the MAC's own link-local address is not ours unless the kernel has it.
  const uint8_t new4[4] = {10, 77, 0, 5};
  const NetAddress now_ours[] = {{Ipv4Mapped(new4), false, 24}};
  stack_.SetAddresses(now_ours);
  EXPECT_EQ(Rx(AsRoce(Ipv4Echo(kOur4))), RxVerdict::kDropped);
  EXPECT_EQ(Rx(AsRoce(Ipv4Echo(new4))), RxVerdict::kNic);
  EXPECT_FALSE(stack_.IsOurAddress(stack_.link_local()));
  // And its MAC.
  const MacAddr new_mac = {0x02, 0, 0, 0x77, 0, 0x09};
  stack_.set_mac(new_mac);
  EXPECT_EQ(Rx(AsRoce(Ipv4Echo(new4))), RxVerdict::kDropped);  // old MAC
  Bytes to_new = AsRoce(Ipv4Echo(new4));
  std::copy(new_mac.begin(), new_mac.end(), to_new.begin());
  EXPECT_EQ(Rx(to_new), RxVerdict::kNic);
  EXPECT_EQ(stack_.counters().rx_nic, 3u);
}

TEST_F(NetStackTest, ResolvesIpv4ThroughArp) {
  Bytes out(128);
  size_t len = 0;
  IpAddr peer = Ipv4Mapped(kPeer4);
  EXPECT_FALSE(stack_.Resolve(peer, 1000, out, &len).has_value());
  ASSERT_EQ(len, NetStack::kMinFrame);
  EXPECT_EQ(LoadBe16(&out[12]), kEtherTypeArp);
  EXPECT_EQ(LoadBe16(&out[20]), 1);
  EXPECT_EQ(0, std::memcmp(&out[28], kOur4, 4));
  EXPECT_EQ(0, std::memcmp(&out[38], kPeer4, 4));
  // No second request within the retry interval.
  EXPECT_FALSE(stack_.Resolve(peer, 2000, out, &len).has_value());
  EXPECT_EQ(len, 0u);

  // The peer's reply completes the entry.
  Bytes reply = ArpRequest(kOur4, kOurMac);
  reply[21] = 2;
  EXPECT_EQ(Rx(reply), RxVerdict::kConsumed);
  std::optional<MacAddr> mac = stack_.Resolve(peer, 3000, out, &len);
  ASSERT_TRUE(mac.has_value());
  EXPECT_EQ(*mac, kPeerMac);
}

TEST_F(NetStackTest, ResolvesIpv6ThroughNeighbourDiscovery) {
  Bytes out(128);
  size_t len = 0;
  EXPECT_FALSE(stack_.Resolve(kPeer6, 1000, out, &len).has_value());
  ASSERT_EQ(len, 14u + 40 + 32);
  EXPECT_EQ(out[0], 0x33);
  EXPECT_EQ(out[2], 0xff);
  const uint8_t* ip = &out[14];
  EXPECT_EQ(ip[24], 0xff);  // solicited-node group
  EXPECT_EQ(ip[40], 135);
  EXPECT_EQ(RefIcmpv6Checksum(ip + 8, ip + 24, ip + 40, 32), 0);

  Bytes na = {136, 0, 0, 0, 0x60, 0, 0, 0};
  PutBytes(na, kPeer6.data(), 16);
  na.insert(na.end(), {2, 1});
  PutBytes(na, kPeerMac.data(), 6);
  EXPECT_EQ(Rx(Ipv6Icmp(kOurMac, kPeer6, kOur6, na)), RxVerdict::kConsumed);
  std::optional<MacAddr> mac = stack_.Resolve(kPeer6, 2000, out, &len);
  ASSERT_TRUE(mac.has_value());
  EXPECT_EQ(*mac, kPeerMac);
}

TEST(NeighbourCacheTest, LearnedEntriesExpireStaticOnesDoNot) {
  NeighbourCache::Options o;
  o.reachable_ns = 100;
  NeighbourCache cache(o);
  IpAddr a = Ipv4Mapped(kPeer4);
  IpAddr b = kPeer6;
  cache.Learn(a, kPeerMac, 0);
  cache.AddStatic(b, kOurMac);
  EXPECT_TRUE(cache.Lookup(a, 99).has_value());
  EXPECT_FALSE(cache.Lookup(a, 100).has_value());
  EXPECT_EQ(cache.Expire(100), 1u);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.Lookup(b, 1'000'000'000'000).has_value());
  // The wire does not override configuration.
  cache.Learn(b, kPeerMac, 5);
  EXPECT_EQ(*cache.Lookup(b, 6), kOurMac);
  EXPECT_FALSE(cache.ShouldSolicit(b, 10));
}

// A netdev port's entries are the kernel's: kept until the kernel drops
// them, whatever the learned-entry timeout.
TEST(NeighbourCacheTest, KernelEntriesStayUntilRemoved) {
  NeighbourCache cache;
  const IpAddr ip = Ipv4Mapped(kPeer4);
  cache.AddStatic(ip, kPeerMac);
  EXPECT_EQ(cache.Expire(nic::kNever - 1), 0u);
  EXPECT_EQ(cache.Lookup(ip, nic::kNever - 1), kPeerMac);
  cache.Remove(ip);
  EXPECT_FALSE(cache.Lookup(ip, 1).has_value());
  EXPECT_TRUE(cache.ShouldSolicit(ip, 1));  // asked for again at once
}

TEST(NeighbourCacheTest, SolicitationsAreRateLimited) {
  NeighbourCache::Options o;
  o.retry_ns = 10;
  o.max_solicits = 2;
  NeighbourCache cache(o);
  IpAddr a = Ipv4Mapped(kPeer4);
  EXPECT_TRUE(cache.ShouldSolicit(a, 0));
  EXPECT_FALSE(cache.ShouldSolicit(a, 5));
  EXPECT_TRUE(cache.ShouldSolicit(a, 10));
  EXPECT_FALSE(cache.ShouldSolicit(a, 20));  // round of 2 used up
  EXPECT_TRUE(cache.ShouldSolicit(a, 30));   // after a quiet period
}

}  // namespace
}  // namespace rocemu::emulator
