// The daemon's own ARP / neighbour discovery / ICMP stack on whatever the
// wire delivers: frames from the input, optionally tidied up (destination
// MAC, our addresses, lengths, checksums) so that mutations get past the
// first checks and reach the answering code, tagged or not, with and
// without a port VLAN, interleaved with time passing, cache expiry, static
// entries and the resolver's own solicitations. Each input starts from a
// fresh stack, so it is replayable alone.
//
// Invariants (abort on violation):
//  - a reply is written only with RxVerdict::kReply, then it is at least
//    the Ethernet minimum and fits the lent buffer (the buffer is a heap
//    block of exactly that size, so ASan sees any write past it);
//  - a reply comes from the stack's MAC, keeps the request's VLAN tag, is
//    the right answer to the request (ARP reply, echo reply with the same
//    data, neighbour advertisement for one of our addresses) and its IPv4
//    header, ICMP and ICMPv6 checksums verify;
//  - every received frame is counted in exactly one rx_* counter, a tx_*
//    reply counter moves exactly when a reply is produced, kNic frames are
//    counted as rx_nic, and no counter ever goes down;
//  - solicitations (Resolve, BuildArpRequest, BuildNeighbourSolicit) are
//    well-formed, carry the port's VLAN, are produced whenever the buffer
//    and a source address allow, and a peer stack that owns the target
//    answers them with a reply that makes Resolve return the peer's MAC.
//
// Input: [addresses u8][prefix v4 u8][prefix v6 u8][vlan u8][vid u16]
// then ops, each [op u8] followed by the bytes it reads (missing bytes
// read as zero); op % 8: 0-2 receive [tidy flags][address pick][buffer]
// [len u16][frame], 3 time passes, 4 Resolve, 5 Build* solicitation, 6 port
// VLAN, 7 static entry (or cache expiry).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "emulator/net/checksum.h"
#include "emulator/net/cm_services.h"
#include "emulator/net/neighbour_cache.h"
#include "emulator/net/net_stack.h"
#include "emulator/net/net_types.h"
#include "emulator/port/shard_dispatch.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rocemu::emulator;  // NOLINT
using rocemu::nic::TimeNs;

class Input {
 public:
  Input(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  size_t left() const { return i_ < n_ ? n_ - i_ : 0; }
  uint8_t U8() { return i_ < n_ ? d_[i_++] : 0; }
  uint16_t U16() { return static_cast<uint16_t>((U8() << 8) | U8()); }
  uint32_t U32() { return (static_cast<uint32_t>(U16()) << 16) | U16(); }
  std::vector<uint8_t> Bytes(size_t n) {
    n = std::min(n, left());
    std::vector<uint8_t> v(d_ + i_, d_ + i_ + n);
    i_ += n;
    return v;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t i_ = 0;
};

constexpr MacAddr kOurMac = {0x02, 0, 0, 0x77, 0, 0x02};
constexpr MacAddr kPeerMac = {0x02, 0, 0, 0x77, 0, 0x01};
constexpr uint8_t kOur4a[4] = {10, 77, 0, 2};
constexpr uint8_t kOur4b[4] = {192, 168, 5, 2};
constexpr uint8_t kPeer4[4] = {10, 77, 0, 1};
constexpr IpAddr kOur6 = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
constexpr IpAddr kPeer6 = {0xfd, 0x77, 0, 0, 0, 0, 0, 0,
                           0,    0,    0, 0, 0, 0, 0, 1};
constexpr IpAddr kAllNodes = {0xff, 0x02, 0, 0, 0, 0, 0, 0,
                              0,    0,    0, 0, 0, 0, 0, 1};
// Far beyond any uptime, and far enough from 2^64 that the cache's
// "now + lifetime" cannot wrap.
constexpr TimeNs kMaxTime = TimeNs{1} << 62;
// Sizes of the buffer lent for replies: around the Ethernet minimum and
// the exact sizes of each reply, tagged and untagged, and MTU-sized ones.
constexpr size_t kBufSizes[] = {0,  13, 42, 46,   59,   60,   61,   64,
                                85, 86, 89, 90,   100,  128,  1514, 1518,
                                64, 60, 60, 1522, 1522, 9018, 9022, 1600};

IpAddr V4(const uint8_t a[4]) { return Ipv4Mapped(a); }

IpAddr SolicitedNode(const IpAddr& a) {
  return {0xff, 0x02, 0, 0,    0,    0,     0,     0,
          0,    0,    0, 0x01, 0xff, a[13], a[14], a[15]};
}

IpAddr Load6(const uint8_t* p) {
  IpAddr a;
  std::memcpy(a.data(), p, 16);
  return a;
}

bool Same(const uint8_t* a, const uint8_t* b, size_t n) {
  return std::memcmp(a, b, n) == 0;
}

// A stack plus what the checks need to know about it.
struct Host {
  MacAddr mac;
  std::vector<NetAddress> addresses;
  NeighbourCache cache;
  NetStack stack;
  std::optional<uint16_t> vlan;

  Host(const MacAddr& m, std::vector<NetAddress> a)
      : mac(m), addresses(std::move(a)), stack(m, addresses, &cache) {}
  bool HasV4() const {
    return std::any_of(addresses.begin(), addresses.end(),
                       [](const NetAddress& a) { return !a.ipv6; });
  }
  // The index-th IPv4 / IPv6 address (the link-local one included).
  std::optional<IpAddr> Address(bool ipv6, unsigned index) const {
    std::vector<IpAddr> v;
    for (const NetAddress& a : addresses) {
      if (a.ipv6 == ipv6) v.push_back(a.ip);
    }
    if (ipv6) v.push_back(stack.link_local());
    if (v.empty()) return std::nullopt;
    return v[index % v.size()];
  }
};

using Counters = std::array<uint64_t, sizeof(NetCounters) / sizeof(uint64_t)>;
static_assert(sizeof(NetCounters) % sizeof(uint64_t) == 0);

Counters Snapshot(const NetStack& s) {
  Counters c;
  std::memcpy(c.data(), &s.counters(), sizeof(NetCounters));
  return c;
}

void CheckMonotonic(const Counters& before, const NetStack& s) {
  Counters after = Snapshot(s);
  for (size_t i = 0; i < after.size(); ++i) FUZZ_CHECK(after[i] >= before[i]);
}

uint64_t RxSum(const NetCounters& c) {
  // IGMP/MLD queries count in rx_group_queries; no multicast group is
  // joined here (set_groups is never called), so none is answered.
  return c.rx_arp_requests + c.rx_arp_replies + c.rx_nd_solicits +
         c.rx_nd_adverts + c.rx_icmp_echo + c.rx_icmpv6_echo + c.rx_nic +
         c.rx_not_for_us + c.rx_unhandled + c.rx_malformed + c.rx_bad_checksum +
         c.rx_group_queries;
}
uint64_t TxReplySum(const NetCounters& c) {
  return c.tx_arp_replies + c.tx_icmp_echo_reply + c.tx_icmpv6_echo_reply +
         c.tx_nd_adverts;
}

struct Eth {
  size_t l3 = 14;
  bool tagged = false;
  uint16_t tci = 0;
  uint16_t type = 0;
};

std::optional<Eth> ParseEth(std::span<const uint8_t> f) {
  if (f.size() < 14) return std::nullopt;
  Eth e;
  e.type = LoadBe16(&f[12]);
  if (e.type == kEtherTypeVlan) {
    if (f.size() < 18) return std::nullopt;
    e.tagged = true;
    e.tci = LoadBe16(&f[14]);
    e.type = LoadBe16(&f[16]);
    e.l3 = 18;
  }
  return e;
}

// `reply` answers `req`, received by `h`.
void CheckReply(const Host& h, std::span<const uint8_t> req,
                std::span<const uint8_t> reply) {
  FUZZ_CHECK(reply.size() >= NetStack::kMinFrame);
  std::optional<Eth> q = ParseEth(req);
  std::optional<Eth> r = ParseEth(reply);
  FUZZ_CHECK(q.has_value() && r.has_value());
  FUZZ_CHECK(Same(reply.data() + 6, h.mac.data(), 6));
  FUZZ_CHECK(r->tagged == q->tagged && r->tci == q->tci);
  FUZZ_CHECK(r->type == q->type);
  const uint8_t* qi = req.data() + q->l3;
  const uint8_t* ri = reply.data() + r->l3;
  const size_t avail = reply.size() - r->l3;
  switch (r->type) {
    case kEtherTypeArp: {
      FUZZ_CHECK(avail >= 28);
      FUZZ_CHECK(LoadBe16(ri) == 1 && LoadBe16(ri + 2) == kEtherTypeIpv4);
      FUZZ_CHECK(ri[4] == 6 && ri[5] == 4 && LoadBe16(ri + 6) == 2);
      FUZZ_CHECK(Same(ri + 8, h.mac.data(), 6));
      FUZZ_CHECK(h.stack.IsOurAddress(V4(ri + 14)));
      FUZZ_CHECK(Same(ri + 14, qi + 24, 4));  // the address asked about
      FUZZ_CHECK(Same(ri + 18, qi + 8, 6));   // back to the asker
      FUZZ_CHECK(Same(ri + 24, qi + 14, 4));
      FUZZ_CHECK(Same(reply.data(), qi + 8, 6));
      break;
    }
    case kEtherTypeIpv4: {
      FUZZ_CHECK(avail >= 20 && (ri[0] >> 4) == 4);
      const size_t ihl = static_cast<size_t>(ri[0] & 0x0F) * 4;
      const size_t total = LoadBe16(ri + 2);
      FUZZ_CHECK(ihl >= 20 && total >= ihl + 8 && total <= avail);
      FUZZ_CHECK(InternetChecksum({ri, ihl}) == 0);
      FUZZ_CHECK(total == LoadBe16(qi + 2) && (qi[0] & 0x0F) == (ri[0] & 0x0F));
      FUZZ_CHECK(ri[9] == 1);
      FUZZ_CHECK(h.stack.IsOurAddress(V4(ri + 12)));
      FUZZ_CHECK(Same(ri + 12, qi + 16, 4) && Same(ri + 16, qi + 12, 4));
      FUZZ_CHECK(Same(reply.data(), req.data() + 6, 6));
      const uint8_t* icmp = ri + ihl;
      FUZZ_CHECK(icmp[0] == 0 && icmp[1] == qi[ihl + 1]);
      FUZZ_CHECK(InternetChecksum({icmp, total - ihl}) == 0);
      FUZZ_CHECK(Same(icmp + 4, qi + ihl + 4, total - ihl - 4));
      break;
    }
    case kEtherTypeIpv6: {
      FUZZ_CHECK(avail >= 40 && (ri[0] >> 4) == 6 && ri[6] == 58);
      const size_t plen = LoadBe16(ri + 4);
      FUZZ_CHECK(plen >= 8 && 40 + plen <= avail);
      const IpAddr src = Load6(ri + 8);
      const IpAddr dst = Load6(ri + 24);
      const uint8_t* icmp = ri + 40;
      FUZZ_CHECK(h.stack.IsOurAddress(src));
      FUZZ_CHECK(Icmpv6Checksum(src, dst, {icmp, plen}) == 0);
      const IpAddr qsrc = Load6(qi + 8);
      if (icmp[0] == 129) {
        FUZZ_CHECK(ri[7] == 64 && icmp[1] == qi[41]);
        FUZZ_CHECK(plen == LoadBe16(qi + 4));
        FUZZ_CHECK(src == Load6(qi + 24) && dst == qsrc);
        FUZZ_CHECK(Same(icmp + 4, qi + 44, plen - 4));
        FUZZ_CHECK(Same(reply.data(), req.data() + 6, 6));
      } else {
        FUZZ_CHECK(icmp[0] == 136 && icmp[1] == 0 && ri[7] == 255);
        FUZZ_CHECK(plen >= 32 && Load6(icmp + 8) == src);
        FUZZ_CHECK(src == Load6(qi + 48));  // the target asked about
        FUZZ_CHECK(icmp[24] == 2 && icmp[25] == 1);
        FUZZ_CHECK(Same(icmp + 26, h.mac.data(), 6));
        const bool dad = qsrc == IpAddr{};
        FUZZ_CHECK(dst == (dad ? kAllNodes : qsrc));
        FUZZ_CHECK(((icmp[4] & 0x40) != 0) == !dad);  // Solicited flag
        if (dad) {
          constexpr uint8_t kAllNodesMac[6] = {0x33, 0x33, 0, 0, 0, 1};
          FUZZ_CHECK(Same(reply.data(), kAllNodesMac, 6));
        }
      }
      break;
    }
    default:
      FUZZ_CHECK(false && "reply of an unexpected ethertype");
  }
}

// Feeds `frame` to `h` with a reply buffer of `buf_size` bytes and checks
// the verdict, the reply and the counters.
RxVerdict Receive(Host& h, std::span<const uint8_t> frame, TimeNs now,
                  size_t buf_size, std::vector<uint8_t>* reply_out = nullptr) {
  const Counters before = Snapshot(h.stack);
  const NetCounters c0 = h.stack.counters();
  // Exactly the lent size on the heap: a write past it is an ASan report.
  std::vector<uint8_t> buf(buf_size);
  size_t len = 12345;
  const RxVerdict v = h.stack.Receive(
      frame, now, std::span<uint8_t>(buf.data(), buf_size), &len);
  const NetCounters& c1 = h.stack.counters();
  CheckMonotonic(before, h.stack);
  FUZZ_CHECK(RxSum(c1) == RxSum(c0) + 1);
  FUZZ_CHECK(c1.tx_arp_requests == c0.tx_arp_requests);
  FUZZ_CHECK(c1.tx_nd_solicits == c0.tx_nd_solicits);
  FUZZ_CHECK(TxReplySum(c1) == TxReplySum(c0) + (v == RxVerdict::kReply));
  FUZZ_CHECK((c1.rx_nic != c0.rx_nic) == (v == RxVerdict::kNic));
  FUZZ_CHECK(c1.reply_too_big <= c0.reply_too_big + 1);
  if (c1.reply_too_big != c0.reply_too_big) {
    FUZZ_CHECK(v == RxVerdict::kDropped);
  }
  if (v == RxVerdict::kNic) {
    // What the port's lcore then does with it (eal.lcores > 1): pick a
    // shard, reading only within the frame (an exact-size heap copy).
    static PortCmServices services;
    static const bool claimed =
        services.Claim(0x0000000001064E20ull, ~uint64_t{0}, 2).ok();
    FUZZ_CHECK(claimed);
    const std::vector<uint8_t> copy(frame.begin(), frame.end());
    for (uint32_t shards : {1u, 3u}) {
      const uint32_t to = ShardOf(copy.data(), copy.size(), shards, &services);
      FUZZ_CHECK(to == kAllShards ? shards > 1 : to < shards);
    }
  }
  if (v != RxVerdict::kReply) {
    FUZZ_CHECK(len == 0);  // RNIC frames and drops are never answered
    return v;
  }
  FUZZ_CHECK(len >= NetStack::kMinFrame && len <= buf_size);
  CheckReply(h, frame, {buf.data(), len});
  if (reply_out != nullptr) reply_out->assign(buf.begin(), buf.begin() + len);
  return v;
}

// A solicitation `h` built for `target` into a buffer of `buf_size`.
void CheckSolicit(const Host& h, const IpAddr& target, bool arp,
                  std::span<const uint8_t> f, size_t buf_size) {
  FUZZ_CHECK(f.size() >= NetStack::kMinFrame && f.size() <= buf_size);
  std::optional<Eth> e = ParseEth(f);
  FUZZ_CHECK(e.has_value());
  FUZZ_CHECK(Same(f.data() + 6, h.mac.data(), 6));
  FUZZ_CHECK(e->tagged == h.vlan.has_value());
  if (h.vlan.has_value()) FUZZ_CHECK(e->tci == *h.vlan);
  const uint8_t* p = f.data() + e->l3;
  const size_t avail = f.size() - e->l3;
  if (arp) {
    FUZZ_CHECK(e->type == kEtherTypeArp && avail >= 28);
    FUZZ_CHECK(Same(f.data(), kBroadcastMac.data(), 6));
    FUZZ_CHECK(LoadBe16(p) == 1 && LoadBe16(p + 2) == kEtherTypeIpv4);
    FUZZ_CHECK(p[4] == 6 && p[5] == 4 && LoadBe16(p + 6) == 1);
    FUZZ_CHECK(Same(p + 8, h.mac.data(), 6));
    FUZZ_CHECK(h.stack.IsOurAddress(V4(p + 14)));
    FUZZ_CHECK(Same(p + 24, target.data() + 12, 4));
    return;
  }
  FUZZ_CHECK(e->type == kEtherTypeIpv6 && avail >= 72);
  FUZZ_CHECK((p[0] >> 4) == 6 && LoadBe16(p + 4) == 32 && p[6] == 58);
  FUZZ_CHECK(p[7] == 255);
  const IpAddr src = Load6(p + 8);
  const IpAddr group = Load6(p + 24);
  FUZZ_CHECK(h.stack.IsOurAddress(src));
  FUZZ_CHECK(group == SolicitedNode(target));
  FUZZ_CHECK(f[0] == 0x33 && f[1] == 0x33 && Same(f.data() + 2, &group[12], 4));
  const uint8_t* ns = p + 40;
  FUZZ_CHECK(ns[0] == 135 && ns[1] == 0);
  FUZZ_CHECK(Icmpv6Checksum(src, group, {ns, 32}) == 0);
  FUZZ_CHECK(Load6(ns + 8) == target);
  FUZZ_CHECK(ns[24] == 1 && ns[25] == 1 && Same(ns + 26, h.mac.data(), 6));
}

// What a solicitation needs: Ethernet header, ARP or NS, padding.
size_t SolicitSize(const Host& h, bool arp) {
  return std::max<size_t>(NetStack::kMinFrame,
                          (h.vlan.has_value() ? 18 : 14) + (arp ? 28 : 72));
}

// The tidying a Receive op asks for (flag bits), so that mutated frames
// still reach the code behind the address, length and checksum checks.
void Tidy(const Host& h, uint8_t flags, uint8_t pick, std::vector<uint8_t>& f) {
  if (f.size() < 14) return;
  switch (flags & 3) {
    case 1:
      std::memcpy(f.data(), h.mac.data(), 6);
      break;
    case 2:
      std::memcpy(f.data(), kBroadcastMac.data(), 6);
      break;
    case 3: {
      const IpAddr g = SolicitedNode(*h.Address(true, pick));
      f[0] = f[1] = 0x33;
      std::memcpy(f.data() + 2, &g[12], 4);
      break;
    }
  }
  std::optional<Eth> e = ParseEth(f);
  if (!e.has_value()) return;
  uint8_t* p = f.data() + e->l3;
  const size_t avail = f.size() - e->l3;
  std::optional<IpAddr> v4 = h.Address(false, pick);
  const IpAddr v6 = *h.Address(true, pick);
  const bool addresses = (flags & 4) != 0;
  const bool lengths = (flags & 8) != 0;
  const bool checksums = (flags & 16) != 0;
  const bool headers = (flags & 32) != 0;
  if (e->type == kEtherTypeArp && avail >= 28) {
    if (headers) {
      StoreBe16(p, 1);
      StoreBe16(p + 2, kEtherTypeIpv4);
      p[4] = 6;
      p[5] = 4;
    }
    if (addresses && v4.has_value()) std::memcpy(p + 24, &(*v4)[12], 4);
  } else if (e->type == kEtherTypeIpv4 && avail >= 20) {
    if (headers) p[0] = static_cast<uint8_t>(0x40 | std::max(5, p[0] & 0x0F));
    size_t ihl = static_cast<size_t>(p[0] & 0x0F) * 4;
    if (lengths)
      StoreBe16(p + 2, static_cast<uint16_t>(std::min<size_t>(avail, 65535)));
    if (addresses && v4.has_value()) std::memcpy(p + 16, &(*v4)[12], 4);
    const size_t total = LoadBe16(p + 2);
    if (checksums && ihl <= avail) {
      StoreBe16(p + 10, 0);
      StoreBe16(p + 10, InternetChecksum({p, ihl}));
      if (total >= ihl + 4 && total <= avail && p[9] == 1) {
        StoreBe16(p + ihl + 2, 0);
        StoreBe16(p + ihl + 2, InternetChecksum({p + ihl, total - ihl}));
      }
    }
  } else if (e->type == kEtherTypeIpv6 && avail >= 40) {
    if (headers) {
      p[0] = static_cast<uint8_t>(0x60 | (p[0] & 0x0F));
      p[7] = 255;
    }
    if (lengths) {
      StoreBe16(p + 4,
                static_cast<uint16_t>(std::min<size_t>(avail - 40, 65535)));
    }
    const size_t plen = LoadBe16(p + 4);
    uint8_t* l4 = p + 40;
    if (addresses) {
      const IpAddr dst = (pick & 0x30) == 0x10   ? SolicitedNode(v6)
                         : (pick & 0x30) == 0x20 ? kAllNodes
                                                 : v6;
      std::memcpy(p + 24, dst.data(), 16);
      if (p[6] == 58 && plen >= 24 && 40 + plen <= avail &&
          (l4[0] == 135 || l4[0] == 136)) {
        std::memcpy(l4 + 8, v6.data(), 16);
      }
    }
    if (checksums && p[6] == 58 && plen >= 4 && 40 + plen <= avail) {
      StoreBe16(l4 + 2, 0);
      StoreBe16(l4 + 2,
                Icmpv6Checksum(Load6(p + 8), Load6(p + 24), {l4, plen}));
    }
  }
}

// Resolve through `h`; when it solicits a target `peer` owns, the peer must
// answer and the answer must teach `h` the peer's MAC.
void ResolveOp(Host& h, Host& peer, const IpAddr& target, TimeNs now,
               size_t buf_size) {
  const Counters before = Snapshot(h.stack);
  const NetCounters c0 = h.stack.counters();
  std::vector<uint8_t> buf(buf_size);
  size_t len = 12345;
  std::optional<MacAddr> mac = h.stack.Resolve(
      target, now, std::span<uint8_t>(buf.data(), buf_size), &len);
  CheckMonotonic(before, h.stack);
  const bool arp = IsIpv4Mapped(target);
  if (h.stack.IsOurAddress(target)) {
    FUZZ_CHECK(mac.has_value() && *mac == h.mac && len == 0);
    return;
  }
  const NetCounters& c1 = h.stack.counters();
  const uint64_t sent = arp ? c1.tx_arp_requests - c0.tx_arp_requests
                            : c1.tx_nd_solicits - c0.tx_nd_solicits;
  FUZZ_CHECK(sent == (len > 0 ? 1u : 0u));
  if (mac.has_value()) {
    FUZZ_CHECK(len == 0);
    return;
  }
  if (len == 0) return;
  CheckSolicit(h, target, arp, {buf.data(), len}, buf_size);
  if (!peer.stack.IsOurAddress(target)) return;
  std::vector<uint8_t> answer;
  FUZZ_CHECK(Receive(peer, {buf.data(), len}, now, 1600, &answer) ==
             RxVerdict::kReply);
  if (h.cache.size() >= NeighbourCache::Options{}.max_entries) return;
  FUZZ_CHECK(Receive(h, answer, now, 1600) == RxVerdict::kConsumed);
  size_t again = 0;
  std::vector<uint8_t> spare(1600);
  std::optional<MacAddr> learned =
      h.stack.Resolve(target, now, std::span<uint8_t>(spare), &again);
  FUZZ_CHECK(learned.has_value() && *learned == peer.mac && again == 0);
}

void BuildOp(Host& h, const IpAddr& target, bool arp, size_t buf_size) {
  const NetCounters c0 = h.stack.counters();
  std::vector<uint8_t> buf(buf_size);
  std::span<uint8_t> out(buf.data(), buf_size);
  const size_t len = arp ? h.stack.BuildArpRequest(target, out)
                         : h.stack.BuildNeighbourSolicit(target, out);
  const NetCounters& c1 = h.stack.counters();
  const uint64_t sent = arp ? c1.tx_arp_requests - c0.tx_arp_requests
                            : c1.tx_nd_solicits - c0.tx_nd_solicits;
  FUZZ_CHECK(sent == (len > 0 ? 1u : 0u));
  const bool can = (!arp || h.HasV4()) && buf_size >= SolicitSize(h, arp);
  FUZZ_CHECK((len > 0) == can);
  if (len > 0) CheckSolicit(h, target, arp, {buf.data(), len}, buf_size);
}

IpAddr PickTarget(Input& in, const Host& h, const Host& peer) {
  const uint8_t sel = in.U8();
  switch (sel % 8) {
    case 0:
      return V4(kPeer4);
    case 1:
      return kPeer6;
    case 2:
      return peer.stack.link_local();
    case 3:
      return h.Address((sel & 0x80) != 0 || !h.HasV4(), sel >> 3).value();
    case 4: {
      uint8_t a[4] = {in.U8(), in.U8(), in.U8(), in.U8()};
      return V4(a);
    }
    case 5: {
      std::vector<uint8_t> b = in.Bytes(16);
      b.resize(16);
      return Load6(b.data());
    }
    case 6: {
      uint8_t a[4] = {10, 77, 0, in.U8()};
      return V4(a);
    }
    default: {
      IpAddr a = kPeer6;
      a[15] = in.U8();
      return a;
    }
  }
}

size_t PickSize(Input& in) {
  const uint8_t s = in.U8();
  if (s >= 0xF0) return in.U16() % 10000;
  return kBufSizes[s % std::size(kBufSizes)];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t which = in.U8();
  const uint8_t prefix4 = in.U8();
  const uint8_t prefix6 = in.U8();
  std::vector<NetAddress> ours;
  if (which & 1)
    ours.push_back({V4(kOur4a), false, static_cast<uint8_t>(prefix4 % 33)});
  if (which & 2) ours.push_back({V4(kOur4b), false, 16});
  if (which & 4)
    ours.push_back({kOur6, true, static_cast<uint8_t>(prefix6 % 129)});
  Host h(kOurMac, ours);
  // The peer owns every target the round-trip checks expect answered.
  Host peer(kPeerMac, {{V4(kPeer4), false, 24}, {kPeer6, true, 64}});
  const uint8_t vlan = in.U8();
  const uint16_t vid = in.U16();
  if (vlan & 1) {
    h.vlan = vid;
    h.stack.set_vlan(vid);
  }
  TimeNs now = 1'000'000'000;
  Counters last = Snapshot(h.stack);
  while (!in.empty()) {
    const uint8_t op = in.U8();
    switch (op % 8) {
      case 0:
      case 1:
      case 2: {
        const uint8_t flags = in.U8();
        const uint8_t pick = in.U8();
        const size_t buf_size = PickSize(in);
        const size_t len = in.U16();
        std::vector<uint8_t> frame = in.Bytes(len);
        Tidy(h, flags, pick, frame);
        Receive(h, frame, now, buf_size);
        break;
      }
      case 3: {
        const uint32_t step = in.U32();
        const TimeNs unit = (op & 0x80) ? 1'000'000 : 1'000;
        now = std::min(kMaxTime, now + step * unit);
        break;
      }
      case 4: {
        const IpAddr target = PickTarget(in, h, peer);
        ResolveOp(h, peer, target, now, PickSize(in));
        break;
      }
      case 5: {
        const IpAddr target = PickTarget(in, h, peer);
        BuildOp(h, target, (op & 0x80) != 0, PickSize(in));
        break;
      }
      case 6: {
        const uint8_t f = in.U8();
        const uint16_t v = in.U16();
        if (f & 1) {
          h.vlan = v;
          h.stack.set_vlan(v);
        } else {
          h.vlan.reset();
          h.stack.set_vlan(std::nullopt);
        }
        break;
      }
      default: {
        if (op & 0x80) {
          h.cache.Expire(now);
          break;
        }
        // A static entry (from the config) always resolves, unless the
        // address is ours.
        const IpAddr ip = PickTarget(in, h, peer);
        const MacAddr mac = {in.U8(), in.U8(), in.U8(),
                             in.U8(), in.U8(), in.U8()};
        h.cache.AddStatic(ip, mac);
        std::vector<uint8_t> buf(128);
        size_t len = 1;
        std::optional<MacAddr> got =
            h.stack.Resolve(ip, now, std::span<uint8_t>(buf), &len);
        FUZZ_CHECK(got.has_value() && len == 0);
        FUZZ_CHECK(*got == (h.stack.IsOurAddress(ip) ? h.mac : mac));
        break;
      }
    }
    CheckMonotonic(last, h.stack);
    last = Snapshot(h.stack);
  }
  return 0;
}
