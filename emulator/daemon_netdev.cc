// The daemon's side of netdev ports (port/netdev_port.h): the interface
// chosen and claimed before the EAL starts, then what the kernel announces
// about it applied to the port's net stack, neighbour cache, filter and
// RNIC: addresses as GIDs (IBV_EVENT_GID_CHANGE), link state (port
// ACTIVE/DOWN events), MTU, MAC, neighbours, and the multicast groups the
// kernel joins for the RNIC.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "emulator/daemon.h"
#include "emulator/logging.h"

namespace rocemu::emulator {
namespace {

std::string FormatPrefix(const config::IpPrefix& p) {
  return absl::StrCat(config::FormatIp(p.addr, p.ipv6), "/", p.prefix_len);
}

bool IsLinkLocal(const InterfaceAddress& a) {
  return a.ipv6 && a.ip[0] == 0xfe && (a.ip[1] & 0xc0) == 0x80;
}

// The interface's addresses in GID order: IPv4, other IPv6, then IPv6
// link-local (the configured ports' order: addresses, then link-local),
// each group in the kernel's order.
std::vector<config::IpPrefix> GidOrder(const InterfaceState& st) {
  std::vector<config::IpPrefix> out;
  for (int pass = 0; pass < 3; ++pass) {
    for (const InterfaceAddress& a : st.addresses) {
      const int group = !a.ipv6 ? 0 : IsLinkLocal(a) ? 2 : 1;
      if (group == pass) out.push_back({a.ip, a.ipv6, a.prefix_len});
    }
  }
  return out;
}

}  // namespace

absl::Status Daemon::OpenNetdevs() {
  netdevs_.resize(config_.ports.size());
  for (unsigned i = 0; i < config_.ports.size(); ++i) {
    config::PortConfig& pc = config_.ports[i];
    if (pc.netdev.empty()) continue;
    auto& initial = initial_neighbours_[i];
    absl::StatusOr<std::unique_ptr<NetdevPort>> nd = NetdevPort::Open(
        pc, i, [&initial](const NeighbourUpdate& u) { initial.push_back(u); });
    if (!nd.ok()) return nd.status();
    netdevs_[i] = *std::move(nd);
    const InterfaceState& st = netdevs_[i]->state();
    pc.devargs = netdevs_[i]->devargs();
    pc.mtu = netdevs_[i]->LinkMtu();
    pc.addresses = GidOrder(st);
    if (st.mtu > netdevs_[i]->max_mtu()) {
      ROCEMU_LOG_WARNING(
          "port %s: %s has MTU %u; the RNIC uses frames of up to %u (%s)",
          pc.name, st.name, st.mtu, netdevs_[i]->max_mtu(),
          netdevs_[i]->af_xdp() ? "an AF_XDP buffer" : "an af_packet frame");
    }
  }
  return absl::OkStatus();
}

DpdkPort::Options Daemon::PortOptions(unsigned index) const {
  DpdkPort::Options o;
  if (index < netdevs_.size() && netdevs_[index] != nullptr) {
    const NetdevPort& nd = *netdevs_[index];
    o.rx_queues = nd.rx_queues();
    o.max_data_room = nd.af_xdp() ? NetdevPort::kAfXdpDataRoom : 0;
    o.max_mtu = nd.max_mtu();
    o.promiscuous = false;
  }
  return o;
}

absl::Status Daemon::AttachNetdev(Port& port) {
  if (port.index >= netdevs_.size() || netdevs_[port.index] == nullptr) {
    return absl::OkStatus();
  }
  port.netdev = std::move(netdevs_[port.index]);
  NetdevPort& nd = *port.netdev;
  port.stack->set_kernel_owned(true);
  port.stack->set_mac(nd.state().mac);
  for (const NeighbourUpdate& u : initial_neighbours_[port.index]) {
    ApplyKernelNeighbour(port, u);
  }
  initial_neighbours_.erase(port.index);
  if (absl::Status s = nd.AttachFilter(); !s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("port ", port.config.name, ": ", s.message()));
  }
  // A link that is down from the start is a port that is down.
  port.link_seen_up = true;
  ApplyAddresses(port);
  ROCEMU_LOG_INFO("port %s: netdev %s (index %d, %s), link %s",
                  port.config.name, nd.state().name, nd.state().index,
                  nd.Describe(), nd.state().up ? "up" : "down");
  return absl::OkStatus();
}

void Daemon::ApplyKernelNeighbour(Port& port, const NeighbourUpdate& u) {
  if (u.mac.has_value()) {
    port.neighbours.AddStatic(u.ip, *u.mac);
  } else {
    port.neighbours.Remove(u.ip);
  }
}

std::optional<MacAddr> Daemon::ResolveFromKernel(Port& port, const IpAddr& ip) {
  const nic::TimeNs now = clock_->Now();
  if (std::optional<MacAddr> mac = port.stack->Lookup(ip, now)) return mac;
  // The kernel resolves it (ARP/ND of its own, into its table), and the
  // answer reaches the cache through PollNetdevs.
  if (port.neighbours.ShouldSolicit(ip, now)) port.netdev->watch().Resolve(ip);
  return std::nullopt;
}

void Daemon::PollNetdevs() {
  for (auto& p : ports_) {
    if (p->netdev == nullptr) continue;
    Port& port = *p;
    const uint32_t changes = port.netdev->watch().Poll(
        [&](const NeighbourUpdate& u) { ApplyKernelNeighbour(port, u); });
    if (changes != 0) ApplyInterface(port, changes);
  }
}

void Daemon::ApplyInterface(Port& port, uint32_t changes) {
  const InterfaceState& st = port.netdev->state();
  const std::string& name = port.config.name;
  if (changes & NetdevWatch::kName) {
    ROCEMU_LOG_INFO(
        "port %s: the interface (index %d) is now named %s; the device "
        "keeps its name rocemu_%s",
        name, st.index, st.name, name);
  }
  if (changes & NetdevWatch::kGone) {
    ROCEMU_LOG_WARNING(
        "port %s: interface %s (index %d) was deleted or left this network "
        "namespace: the port is down and its GIDs are gone; restart rocemud "
        "once the interface is back",
        name, st.name, st.index);
  }
  if (changes & NetdevWatch::kMac) {
    ROCEMU_LOG_INFO("port %s: %s's MAC is now %s; the RNIC sends from it", name,
                    st.name, config::FormatMac(st.mac));
    port.stack->set_mac(st.mac);
    if (port.index < rnics_.size()) rnics_[port.index]->rnic().SetMac(st.mac);
    endpoints_touched_ = true;
  }
  if (changes & NetdevWatch::kMtu) ApplyMtu(port);
  if (changes & NetdevWatch::kAddresses) ApplyAddresses(port);
  if (changes & (NetdevWatch::kLink | NetdevWatch::kMtu)) {
    if (changes & NetdevWatch::kLink) {
      ROCEMU_LOG_INFO("port %s: %s is %s", name, st.name,
                      st.up ? "up" : "down");
    }
    UpdateLink(port);
  }
}

bool Daemon::NetdevLinkUp(const Port& port) const {
  return port.netdev->state().up && !port.mtu_too_small;
}

void Daemon::ApplyMtu(Port& port) {
  const NetdevPort& nd = *port.netdev;
  const uint32_t link_mtu = nd.LinkMtu();
  const bool any_v6 =
      std::any_of(port.config.addresses.begin(), port.config.addresses.end(),
                  [](const config::IpPrefix& a) { return a.ipv6; });
  const std::optional<nic::Mtu> mtu = nic::MtuForLinkMtu(link_mtu, any_v6);
  port.mtu_too_small = !mtu.has_value();
  if (!mtu.has_value()) {
    ROCEMU_LOG_ERROR(
        "port %s: %s's MTU is now %u, too small for a RoCEv2 frame (IB MTU "
        "256): the port is down until it grows",
        port.config.name, nd.state().name, nd.state().mtu);
    return;
  }
  port.config.mtu = link_mtu;
  const bool smaller = port.index < rnics_.size() &&
                       *mtu < rnics_[port.index]->rnic().port_attr().active_mtu;
  ROCEMU_LOG_INFO("port %s: %s's MTU is now %u: active MTU %s for new QPs%s",
                  port.config.name, nd.state().name, nd.state().mtu,
                  nic::MtuName(*mtu),
                  smaller ? " (QPs with a larger path MTU lose their larger "
                            "frames on the way and time out)"
                          : "");
  if (port.index < rnics_.size()) rnics_[port.index]->rnic().SetPortMtu(*mtu);
}

void Daemon::ApplyAddresses(Port& port) {
  const std::vector<config::IpPrefix> addrs = GidOrder(port.netdev->state());
  std::vector<NetAddress> stack_addrs;
  std::vector<IpAddr> gids;
  for (const config::IpPrefix& a : addrs) {
    stack_addrs.push_back({a.addr, a.ipv6, a.prefix_len});
    gids.push_back(a.addr);
  }
  port.stack->SetAddresses(stack_addrs);
  port.config.addresses = addrs;
  if (port.index < rnics_.size()) {
    nic::Rnic& rnic = rnics_[port.index]->rnic();
    nic::GidTable& table = rnic.gid_table();
    for (uint32_t i = 0; i < table.capacity(); ++i) {
      const std::optional<nic::Gid> g = table.Get(i);
      if (!g.has_value() ||
          std::find(gids.begin(), gids.end(), *g) != gids.end()) {
        continue;
      }
      if (rnic.RemoveGid(*g).ok()) {
        ROCEMU_LOG_INFO(
            "port %s: %s is no longer %s's: GID index %u removed (QPs "
            "sending from it time out)",
            port.config.name, config::FormatIp(*g, !IsIpv4Mapped(*g)),
            port.netdev->state().name, i);
      }
    }
    for (const config::IpPrefix& a : addrs) {
      if (table.Find(a.addr).has_value()) continue;
      absl::StatusOr<uint32_t> at = rnic.AddGid(a.addr);
      if (at.ok()) {
        ROCEMU_LOG_INFO("port %s: %s: GID index %u", port.config.name,
                        FormatPrefix(a), *at);
      } else {
        ROCEMU_LOG_WARNING("port %s: %s gets no GID: %s", port.config.name,
                           FormatPrefix(a), at.status().message());
      }
    }
    endpoints_touched_ = true;
  }
  UpdateNetdevDestinations(port);
}

void Daemon::UpdateNetdevDestinations(Port& port) {
  std::vector<IpAddr> dsts;
  for (const config::IpPrefix& a : port.config.addresses) {
    dsts.push_back(a.addr);
  }
  dsts.insert(dsts.end(), port.groups.begin(), port.groups.end());
  if (absl::Status s = port.netdev->SetDestinations(dsts); !s.ok()) {
    ROCEMU_LOG_ERROR("port %s: %s", port.config.name, s.ToString());
  }
}

void Daemon::JoinKernelGroups(Port& port) {
  for (const IpAddr& g : port.groups_joined) {
    if (absl::Status s = port.netdev->JoinGroup(g, true); !s.ok()) {
      ROCEMU_LOG_WARNING("port %s: joining %s: %s", port.config.name,
                         config::FormatIp(g, !IsIpv4Mapped(g)), s.message());
    }
  }
  for (const IpAddr& g : port.groups_left) {
    (void)port.netdev->JoinGroup(g, false);
  }
}

}  // namespace rocemu::emulator
