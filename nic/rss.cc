#include "nic/rss.h"

#include <cstring>

namespace rocemu::nic {

uint32_t ToeplitzHash(std::span<const uint8_t> key,
                      std::span<const uint8_t> input) {
  if (key.size() < 4) return 0;
  uint32_t hash = 0;
  // The 32-bit window of the key at the current input bit; the next key
  // bit shifts in from the right.
  uint32_t window = static_cast<uint32_t>(key[0]) << 24 |
                    static_cast<uint32_t>(key[1]) << 16 |
                    static_cast<uint32_t>(key[2]) << 8 | key[3];
  size_t next = 4;
  for (uint8_t byte : input) {
    const uint8_t in = next < key.size() ? key[next] : 0;
    ++next;
    for (int b = 7; b >= 0; --b) {
      if ((byte >> b) & 1) hash ^= window;
      window = window << 1 | ((in >> b) & 1);
    }
  }
  return hash;
}

uint32_t RssPick(const RssConfig& rss, const FlowKey& k) {
  uint8_t in[36];
  size_t n = 0;
  auto add = [&](uint32_t off, size_t len) {
    std::memcpy(in + n, k.bytes.data() + off, len);
    n += len;
  };
  using namespace rx_hash;  // NOLINT
  if ((k.layers & flow_layer::kIpv4) != 0) {
    if (rss.fields & kSrcIpv4) add(flow_key::kSrcIp, 4);
    if (rss.fields & kDstIpv4) add(flow_key::kDstIp, 4);
  } else if ((k.layers & flow_layer::kIpv6) != 0) {
    if (rss.fields & kSrcIpv6) add(flow_key::kSrcIp, 16);
    if (rss.fields & kDstIpv6) add(flow_key::kDstIp, 16);
  }
  if ((k.layers & flow_layer::kTcp) != 0) {
    if (rss.fields & kSrcPortTcp) add(flow_key::kSrcPort, 2);
    if (rss.fields & kDstPortTcp) add(flow_key::kDstPort, 2);
  } else if ((k.layers & flow_layer::kUdp) != 0) {
    if (rss.fields & kSrcPortUdp) add(flow_key::kSrcPort, 2);
    if (rss.fields & kDstPortUdp) add(flow_key::kDstPort, 2);
  }
  const uint32_t h = ToeplitzHash(rss.key, {in, n});
  return rss.table[h & (rss.table.size() - 1)];
}

}  // namespace rocemu::nic
