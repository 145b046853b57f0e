// rocemu-bench-pktio: the raw DPDK frame-forwarding ceiling of a link, for
// scripts/bench_link.sh. The figure is the RX rate at the receiver over a
// fixed window that opens --warmup seconds after the first frame arrives
// (frames the sender pushes but the receiver never sees do not count).
//
//   --mode tx    port 0 sends fixed-size frames for --seconds (total).
//   --mode rx    port 0 receives; keeps draining after the window until the
//                sender has been quiet for 0.5 s (a memif sender must not
//                see its peer vanish mid-traffic).
//   --mode loop  one lcore, port 0 sends and port 1 receives, draining port
//                1 after every TX burst: the way to measure kernel-backed
//                PMDs (af_packet over veth) on 2 cores, where a second
//                polling lcore starves the kernel's softirq work.
//   --mode ping  the latency ceiling (scripts/bench_perf.sh): port 0 sends
//                one frame and waits for it to come back, --iterations
//                times; prints the one-way latency (half the round trip)
//                as p50/p99/min in microseconds.
//   --mode pong  port 0 sends back every frame it receives, until the
//                pinger has been quiet for 0.5 s.
//   --apps       ping, pong: each end has an application process
//                (bench_app_link.h) that posts through shared memory and
//                spins on it for the peer's message; ping's figure is then
//                the applications' round trip through both processes and
//                the link, halved: the deployment's hand-overs with no
//                RNIC work (--app_cpu places the applications).
//
// Frames carry a real Ethernet header: source = the sending port's MAC,
// destination = --dst (broadcast by default; loop mode uses port 1's MAC),
// EtherType 0x88B5 (IEEE local experimental) so the peer kernel drops them
// at once instead of parsing a bogus IP header. The header is written once
// per buffer and the payload is left as is, like the RNIC's lent TX buffers.
//
// --work rnic (tx, rx, loop) adds what an RNIC must do per frame besides
// the PMD's part (bench_rnic_work.h): the sender builds a real RoCEv2 RDMA
// WRITE frame with the payload copied out of a --mr_mib region and its
// ICRC, the receiver checks the ICRC and copies the payload into its own
// region. --size is then the RoCE frame's size, and --opcode picks WRITE
// ONLY (74 bytes of headers and ICRC) or WRITE MIDDLE (58). A frame that
// fails the check is counted (icrc_errors, malformed) and makes the
// receiver exit with status 3 after its result.
//
//   rocemu-bench-pktio --mode tx|rx|loop --seconds N --size BYTES -- EAL...
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "emulator/port/bench_app_link.h"
#include "emulator/port/bench_rnic_work.h"
#include "verbs/server/json_writer.h"

ABSL_FLAG(std::string, mode, "rx", "tx, rx, loop, ping or pong");
ABSL_FLAG(uint32_t, iterations, 10000, "ping: round trips measured");
ABSL_FLAG(bool, yield_idle, false,
          "ping, pong: sched_yield() after a poll that found nothing, as "
          "rocemud does (eal.idle_yield), so that two of them can share one "
          "core as two daemons on one lcore do");
ABSL_FLAG(bool, apps, false,
          "ping, pong: an application process per end hands messages over "
          "through shared memory (bench_app_link.h)");
ABSL_FLAG(int32_t, app_cpu, -1,
          "--apps: the CPU of the application processes (-1: the "
          "scheduler's choice)");
ABSL_FLAG(double, seconds, 3,
          "tx: how long to send; rx/loop: the measurement window");
ABSL_FLAG(double, warmup, 1,
          "rx/loop: seconds after the first frame "
          "before the window opens");
ABSL_FLAG(double, wait, 10, "rx: give up if no frame arrives by then");
ABSL_FLAG(uint32_t, size, 4154, "frame bytes (without FCS)");
ABSL_FLAG(std::string, dst, "ff:ff:ff:ff:ff:ff",
          "tx: destination MAC (the peer's, or broadcast)");
ABSL_FLAG(std::string, work, "none",
          "tx/rx/loop: none (the raw ceiling) or rnic (RoCE frames with "
          "the ICRC and one copy out of / into a region per frame)");
ABSL_FLAG(std::string, opcode, "write_only",
          "--work rnic: write_only (with a RETH) or write_middle frames");
ABSL_FLAG(uint32_t, mr_mib, 64,
          "--work rnic: MiB of each side's region, walked a payload at a "
          "time so that it is not all in cache (perftest's buffers)");

using rocemu::emulator::AppLink;
using rocemu::emulator::RnicFrameWork;

namespace {

constexpr uint16_t kBurst = 32;
constexpr uint16_t kRing = 1024;
// Round trips before the measured ones: the first replies only prove the
// peer is up (memif connects asynchronously).
constexpr uint32_t kWarmup = 100;

struct Window {
  uint64_t packets = 0;
  uint64_t bytes = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  bool complete = false;  // the window ran its full length with traffic
};

bool SetUpPort(uint16_t port, rte_mempool* pool) {
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(port, 0, kRing, rte_socket_id(), nullptr, pool) !=
          0 ||
      rte_eth_tx_queue_setup(port, 0, kRing, rte_socket_id(), nullptr) != 0 ||
      rte_eth_dev_start(port) != 0) {
    return false;
  }
  rte_eth_promiscuous_enable(port);
  return true;
}

// TSC ticks in `seconds`.
// A result: one JSON line on stdout (the bench scripts read it).
void PrintResult(const nlohmann::ordered_json& result) {
  std::printf("%s\n", rocemu::verbs::DumpJson(result).c_str());
}

// Microseconds and rates to 3 decimals, as the scripts' tables show them.
double Round3(double v) { return rocemu::verbs::RoundToDecimals(v, 3); }

uint64_t Ticks(double seconds) {
  return static_cast<uint64_t>(seconds * static_cast<double>(rte_get_tsc_hz()));
}

// A frame of `size` bytes that starts with `header`; the payload is left as
// the buffer holds it.
void FillFrame(rte_mbuf* m, const uint8_t* header, uint32_t size) {
  std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), header, RTE_ETHER_HDR_LEN);
  m->data_len = static_cast<uint16_t>(size);
  m->pkt_len = size;
}

// Sends one burst of frames built from `header`, or by `work` when it is
// set; returns frames accepted.
uint16_t SendBurst(uint16_t port, rte_mempool* pool, const uint8_t* header,
                   uint32_t size, RnicFrameWork* work) {
  rte_mbuf* burst[kBurst];
  if (rte_pktmbuf_alloc_bulk(pool, burst, kBurst) != 0) return 0;
  for (rte_mbuf* m : burst) {
    if (work == nullptr) {
      FillFrame(m, header, size);
      continue;
    }
    const size_t len =
        work->Build({rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m)});
    m->data_len = static_cast<uint16_t>(len);
    m->pkt_len = static_cast<uint32_t>(len);
  }
  const uint16_t n = rte_eth_tx_burst(port, 0, burst, kBurst);
  if (n < kBurst) rte_pktmbuf_free_bulk(burst + n, kBurst - n);
  return n;
}

// Receives one burst from `port`, counting its frames if the window is
// open at `now`; with `work`, each frame gets the receiver's work (frames
// that fail it are counted there). Returns frames received (in or out of
// the window). One burst, not all that is queued: a receiver slower than
// its sender (the work mode) would otherwise stay here for the whole run
// with `now` stale, count frames after the window closed and then read
// the stale time as the sender gone quiet (an incomplete window).
uint16_t Drain(uint16_t port, uint64_t now, Window& w, RnicFrameWork* work) {
  rte_mbuf* burst[kBurst];
  const uint16_t n = rte_eth_rx_burst(port, 0, burst, kBurst);
  if (n > 0) {
    if (work != nullptr) {
      for (uint16_t i = 0; i < n; ++i) {
        // Ports here hand over whole frames in one segment (a 9 KiB data
        // room); a chained one would fail the ICRC check, visibly.
        work->Receive(
            {rte_pktmbuf_mtod(burst[i], const uint8_t*), burst[i]->data_len});
      }
    }
    if (w.start != 0 && now >= w.start && now < w.end) {
      w.packets += n;
      for (uint16_t i = 0; i < n; ++i) w.bytes += rte_pktmbuf_pkt_len(burst[i]);
    }
    rte_pktmbuf_free_bulk(burst, n);
  }
  return n;
}

// A frame of `size` bytes with `header`, or nullptr when the pool is empty.
rte_mbuf* NewFrame(rte_mempool* pool, const uint8_t* header, uint32_t size) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m != nullptr) FillFrame(m, header, size);
  return m;
}

// Sends `m` on port 0; a frame the PMD does not take is freed (false).
bool SendOne(rte_mbuf* m) {
  if (rte_eth_tx_burst(0, 0, &m, 1) == 1) return true;
  rte_pktmbuf_free(m);
  return false;
}

// One-way latency = half the round trip: p50/p99/min on stdout as JSON.
int PrintRoundTrips(std::vector<uint64_t>& rtt, uint32_t lost, bool apps) {
  if (rtt.empty()) {
    std::fprintf(stderr, "bench_pktio: no reply from the pong\n");
    return 1;
  }
  const uint64_t hz = rte_get_tsc_hz();
  std::sort(rtt.begin(), rtt.end());
  auto one_way_us = [&](size_t i) {
    return static_cast<double>(rtt[i]) / static_cast<double>(hz) * 1e6 / 2;
  };
  PrintResult({{"mode", "ping"},
               {"apps", apps},
               {"iterations", rtt.size()},
               {"p50_us", Round3(one_way_us(rtt.size() / 2))},
               {"p99_us", Round3(one_way_us(rtt.size() * 99 / 100))},
               {"min_us", Round3(one_way_us(0))},
               {"lost", lost}});
  std::fflush(stdout);
  return 0;
}

// Ping: one frame out, wait for it back; the first replies only prove the
// pong is up (memif connects asynchronously) and are not measured.
int RunPing(rte_mempool* pool, const uint8_t* header, uint32_t size) {
  const uint64_t hz = rte_get_tsc_hz();
  const bool yield_idle = absl::GetFlag(FLAGS_yield_idle);
  const uint64_t give_up = rte_rdtsc() + Ticks(absl::GetFlag(FLAGS_wait));
  const uint32_t iterations = absl::GetFlag(FLAGS_iterations);
  std::vector<uint64_t> rtt;
  rtt.reserve(iterations);
  uint32_t lost = 0;
  uint32_t warm = 0;
  while (rtt.size() < iterations) {
    rte_mbuf* m = NewFrame(pool, header, size);
    if (m == nullptr) return 1;
    const uint64_t t0 = rte_rdtsc();
    SendOne(m);
    // A frame not back within 10 ms is lost (the pong not up yet): resend.
    rte_mbuf* in[kBurst];
    uint16_t n = 0;
    uint64_t now = t0;
    while (n == 0 && now - t0 < hz / 100) {
      n = rte_eth_rx_burst(0, 0, in, kBurst);
      if (n == 0 && yield_idle) sched_yield();
      now = rte_rdtsc();
    }
    if (n > 0) rte_pktmbuf_free_bulk(in, n);
    if (n == 0) {
      ++lost;
      if (now > give_up) break;
      continue;
    }
    if (warm < kWarmup) {
      ++warm;
      continue;
    }
    rtt.push_back(now - t0);
  }
  return PrintRoundTrips(rtt, lost, false);
}

// Ping with an application per end (--apps): the application's posts go
// out as frames, a frame back lands for it. A post not answered in 10 ms
// (the pong not up yet) goes out again; only the warm-up can lose one.
int RunPingApps(rte_mempool* pool, const uint8_t* header, uint32_t size,
                AppLink* link) {
  const uint64_t hz = rte_get_tsc_hz();
  const bool yield_idle = absl::GetFlag(FLAGS_yield_idle);
  const uint64_t give_up = rte_rdtsc() + Ticks(absl::GetFlag(FLAGS_wait));
  uint64_t sent_for = 0;
  uint64_t sent_at = 0;
  uint32_t lost = 0;
  bool replied = false;
  while (link->done.v.load(std::memory_order_acquire) == 0) {
    bool moved = false;
    const uint64_t now = rte_rdtsc();
    const uint64_t post = link->post.v.load(std::memory_order_acquire);
    const bool resend = post == sent_for &&
                        link->land.v.load(std::memory_order_relaxed) < post &&
                        now - sent_at > hz / 100;
    if (post != sent_for || resend) {
      lost += resend ? 1 : 0;
      rte_mbuf* m = NewFrame(pool, header, size);
      if (m == nullptr) break;
      SendOne(m);
      sent_for = post;
      sent_at = now;
      moved = true;
    }
    rte_mbuf* in[kBurst];
    const uint16_t n = rte_eth_rx_burst(0, 0, in, kBurst);
    if (n > 0) {
      rte_pktmbuf_free_bulk(in, n);
      link->land.v.store(sent_for, std::memory_order_release);
      replied = true;
      moved = true;
    }
    if (!replied && now > give_up) break;
    if (!moved && yield_idle) sched_yield();
  }
  link->stop.v.store(1, std::memory_order_release);
  if (link->done.v.load(std::memory_order_acquire) == 0) {
    std::fprintf(stderr, "bench_pktio: no reply from the pong\n");
    return 1;
  }
  std::vector<uint64_t> rtt(link->samples(),
                            link->samples() + link->iterations);
  return PrintRoundTrips(rtt, lost, true);
}

// Pong: every frame goes back out as it came.
int RunPong() {
  const uint64_t hz = rte_get_tsc_hz();
  const bool yield_idle = absl::GetFlag(FLAGS_yield_idle);
  const uint64_t begin = rte_rdtsc();
  uint64_t last = 0;
  uint64_t echoed = 0;
  for (;;) {
    const uint64_t now = rte_rdtsc();
    if (last == 0 && now - begin > Ticks(absl::GetFlag(FLAGS_wait))) break;
    if (last != 0 && now - last > hz / 2) break;
    rte_mbuf* in[kBurst];
    const uint16_t n = rte_eth_rx_burst(0, 0, in, kBurst);
    if (n == 0) {
      if (yield_idle) sched_yield();
      continue;
    }
    last = now;
    const uint16_t sent = rte_eth_tx_burst(0, 0, in, n);
    if (sent < n) rte_pktmbuf_free_bulk(in + sent, n - sent);
    echoed += sent;
  }
  PrintResult({{"mode", "pong"}, {"echoed", echoed}});
  std::fflush(stdout);
  return echoed > 0 ? 0 : 1;
}

// Pong with an application (--apps): a frame in lands for it, each of its
// posts goes out as a frame.
int RunPongApps(rte_mempool* pool, const uint8_t* header, uint32_t size,
                AppLink* link) {
  const uint64_t hz = rte_get_tsc_hz();
  const bool yield_idle = absl::GetFlag(FLAGS_yield_idle);
  const uint64_t begin = rte_rdtsc();
  uint64_t last = 0;
  uint64_t landed = 0;
  uint64_t sent_for = 0;
  uint64_t echoed = 0;
  for (;;) {
    bool moved = false;
    const uint64_t now = rte_rdtsc();
    if (last == 0 && now - begin > Ticks(absl::GetFlag(FLAGS_wait))) break;
    if (last != 0 && now - last > hz / 2) break;
    rte_mbuf* in[kBurst];
    const uint16_t n = rte_eth_rx_burst(0, 0, in, kBurst);
    if (n > 0) {
      rte_pktmbuf_free_bulk(in, n);
      landed += n;
      link->land.v.store(landed, std::memory_order_release);
      last = now;
      moved = true;
    }
    const uint64_t post = link->post.v.load(std::memory_order_acquire);
    if (post != sent_for) {
      rte_mbuf* m = NewFrame(pool, header, size);
      if (m == nullptr) break;
      echoed += SendOne(m) ? 1 : 0;
      sent_for = post;
      moved = true;
    }
    if (!moved && yield_idle) sched_yield();
  }
  link->stop.v.store(1, std::memory_order_release);
  PrintResult({{"mode", "pong"}, {"apps", true}, {"echoed", echoed}});
  std::fflush(stdout);
  return echoed > 0 ? 0 : 1;
}

void TearDown(uint16_t ports) {
  for (uint16_t p = 0; p < ports; ++p) {
    rte_eth_dev_stop(p);
    rte_eth_dev_close(p);
  }
  rte_eal_cleanup();
}

void WriteHeader(uint8_t* header, const rte_ether_addr& dst,
                 const rte_ether_addr& src) {
  auto* eth = reinterpret_cast<rte_ether_hdr*>(header);
  eth->dst_addr = dst;
  eth->src_addr = src;
  eth->ether_type = rte_cpu_to_be_16(0x88B5);
}

}  // namespace

int main(int argc, char** argv) {
  // EAL arguments follow "--"; flags precede it.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  }
  std::vector<char*> eal = {argv[0]};
  for (int i = split + 1; i < argc; ++i) eal.push_back(argv[i]);
  absl::ParseCommandLine(split, argv);
  // The applications (--apps) start before the EAL, sharing none of it.
  const std::string mode = absl::GetFlag(FLAGS_mode);
  AppLink* link = nullptr;
  if (absl::GetFlag(FLAGS_apps)) {
    if (mode != "ping" && mode != "pong") {
      std::fprintf(stderr, "bench_pktio: --apps is for ping and pong\n");
      return 2;
    }
    constexpr uint32_t kSpin = 64;  // rocemu-perf's and the drop-in's wait
    link = rocemu::emulator::MapAppLink(
        kWarmup, mode == "ping" ? absl::GetFlag(FLAGS_iterations) : 0);
    if (link == nullptr ||
        rocemu::emulator::ForkApplication(
            link, mode == "ping", absl::GetFlag(FLAGS_app_cpu), kSpin) < 0) {
      std::fprintf(stderr, "bench_pktio: cannot start the application\n");
      return 1;
    }
  }
  if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0) {
    std::fprintf(stderr, "bench_pktio: EAL init failed\n");
    return 1;
  }
  const bool loop = mode == "loop";
  if (mode != "tx" && mode != "rx" && !loop && mode != "ping" &&
      mode != "pong") {
    std::fprintf(stderr,
                 "bench_pktio: --mode must be tx, rx, loop, ping or pong\n");
    return 2;
  }
  // A failed --vdev probe does not fail rte_eal_init: check the ports.
  const uint16_t ports = loop ? 2 : 1;
  if (rte_eth_dev_count_avail() < ports) {
    std::fprintf(stderr, "bench_pktio: need %u port(s), have %u\n", ports,
                 rte_eth_dev_count_avail());
    return 1;
  }
  const uint32_t size = absl::GetFlag(FLAGS_size);
  if (size < RTE_ETHER_HDR_LEN || size > 9216) {
    std::fprintf(stderr, "bench_pktio: --size out of range\n");
    return 2;
  }
  // af_xdp's UMEM chunk is one pool element, which must fit a 4 KiB page
  // (the data room netdev ports use, emulator/port/netdev_port.h; frames
  // up to 3456 bytes, after the kernel's 256-byte XDP headroom). Other
  // PMDs get 9 KiB (af_packet copies a whole ring frame into one mbuf).
  constexpr uint32_t kAfXdpDataRoom = 3712;
  bool af_xdp = false;
  for (uint16_t p = 0; p < ports; ++p) {
    rte_eth_dev_info info;
    af_xdp |= rte_eth_dev_info_get(p, &info) == 0 &&
              std::string_view(info.driver_name) == "net_af_xdp";
  }
  const uint32_t room = af_xdp ? kAfXdpDataRoom : 9216;
  if (af_xdp && size + 256 > kAfXdpDataRoom) {
    std::fprintf(stderr,
                 "bench_pktio: af_xdp carries frames of at most %u "
                 "bytes\n",
                 kAfXdpDataRoom - 256);
    return 2;
  }
  rte_mempool* pool = rte_pktmbuf_pool_create(
      "bench", 8191, 256, 0, static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + room),
      static_cast<int>(rte_socket_id()));
  if (pool == nullptr) {
    std::fprintf(stderr, "bench_pktio: mempool failed\n");
    return 1;
  }
  for (uint16_t p = 0; p < ports; ++p) {
    if (!SetUpPort(p, pool)) {
      std::fprintf(stderr, "bench_pktio: port %u setup failed\n", p);
      return 1;
    }
  }
  rte_ether_addr src{}, dst{};
  rte_eth_macaddr_get(0, &src);
  if (loop) {
    rte_eth_macaddr_get(1, &dst);
  } else if (rte_ether_unformat_addr(absl::GetFlag(FLAGS_dst).c_str(), &dst) !=
             0) {
    std::fprintf(stderr, "bench_pktio: bad --dst\n");
    return 2;
  }
  uint8_t header[RTE_ETHER_HDR_LEN];
  WriteHeader(header, dst, src);
  const std::string work_mode = absl::GetFlag(FLAGS_work);
  const std::string opcode = absl::GetFlag(FLAGS_opcode);
  if ((work_mode != "none" && work_mode != "rnic") ||
      (work_mode == "rnic" && (mode == "ping" || mode == "pong")) ||
      (opcode != "write_only" && opcode != "write_middle")) {
    std::fprintf(stderr,
                 "bench_pktio: --work is none or rnic (not with ping/pong), "
                 "--opcode write_only or write_middle\n");
    return 2;
  }
  std::optional<RnicFrameWork> work_state;
  if (work_mode == "rnic") {
    rocemu::protocol::MacAddr s, d;
    std::memcpy(s.data(), src.addr_bytes, s.size());
    std::memcpy(d.data(), dst.addr_bytes, d.size());
    auto w =
        RnicFrameWork::Create(size, opcode == "write_middle",
                              size_t{absl::GetFlag(FLAGS_mr_mib)} << 20, s, d);
    if (!w.ok()) {
      std::fprintf(stderr, "bench_pktio: %s\n",
                   std::string(w.status().message()).c_str());
      return 2;
    }
    work_state.emplace(*std::move(w));
  }
  RnicFrameWork* work = work_state ? &*work_state : nullptr;
  if (mode == "ping" || mode == "pong") {
    int rc;
    if (link != nullptr) {
      rc = mode == "ping" ? RunPingApps(pool, header, size, link)
                          : RunPongApps(pool, header, size, link);
    } else {
      rc = mode == "ping" ? RunPing(pool, header, size) : RunPong();
    }
    TearDown(ports);
    return rc;
  }

  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t window = Ticks(absl::GetFlag(FLAGS_seconds));
  const uint64_t warmup = Ticks(absl::GetFlag(FLAGS_warmup));
  const uint64_t begin = rte_rdtsc();
  uint64_t sent = 0;
  Window w;
  if (mode == "tx") {
    while (rte_rdtsc() - begin < window) {
      sent += SendBurst(0, pool, header, size, work);
    }
    w.start = begin;
    w.end = rte_rdtsc();
    w.complete = true;
    w.packets = sent;
    w.bytes = sent * size;
  } else if (loop) {
    const uint16_t rx_port = 1;
    uint64_t now = begin;
    while (true) {
      now = rte_rdtsc();
      if (w.start == 0 && now - begin > Ticks(absl::GetFlag(FLAGS_wait))) break;
      if (w.start != 0 && now >= w.end) {
        w.complete = true;
        break;
      }
      sent += SendBurst(0, pool, header, size, work);
      if (Drain(rx_port, now, w, work) > 0 && w.start == 0) {
        w.start = now + warmup;
        w.end = w.start + window;
      }
    }
    // Let the kernel hand over what is still in flight before stopping.
    const uint64_t quiet = rte_rdtsc();
    while (rte_rdtsc() - quiet < hz / 10) {
      Drain(rx_port, rte_rdtsc(), w, work);
    }
  } else {
    uint64_t last = 0;
    while (true) {
      const uint64_t now = rte_rdtsc();
      if (w.start == 0 && now - begin > Ticks(absl::GetFlag(FLAGS_wait))) break;
      if (last != 0 && now - last > hz / 2) break;  // the sender stopped
      if (Drain(0, now, w, work) > 0) {
        last = now;
        if (w.start == 0) {
          w.start = now + warmup;
          w.end = w.start + window;
        }
      }
    }
    // A window cut short by the sender stopping ends at its last frame.
    if (w.start != 0) {
      w.complete = last >= w.end;
      if (!w.complete) w.end = last > w.start ? last : w.start;
    }
  }
  const double secs =
      w.end > w.start ? static_cast<double>(w.end - w.start) / hz : 0;
  rte_eth_stats stats{};
  rte_eth_stats_get(loop ? 1 : 0, &stats);
  nlohmann::ordered_json result;
  result["mode"] = mode;
  result["work"] = work_mode;
  result["packets"] = w.packets;
  result["seconds"] = Round3(secs);
  result["mpps"] = rocemu::verbs::RoundToDecimals(
      secs > 0 ? static_cast<double>(w.packets) / secs / 1e6 : 0, 4);
  result["gbps"] =
      Round3(secs > 0 ? static_cast<double>(w.bytes) * 8 / secs / 1e9 : 0);
  result["complete"] = w.complete;
  result["sent"] = sent;
  result["imissed"] = stats.imissed;
  result["ierrors"] = stats.ierrors;
  result["rx_nombuf"] = stats.rx_nombuf;
  const bool failed =
      work != nullptr && (work->icrc_errors() > 0 || work->malformed() > 0);
  if (work != nullptr) {
    result["payload_bytes"] = work->payload_len();
    if (mode != "tx") {
      result["icrc_errors"] = work->icrc_errors();
      result["malformed"] = work->malformed();
      result["placed_bytes"] = work->placed_bytes();
    }
  }
  PrintResult(result);
  // The result is out before teardown, which memif has been seen to crash
  // in once its peer is gone.
  std::fflush(stdout);
  TearDown(ports);
  if (failed) {
    std::fprintf(stderr,
                 "bench_pktio: %lu frame(s) failed the ICRC check, %lu "
                 "malformed\n",
                 static_cast<unsigned long>(work->icrc_errors()),
                 static_cast<unsigned long>(work->malformed()));
    return 3;
  }
  return 0;
}
