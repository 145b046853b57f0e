#include "emulator/port/memif_rx_interrupt.h"

#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "emulator/port/is_eventfd.h"
#include "emulator/port/self_mappings.h"

namespace rocemu::emulator {
namespace {

// The leading fields of net_memif's `struct memif_queue` in DPDK 22.11
// (drivers/net/memif/rte_eth_memif.h), as far as they are read here.
struct MemifQueue22_11 {
  void* mempool;
  void* pmd;
  int type;         // memif_ring_type_t
  uint16_t region;  // memif_region_index_t: rings live in region 0
  uint16_t in_port;
  uint32_t ring_offset;  // from the start of the region
  uint16_t last_head;
  uint16_t last_tail;
  void* buffers;
  uint64_t n_pkts;
  uint64_t n_bytes;
  rte_intr_handle* intr_handle;
  uint8_t log2_ring_size;
};

// The one mapping of a memif region 0 in this process that holds a ring
// with the memif cookie at `offset`; null if none or several do (several
// memif ports: which is whose cannot be told from the mappings).
uint8_t* FindRing(uint32_t offset, std::string* why) {
  uint8_t* found = nullptr;
  int candidates = 0;
  const bool read = ForEachSelfMapping(
      "memfd:memif_region_0", [&](uintptr_t begin, uintptr_t end) {
        if (end - begin < uint64_t{offset} + 8) return;
        auto* ring = reinterpret_cast<uint8_t*>(begin + offset);
        if (__atomic_load_n(reinterpret_cast<const uint32_t*>(ring),
                            __ATOMIC_RELAXED) != MemifRxInterrupt::kCookie) {
          return;
        }
        ++candidates;
        found = ring;
      });
  if (!read) {
    *why = "cannot read /proc/self/maps";
    return nullptr;
  }
  if (candidates == 1) return found;
  *why = candidates == 0 ? "no mapped memif region holds its ring"
                         : "several memif regions are mapped (one per port)";
  return nullptr;
}

}  // namespace

absl::Status MemifRxInterrupt::Resolve(uint16_t port_id) {
  Reset();
  if (port_id >= RTE_MAX_ETHPORTS) {
    return absl::InvalidArgumentError("no such port");
  }
  const auto* q =
      static_cast<const MemifQueue22_11*>(rte_eth_fp_ops[port_id].rxq.data[0]);
  if (q == nullptr || q->in_port != port_id || q->region != 0 ||
      q->log2_ring_size == 0 || q->log2_ring_size > 16 ||
      q->intr_handle == nullptr) {
    return absl::FailedPreconditionError(
        "the PMD's receive queue is not laid out as in DPDK 22.11");
  }
  const int fd = rte_intr_fd_get(q->intr_handle);
  if (fd < 0 || !IsEventFd(fd)) {
    return absl::FailedPreconditionError("its queue has no eventfd");
  }
  std::string why;
  uint8_t* ring = FindRing(q->ring_offset, &why);
  if (ring == nullptr) return absl::FailedPreconditionError(why);
  ring_ = ring;
  fd_ = fd;
  return absl::OkStatus();
}

}  // namespace rocemu::emulator
