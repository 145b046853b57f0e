// rocemu-bench-pktio: the raw DPDK frame-forwarding ceiling of a link, for
// scripts/bench_link.sh. One process sends fixed-size frames (header
// template written once per buffer, payload untouched, as the RNIC's lent
// TX buffers) for --seconds; the peer process receives and reports the rate
// from its first to its last frame as one JSON line.
//
//   rocemu-bench-pktio --mode tx|rx --seconds N --size BYTES -- EAL args...
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"

ABSL_FLAG(std::string, mode, "rx", "tx or rx");
ABSL_FLAG(double, seconds, 5, "how long to send / the receive deadline");
ABSL_FLAG(uint32_t, size, 4154, "frame bytes (without FCS)");

int main(int argc, char** argv) {
  // EAL arguments follow "--"; flags precede it.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) split = i;
  }
  std::vector<char*> eal = {argv[0]};
  for (int i = split + 1; i < argc; ++i) eal.push_back(argv[i]);
  absl::ParseCommandLine(split, argv);
  if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0) {
    std::fprintf(stderr, "bench_pktio: EAL init failed\n");
    return 1;
  }
  if (rte_eth_dev_count_avail() < 1) {
    std::fprintf(stderr, "bench_pktio: no port\n");
    return 1;
  }
  const bool tx = absl::GetFlag(FLAGS_mode) == "tx";
  const uint32_t size = absl::GetFlag(FLAGS_size);
  rte_mempool* pool = rte_pktmbuf_pool_create(
      "bench", 8191, 256, 0, RTE_PKTMBUF_HEADROOM + 9216,
      static_cast<int>(rte_socket_id()));
  rte_eth_conf conf{};
  const uint16_t port = 0;
  if (pool == nullptr || rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(port, 0, 1024, rte_socket_id(), nullptr, pool) !=
          0 ||
      rte_eth_tx_queue_setup(port, 0, 1024, rte_socket_id(), nullptr) != 0 ||
      rte_eth_dev_start(port) != 0) {
    std::fprintf(stderr, "bench_pktio: port setup failed\n");
    return 1;
  }
  rte_eth_promiscuous_enable(port);
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t duration = static_cast<uint64_t>(absl::GetFlag(FLAGS_seconds) *
                                                  static_cast<double>(hz));
  uint8_t header[42] = {
      0x02, 0, 0, 0,    0,    2,    0x02, 0, 0,
      0,    0, 1, 0x08, 0x00, 0x45, 0};  // Eth + IPv4 start; the rest is zero
  uint64_t packets = 0, bytes = 0, first = 0, last = 0;
  const uint64_t start = rte_rdtsc();
  rte_mbuf* burst[32];
  if (tx) {
    while (rte_rdtsc() - start < duration) {
      if (rte_pktmbuf_alloc_bulk(pool, burst, 32) != 0) continue;
      for (rte_mbuf* m : burst) {
        std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), header, sizeof(header));
        m->data_len = static_cast<uint16_t>(size);
        m->pkt_len = size;
      }
      uint16_t n = rte_eth_tx_burst(port, 0, burst, 32);
      if (n < 32) rte_pktmbuf_free_bulk(burst + n, 32 - n);
      packets += n;
      bytes += static_cast<uint64_t>(n) * size;
    }
    first = start;
    last = rte_rdtsc();
  } else {
    // Wait up to 3 s extra for the sender; stop 0.5 s after the last frame.
    while (true) {
      uint64_t now = rte_rdtsc();
      if (packets == 0 && now - start > duration + 3 * hz) break;
      if (packets > 0 && now - last > hz / 2) break;
      uint16_t n = rte_eth_rx_burst(port, 0, burst, 32);
      if (n == 0) continue;
      if (packets == 0) first = now;
      last = now;
      for (uint16_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(burst[i]);
      packets += n;
      rte_pktmbuf_free_bulk(burst, n);
    }
  }
  double secs = last > first ? static_cast<double>(last - first) / hz : 0;
  std::printf(
      "{\"mode\":\"%s\",\"packets\":%lu,\"seconds\":%.3f,\"mpps\":%.4f,"
      "\"gbps\":%.3f}\n",
      tx ? "tx" : "rx", static_cast<unsigned long>(packets), secs,
      secs > 0 ? packets / secs / 1e6 : 0.0,
      secs > 0 ? bytes * 8 / secs / 1e9 : 0.0);
  rte_eth_dev_stop(port);
  rte_eth_dev_close(port);
  rte_eal_cleanup();
  return 0;
}
