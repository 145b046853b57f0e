// IP addresses as RoCE v2 sees them (a GID is the IPv6 or IPv4-mapped
// address), rdma_cm service IDs, and the process's local port numbers.
#include <arpa/inet.h>
#include <infiniband/ib.h>

#include <cstring>
#include <random>
#include <set>

#include "nic/gid_table.h"
#include "verbs/rdmacm/cma.h"

namespace rocemu::rdmacm {
namespace {

std::set<std::pair<int, uint16_t>>& Ports() {
  static auto* s = new std::set<std::pair<int, uint16_t>>;
  return *s;
}

}  // namespace

bool SockaddrToGid(const sockaddr* sa, ibv_gid* gid) {
  if (sa == nullptr) return false;
  *gid = ibv_gid{};
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    gid->raw[10] = 0xff;
    gid->raw[11] = 0xff;
    std::memcpy(&gid->raw[12], &in->sin_addr, 4);
    return true;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    std::memcpy(gid->raw, &in6->sin6_addr, 16);
    return true;
  }
  return false;
}

bool IsIpv4Mapped(const uint8_t gid[16]) {
  nic::Gid g;
  std::memcpy(g.data(), gid, g.size());
  return nic::GidIsIpv4Mapped(g);
}

void GidToSockaddr(const uint8_t gid[16], uint16_t port,
                   sockaddr_storage* out) {
  std::memset(out, 0, sizeof(*out));
  if (IsIpv4Mapped(gid)) {
    auto* in = reinterpret_cast<sockaddr_in*>(out);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, gid + 12, 4);
    return;
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  std::memcpy(&in6->sin6_addr, gid, 16);
}

socklen_t SockaddrLen(const sockaddr* sa) {
  if (sa == nullptr) return 0;
  switch (sa->sa_family) {
    case AF_INET:
      return sizeof(sockaddr_in);
    case AF_INET6:
      return sizeof(sockaddr_in6);
    case AF_IB:
      return sizeof(sockaddr_ib);
    default:
      return 0;
  }
}

bool IsWildcard(const sockaddr* sa) {
  if (sa == nullptr) return true;
  if (sa->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr ==
           htonl(INADDR_ANY);
  }
  if (sa->sa_family == AF_INET6) {
    return IN6_IS_ADDR_UNSPECIFIED(
        &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  }
  return false;
}

bool IsLoopback(const sockaddr* sa) {
  if (sa == nullptr) return false;
  if (sa->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >>
            24) == IN_LOOPBACKNET;
  }
  if (sa->sa_family == AF_INET6) {
    return IN6_IS_ADDR_LOOPBACK(
        &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  }
  return false;
}

bool IsAnyAddr(const sockaddr* sa) { return IsWildcard(sa) || IsLoopback(sa); }

void SetLoopback(sockaddr_storage* ss) {
  if (ss->ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(ss)->sin6_addr = in6addr_loopback;
  } else {
    ss->ss_family = AF_INET;
    reinterpret_cast<sockaddr_in*>(ss)->sin_addr.s_addr =
        htonl(INADDR_LOOPBACK);
  }
}

uint16_t PortOf(const sockaddr* sa) {
  if (sa == nullptr) return 0;
  if (sa->sa_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  }
  if (sa->sa_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  }
  return 0;
}

void SetPort(sockaddr* sa, uint16_t port) {
  if (sa->sa_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(sa)->sin_port = htons(port);
  } else if (sa->sa_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(sa)->sin6_port = htons(port);
  }
}

uint64_t ServiceId(rdma_port_space ps, uint16_t port) {
  return (uint64_t{static_cast<uint32_t>(ps)} << 16) | port;
}

int ReservePort(rdma_port_space ps, uint16_t port, uint16_t* out) {
  auto& used = Ports();
  if (port != 0) {
    if (!used.emplace(static_cast<int>(ps), port).second) return EADDRINUSE;
    *out = port;
    return 0;
  }
  // An ephemeral port, starting somewhere random as the kernel does.
  constexpr uint16_t kLow = 32768;
  constexpr uint16_t kHigh = 60999;
  static std::minstd_rand rng(std::random_device{}());
  const uint16_t start =
      static_cast<uint16_t>(kLow + rng() % (kHigh - kLow + 1));
  for (uint32_t i = 0; i <= kHigh - kLow; ++i) {
    const uint16_t p =
        static_cast<uint16_t>(kLow + (start - kLow + i) % (kHigh - kLow + 1));
    if (used.emplace(static_cast<int>(ps), p).second) {
      *out = p;
      return 0;
    }
  }
  return EADDRNOTAVAIL;
}

void ReleasePort(rdma_port_space ps, uint16_t port) {
  if (port != 0) Ports().erase({static_cast<int>(ps), port});
}

}  // namespace rocemu::rdmacm
