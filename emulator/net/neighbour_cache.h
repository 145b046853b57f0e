// IP -> MAC resolution state of one port: entries learned from ARP and
// neighbour discovery expire after a timeout; static entries from the config
// never do. Misses are remembered so the resolver solicits at most once per
// retry interval per address.
//
// Thread-safe: with eal.lcores above 1 the shards' lcores look addresses up
// (on their control path) while the port's lcore learns from ARP and ND.
// Neither is per RoCE packet, so the lock costs the data path nothing.
#ifndef ROCEMU_EMULATOR_NET_NEIGHBOUR_CACHE_H_
#define ROCEMU_EMULATOR_NET_NEIGHBOUR_CACHE_H_

#include <cstdint>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "emulator/net/net_types.h"
#include "nic/clock.h"

namespace rocemu::emulator {

class NeighbourCache {
 public:
  struct Options {
    nic::TimeNs reachable_ns = 300'000'000'000;  // learned entry lifetime
    nic::TimeNs retry_ns = 1'000'000'000;        // between solicitations
    uint32_t max_solicits = 3;  // then give up until the next Lookup burst
    size_t max_entries = 4096;  // learned entries beyond this are not kept
  };

  NeighbourCache() : NeighbourCache(Options{}) {}
  explicit NeighbourCache(Options options) : options_(options) {}
  NeighbourCache(const NeighbourCache&) = delete;
  NeighbourCache& operator=(const NeighbourCache&) = delete;

  // Before use (the daemon configures a port's cache in place).
  void set_options(const Options& options) { options_ = options; }
  void AddStatic(const IpAddr& ip, const MacAddr& mac);
  // Forgets ip, whatever kind its entry is: a netdev port's entries are
  // the kernel's (added with AddStatic, removed when the kernel's go or
  // fail; port/netdev_watch.h).
  void Remove(const IpAddr& ip);
  // Records a mapping seen on the wire. `create` is false for traffic that
  // may only refresh an existing entry (RFC 826 merge rule, unsolicited NA).
  void Learn(const IpAddr& ip, const MacAddr& mac, nic::TimeNs now,
             bool create = true);
  // The MAC for ip if known and fresh.
  std::optional<MacAddr> Lookup(const IpAddr& ip, nic::TimeNs now) const;
  // Whether the caller should send a solicitation for ip now (records it).
  bool ShouldSolicit(const IpAddr& ip, nic::TimeNs now);
  // Drops expired learned entries; call from a slow timer, not per packet.
  size_t Expire(nic::TimeNs now);

  size_t size() const;

 private:
  struct Entry {
    MacAddr mac{};
    bool valid = false;
    bool is_static = false;
    nic::TimeNs expires = 0;
    nic::TimeNs last_solicit = 0;
    uint32_t solicits = 0;
  };
  Options options_;
  mutable std::mutex mu_;
  absl::flat_hash_map<IpAddr, Entry> entries_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_NET_NEIGHBOUR_CACHE_H_
