#include "emulator/port/netdev_watch.h"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rocemu::emulator {
namespace {

// Announcements of a busy LAN's neighbour table can come in bursts: a
// buffer this size absorbs thousands before the kernel drops one (and Poll
// then reads everything again).
constexpr int kEventBuffer = 1 << 20;

struct CallbackContext {
  NetdevWatch* watch;
  const NetdevWatch::NeighbourFn* on_neighbour;
  uint32_t* changes;
  void (NetdevWatch::*handle)(const nlmsghdr*, const NetdevWatch::NeighbourFn&,
                              uint32_t*);
};

// Collects the attributes of one message into `tb`, indexed by type.
template <size_t N>
struct Attrs {
  const nlattr* tb[N] = {};
  static int Collect(const nlattr* attr, void* data) {
    auto* self = static_cast<Attrs*>(data);
    const int type = mnl_attr_get_type(attr);
    if (type >= 0 && static_cast<size_t>(type) < N) self->tb[type] = attr;
    return MNL_CB_OK;
  }
  const nlattr* operator[](int type) const {
    return type >= 0 && static_cast<size_t>(type) < N ? tb[type] : nullptr;
  }
};

// An address attribute as an IpAddr (IPv4 mapped), if it has the length
// its family says.
std::optional<IpAddr> AddressOf(const nlattr* attr, int family) {
  if (attr == nullptr) return std::nullopt;
  const auto* p = static_cast<const uint8_t*>(mnl_attr_get_payload(attr));
  const uint16_t len = mnl_attr_get_payload_len(attr);
  IpAddr ip{};
  if (family == AF_INET && len == 4) {
    ip[10] = 0xFF;
    ip[11] = 0xFF;
    std::memcpy(ip.data() + 12, p, 4);
    return ip;
  }
  if (family == AF_INET6 && len == 16) {
    std::memcpy(ip.data(), p, 16);
    return ip;
  }
  return std::nullopt;
}

mnl_socket* OpenSocket(unsigned groups, bool nonblocking) {
  mnl_socket* s = mnl_socket_open(NETLINK_ROUTE);
  if (s == nullptr) return nullptr;
  if (mnl_socket_bind(s, groups, MNL_SOCKET_AUTOPID) < 0) {
    mnl_socket_close(s);
    return nullptr;
  }
  if (nonblocking) {
    const int fd = mnl_socket_get_fd(s);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetdevWatch>> NetdevWatch::Open(
    std::string_view name, const NeighbourFn& on_neighbour) {
  std::unique_ptr<NetdevWatch> w(new NetdevWatch());
  const std::string n(name);
  w->state_.name = n;
  w->state_.index = static_cast<int>(if_nametoindex(n.c_str()));
  if (w->state_.index == 0) {
    return absl::NotFoundError(absl::StrCat("no network interface '", n,
                                            "' in this network namespace"));
  }
  w->buf_.resize(std::max<size_t>(MNL_SOCKET_BUFFER_SIZE, 64 << 10));
  // Subscribed first, read second: nothing that changes in between is
  // missed (it is then seen twice, which is harmless).
  w->events_ = OpenSocket(
      RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_NEIGH,
      /*nonblocking=*/true);
  w->requests_ = OpenSocket(0, /*nonblocking=*/false);
  w->resolver_ = OpenSocket(0, /*nonblocking=*/true);
  if (w->events_ == nullptr || w->requests_ == nullptr ||
      w->resolver_ == nullptr) {
    return absl::ErrnoToStatus(errno, "rtnetlink socket");
  }
  const int fd = mnl_socket_get_fd(w->events_);
  int size = kEventBuffer;
  // Beyond net.core.rmem_max only with CAP_NET_ADMIN; the smaller buffer
  // is fine otherwise (an overflow costs a re-read).
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  uint32_t changes = 0;
  for (uint16_t type : {RTM_GETLINK, RTM_GETADDR, RTM_GETNEIGH}) {
    if (absl::Status s = w->Dump(type, on_neighbour, &changes); !s.ok()) {
      return s;
    }
  }
  if (!w->state_.exists || w->state_.mtu == 0) {
    return absl::NotFoundError(
        absl::StrCat("network interface '", n, "' went away"));
  }
  return w;
}

NetdevWatch::~NetdevWatch() {
  for (mnl_socket* s : {events_, requests_, resolver_}) {
    if (s != nullptr) mnl_socket_close(s);
  }
}

int NetdevWatch::fd() const { return mnl_socket_get_fd(events_); }

absl::Status NetdevWatch::Dump(uint16_t type, const NeighbourFn& on_neighbour,
                               uint32_t* changes) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf_.data());
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = ++seq_;
  // Every RTM_GET* request starts with a family byte; the rest of the
  // family header is zero (all interfaces, all families).
  switch (type) {
    case RTM_GETLINK:
      mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg));
      break;
    case RTM_GETADDR:
      mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg));
      break;
    default:
      mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg));
      break;
  }
  if (mnl_socket_sendto(requests_, nlh, nlh->nlmsg_len) < 0) {
    return absl::ErrnoToStatus(errno, "rtnetlink request");
  }
  const unsigned portid = mnl_socket_get_portid(requests_);
  CallbackContext ctx{this, &on_neighbour, changes, &NetdevWatch::Handle};
  const auto cb = [](const nlmsghdr* m, void* data) {
    auto* c = static_cast<CallbackContext*>(data);
    (c->watch->*c->handle)(m, *c->on_neighbour, c->changes);
    return MNL_CB_OK;
  };
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(requests_, buf_.data(), buf_.size());
    if (n < 0) return absl::ErrnoToStatus(errno, "rtnetlink dump");
    const int ret =
        mnl_cb_run(buf_.data(), static_cast<size_t>(n), seq_, portid, cb, &ctx);
    if (ret == MNL_CB_STOP) return absl::OkStatus();
    if (ret < 0) return absl::ErrnoToStatus(errno, "rtnetlink dump");
  }
}

uint32_t NetdevWatch::Poll(const NeighbourFn& on_neighbour) {
  uint32_t changes = 0;
  CallbackContext ctx{this, &on_neighbour, &changes, &NetdevWatch::Handle};
  const auto cb = [](const nlmsghdr* m, void* data) {
    auto* c = static_cast<CallbackContext*>(data);
    (c->watch->*c->handle)(m, *c->on_neighbour, c->changes);
    return MNL_CB_OK;
  };
  bool lost = false;
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(events_, buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == ENOBUFS) {
        lost = true;
        continue;
      }
      break;  // EAGAIN: nothing more
    }
    (void)mnl_cb_run(buf_.data(), static_cast<size_t>(n), 0, 0, cb, &ctx);
  }
  if (lost && state_.exists) {
    // Announcements were dropped: whatever they said, a fresh read of the
    // link and its addresses says it too. Addresses the lost messages
    // removed are found by reading the list from scratch.
    const std::vector<InterfaceAddress> before = state_.addresses;
    state_.addresses.clear();
    uint32_t ignored = 0;
    for (uint16_t type : {RTM_GETLINK, RTM_GETADDR, RTM_GETNEIGH}) {
      (void)Dump(type, on_neighbour, type == RTM_GETADDR ? &ignored : &changes);
    }
    if (state_.addresses != before) changes |= kAddresses;
  }
  // Answers to Resolve (errors only: no acknowledgement is asked for),
  // read only after a Resolve: no syscall a millisecond for nothing.
  if (resolving_) {
    while (mnl_socket_recvfrom(resolver_, buf_.data(), buf_.size()) > 0) {
    }
    resolving_ = false;
  }
  return changes;
}

void NetdevWatch::Resolve(const IpAddr& ip) {
  if (!state_.exists) return;
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWNEIGH;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;
  nlh->nlmsg_seq = ++seq_;
  auto* ndm =
      static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  const bool v4 = IsIpv4Mapped(ip);
  ndm->ndm_family = v4 ? AF_INET : AF_INET6;
  ndm->ndm_ifindex = state_.index;
  ndm->ndm_state = NUD_NONE;
  // NTF_USE: an existing entry keeps its state, and the kernel resolves
  // (or re-confirms) it as if it had a packet to send.
  ndm->ndm_flags = NTF_USE;
  mnl_attr_put(nlh, NDA_DST, v4 ? 4 : 16, v4 ? ip.data() + 12 : ip.data());
  (void)mnl_socket_sendto(resolver_, nlh, nlh->nlmsg_len);
  resolving_ = true;
}

void NetdevWatch::Handle(const nlmsghdr* nlh, const NeighbourFn& on_neighbour,
                         uint32_t* changes) {
  switch (nlh->nlmsg_type) {
    case RTM_NEWLINK:
    case RTM_DELLINK:
      HandleLink(nlh, changes);
      break;
    case RTM_NEWADDR:
    case RTM_DELADDR:
      HandleAddress(nlh, changes);
      break;
    case RTM_NEWNEIGH:
    case RTM_DELNEIGH:
      HandleNeighbour(nlh, on_neighbour);
      break;
    default:
      break;
  }
}

void NetdevWatch::HandleLink(const nlmsghdr* nlh, uint32_t* changes) {
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(ifinfomsg)) return;
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  if (ifi->ifi_index != state_.index || !state_.exists) return;
  if (nlh->nlmsg_type == RTM_DELLINK) {
    state_.exists = false;
    if (state_.up) *changes |= kLink;
    state_.up = false;
    if (!state_.addresses.empty()) *changes |= kAddresses;
    state_.addresses.clear();
    *changes |= kGone;
    return;
  }
  Attrs<IFLA_MAX + 1> a;
  mnl_attr_parse(nlh, sizeof(ifinfomsg), &Attrs<IFLA_MAX + 1>::Collect, &a);
  if (const nlattr* n = a[IFLA_IFNAME];
      n != nullptr && mnl_attr_validate(n, MNL_TYPE_NUL_STRING) == 0) {
    const std::string name = mnl_attr_get_str(n);
    if (name != state_.name) {
      state_.name = name;
      *changes |= kName;
    }
  }
  if (const nlattr* m = a[IFLA_MTU];
      m != nullptr && mnl_attr_validate(m, MNL_TYPE_U32) == 0) {
    const uint32_t mtu = mnl_attr_get_u32(m);
    if (mtu != state_.mtu) {
      state_.mtu = mtu;
      *changes |= kMtu;
    }
  }
  if (const nlattr* m = a[IFLA_ADDRESS];
      m != nullptr && mnl_attr_get_payload_len(m) == 6) {
    MacAddr mac;
    std::memcpy(mac.data(), mnl_attr_get_payload(m), 6);
    if (mac != state_.mac) {
      state_.mac = mac;
      *changes |= kMac;
    }
  }
  // IFF_RUNNING is the RFC 2863 operational state: up, with a carrier.
  const bool up = (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_RUNNING);
  if (up != state_.up) {
    state_.up = up;
    *changes |= kLink;
  }
}

void NetdevWatch::HandleAddress(const nlmsghdr* nlh, uint32_t* changes) {
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(ifaddrmsg)) return;
  const auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(nlh));
  if (static_cast<int>(ifa->ifa_index) != state_.index) return;
  if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) return;
  Attrs<IFA_MAX + 1> a;
  mnl_attr_parse(nlh, sizeof(ifaddrmsg), &Attrs<IFA_MAX + 1>::Collect, &a);
  // IPv4: IFA_LOCAL is the interface's own address (IFA_ADDRESS is the
  // peer's on a point-to-point link); IPv6 has IFA_ADDRESS only.
  const nlattr* attr = a[IFA_LOCAL] != nullptr && ifa->ifa_family == AF_INET
                           ? a[IFA_LOCAL]
                           : a[IFA_ADDRESS];
  std::optional<IpAddr> ip = AddressOf(attr, ifa->ifa_family);
  if (!ip.has_value()) return;
  uint32_t flags = ifa->ifa_flags;
  if (const nlattr* f = a[IFA_FLAGS];
      f != nullptr && mnl_attr_validate(f, MNL_TYPE_U32) == 0) {
    flags = mnl_attr_get_u32(f);
  }
  const bool usable = nlh->nlmsg_type == RTM_NEWADDR &&
                      (flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED)) == 0;
  auto it =
      std::find_if(state_.addresses.begin(), state_.addresses.end(),
                   [&](const InterfaceAddress& x) { return x.ip == *ip; });
  if (usable) {
    const InterfaceAddress addr{*ip, ifa->ifa_family == AF_INET6,
                                ifa->ifa_prefixlen};
    if (it == state_.addresses.end()) {
      state_.addresses.push_back(addr);
      *changes |= kAddresses;
    } else if (*it != addr) {
      *it = addr;
      *changes |= kAddresses;
    }
  } else if (it != state_.addresses.end()) {
    state_.addresses.erase(it);
    *changes |= kAddresses;
  }
}

void NetdevWatch::HandleNeighbour(const nlmsghdr* nlh,
                                  const NeighbourFn& on_neighbour) {
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(ndmsg)) return;
  const auto* ndm = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(nlh));
  if (ndm->ndm_ifindex != state_.index || (ndm->ndm_flags & NTF_PROXY)) return;
  Attrs<NDA_MAX + 1> a;
  mnl_attr_parse(nlh, sizeof(ndmsg), &Attrs<NDA_MAX + 1>::Collect, &a);
  std::optional<IpAddr> ip = AddressOf(a[NDA_DST], ndm->ndm_family);
  if (!ip.has_value()) return;
  NeighbourUpdate u{*ip, std::nullopt};
  constexpr uint16_t kValid = NUD_REACHABLE | NUD_STALE | NUD_DELAY |
                              NUD_PROBE | NUD_PERMANENT | NUD_NOARP;
  if (nlh->nlmsg_type == RTM_NEWNEIGH && (ndm->ndm_state & kValid) != 0) {
    if (const nlattr* l = a[NDA_LLADDR];
        l != nullptr && mnl_attr_get_payload_len(l) == 6) {
      MacAddr mac;
      std::memcpy(mac.data(), mnl_attr_get_payload(l), 6);
      u.mac = mac;
    }
  }
  on_neighbour(u);
}

}  // namespace rocemu::emulator
