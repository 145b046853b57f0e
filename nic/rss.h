// Receive-side scaling (ibv_create_qp_ex with rx_hash_conf over an
// indirection table of WQs), as a ConnectX spreads a raw QP's frames: the
// Toeplitz hash of the fields asked for picks the table entry, a WQ (a
// receive-only raw packet QP), which takes the frame whole.
#ifndef ROCEMU_NIC_RSS_H_
#define ROCEMU_NIC_RSS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "nic/flow_table.h"

namespace rocemu::nic {

// ibv_rx_hash_fields bits.
namespace rx_hash {
inline constexpr uint64_t kSrcIpv4 = 1u << 0;
inline constexpr uint64_t kDstIpv4 = 1u << 1;
inline constexpr uint64_t kSrcIpv6 = 1u << 2;
inline constexpr uint64_t kDstIpv6 = 1u << 3;
inline constexpr uint64_t kSrcPortTcp = 1u << 4;
inline constexpr uint64_t kDstPortTcp = 1u << 5;
inline constexpr uint64_t kSrcPortUdp = 1u << 6;
inline constexpr uint64_t kDstPortUdp = 1u << 7;
inline constexpr uint64_t kSupported = (1u << 8) - 1;
}  // namespace rx_hash

inline constexpr size_t kRssKeyMax = 40;
// Largest indirection table (log2 of its entries).
inline constexpr uint32_t kRssLogTableMax = 6;

struct RssConfig {
  std::vector<uint8_t> key;     // Toeplitz key, at most kRssKeyMax bytes
  uint64_t fields = 0;          // rx_hash bits
  std::vector<uint32_t> table;  // WQ numbers, a power of two of them
};

// The Toeplitz hash of `input` under `key` (the 32 key bits starting at
// each set input bit, XORed); input beyond key.size() - 4 bytes adds 0.
uint32_t ToeplitzHash(std::span<const uint8_t> key,
                      std::span<const uint8_t> input);

// The entry of `rss.table` a frame of key `k` goes to: the hash of its
// selected fields in the order source address, destination address,
// source port, destination port (fields the frame lacks are left out).
uint32_t RssPick(const RssConfig& rss, const FlowKey& k);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_RSS_H_
