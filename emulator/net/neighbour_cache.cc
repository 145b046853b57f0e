#include "emulator/net/neighbour_cache.h"

#include <mutex>

namespace rocemu::emulator {

void NeighbourCache::AddStatic(const IpAddr& ip, const MacAddr& mac) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[ip];
  e.mac = mac;
  e.valid = true;
  e.is_static = true;
  e.expires = nic::kNever;
}

void NeighbourCache::Remove(const IpAddr& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(ip);
}

void NeighbourCache::Learn(const IpAddr& ip, const MacAddr& mac,
                           nic::TimeNs now, bool create) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(ip);
  if (it == entries_.end()) {
    if (!create || entries_.size() >= options_.max_entries) return;
    it = entries_.try_emplace(ip).first;
  }
  Entry& e = it->second;
  if (e.is_static) return;  // configuration wins over the wire
  e.mac = mac;
  e.valid = true;
  e.expires = now + options_.reachable_ns;
  e.solicits = 0;
}

std::optional<MacAddr> NeighbourCache::Lookup(const IpAddr& ip,
                                              nic::TimeNs now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(ip);
  if (it == entries_.end() || !it->second.valid || now >= it->second.expires) {
    return std::nullopt;
  }
  return it->second.mac;
}

bool NeighbourCache::ShouldSolicit(const IpAddr& ip, nic::TimeNs now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(ip);
  if (it == entries_.end()) {
    if (entries_.size() >= options_.max_entries) return false;
    it = entries_.try_emplace(ip).first;
  }
  Entry& e = it->second;
  if (e.is_static) return false;
  if (e.solicits > 0 && now - e.last_solicit < options_.retry_ns) {
    return false;
  }
  if (e.solicits >= options_.max_solicits) {
    // Start a new round only after a quiet period as long as a round.
    if (now - e.last_solicit < options_.retry_ns * options_.max_solicits) {
      return false;
    }
    e.solicits = 0;
  }
  ++e.solicits;
  e.last_solicit = now;
  return true;
}

size_t NeighbourCache::Expire(nic::TimeNs now) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t removed = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = it->second;
    bool stale_valid = e.valid && !e.is_static && now >= e.expires;
    bool stale_miss =
        !e.valid &&
        now - e.last_solicit >= options_.retry_ns * options_.max_solicits * 2;
    if (stale_valid || stale_miss) {
      entries_.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

size_t NeighbourCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace rocemu::emulator
