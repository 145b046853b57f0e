// The daemon's side of each port's frames: receive bursts into the RNIC
// and the net stack, the RNIC's frames out through fault injection,
// capture, loopback and the per-priority hold of paused traffic.
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_replace.h"
#include "emulator/daemon.h"
#include "emulator/logging.h"
#include "emulator/port/shard_dispatch.h"
#include "protocol/headers.h"
#include "protocol/multicast.h"
#include "protocol/pfc.h"

namespace rocemu::emulator {
namespace {

constexpr nic::TimeNs kReorderWait = 1'000'000;  // if no frame follows

// A RoCEv2 frame to an IP multicast group (a UD multicast SEND).
bool IsRoceToGroup(const uint8_t* d, uint32_t len) {
  return len >= protocol::kEthHeaderLen && protocol::IsIpMulticastMac(d) &&
         RoceBthOffset(d, len) != 0;
}

}  // namespace

absl::Status Daemon::OpenCaptures() {
  for (auto& p : ports_) {
    std::string rx = absl::StrReplaceAll(config_.capture.rx_path,
                                         {{"{port}", p->config.name}});
    std::string tx = absl::StrReplaceAll(config_.capture.tx_path,
                                         {{"{port}", p->config.name}});
    if (absl::Status s = p->rx_capture.Open(rx, config_.capture.snaplen,
                                            config_.capture.rotate_bytes);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = p->tx_capture.Open(tx, config_.capture.snaplen,
                                            config_.capture.rotate_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Daemon::SetCapture(bool enabled) {
  if (enabled == capture_on_) return absl::OkStatus();
  if (enabled) {
    absl::Status s = OpenCaptures();
    if (!s.ok()) {
      for (auto& p : ports_) {
        p->rx_capture.Close();
        p->tx_capture.Close();
      }
      return s;
    }
  } else {
    for (auto& p : ports_) {
      p->rx_capture.Close();
      p->tx_capture.Close();
    }
  }
  capture_on_ = enabled;
  ROCEMU_LOG_INFO("capture %s", enabled ? "on" : "off");
  return absl::OkStatus();
}

void Daemon::Capture(PcapWriter& writer, rte_mbuf* const* m, uint16_t n,
                     nic::TimeNs now) {
  if (!writer.is_open()) return;
  uint64_t wall = wall_base_ns_ + now;
  for (uint16_t i = 0; i < n; ++i) {
    writer.Write(
        {rte_pktmbuf_mtod(m[i], const uint8_t*), rte_pktmbuf_data_len(m[i])},
        wall);
  }
}

uint16_t Daemon::ApplyFaults(FaultInjector& faults, FaultState& held,
                             rte_mempool* pool, rte_mbuf** in, uint16_t n,
                             rte_mbuf** out, size_t out_cap, nic::TimeNs now) {
  size_t k = 0;
  // Delayed frames whose time has come go first (they were sent first).
  while (held.count > 0 && held.ring[held.head].release <= now && k < out_cap) {
    out[k++] = held.ring[held.head].m;
    held.head = (held.head + 1) % FaultState::kCapacity;
    --held.count;
  }
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = in[i];
    if (k + 2 >= out_cap) {  // no room left for faults: pass through
      out[k++] = m;
      continue;
    }
    switch (faults.Decide()) {
      case FaultAction::kPass:
        break;
      case FaultAction::kDrop:
        rte_pktmbuf_free(m);
        continue;
      case FaultAction::kCorrupt: {
        uint32_t bit = faults.CorruptBit(rte_pktmbuf_data_len(m));
        rte_pktmbuf_mtod(m, uint8_t*)[bit / 8] ^=
            static_cast<uint8_t>(1u << (bit % 8));
        break;
      }
      case FaultAction::kDuplicate:
        if (rte_mbuf* copy = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX)) {
          out[k++] = copy;
        }
        break;
      case FaultAction::kReorder:
        if (held.reorder == nullptr) {
          held.reorder = m;
          held.reorder_deadline = now + kReorderWait;
          continue;
        }
        break;
      case FaultAction::kDelay:
        if (held.count < FaultState::kCapacity) {
          size_t tail = (held.head + held.count) % FaultState::kCapacity;
          held.ring[tail] = {m, now + faults.delay_ns()};
          ++held.count;
          continue;
        }
        break;
    }
    out[k++] = m;
    // A held-back frame goes out right behind the frame that overtook it.
    if (held.reorder != nullptr && held.reorder != m) {
      out[k++] = held.reorder;
      held.reorder = nullptr;
    }
  }
  if (held.reorder != nullptr && now >= held.reorder_deadline && k < out_cap) {
    out[k++] = held.reorder;
    held.reorder = nullptr;
  }
  return static_cast<uint16_t>(k);
}

void Daemon::QueueTx(Port& port, rte_mbuf* m, uint8_t priority) {
  if (port.tx_count == std::size(port.tx_batch)) {
    ++port.counters.tx_dropped;
    rte_pktmbuf_free(m);
    return;
  }
  // The priority rides in the mbuf's user tag (unused on TX by the PMDs)
  // through fault injection and the backlog.
  m->hash.usr = priority;
  port.tx_batch[port.tx_count++] = m;
}

uint16_t Daemon::HoldPaused(Port& port, uint8_t paused) {
  rte_mbuf* held[Port::kBacklog];
  uint16_t ready = 0, nheld = 0;
  for (uint16_t i = 0; i < port.tx_backlog_count; ++i) {
    rte_mbuf* m = port.tx_backlog[i];
    const uint32_t prio = m->hash.usr;
    if (prio < 8 && ((paused >> prio) & 1) != 0) {
      held[nheld++] = m;
    } else {
      port.tx_backlog[ready++] = m;
    }
  }
  std::memcpy(port.tx_backlog + ready, held, nheld * sizeof(rte_mbuf*));
  return ready;
}

// Frames to our own MAC (QPs of this RNIC talking to each other, or a UD
// AH to our own GID) never reach the wire: the RNIC loops them back, as a
// ConnectX does, after fault injection and capture saw them. A multicast
// SEND goes both ways: to the wire, and to this RNIC's QPs in the group
// (nic::Rnic skips the sender). Returns how many of pkts[0, n) remain for
// the wire, compacted in order.
uint16_t Daemon::LoopBack(Port& port, rte_mbuf** pkts, uint16_t n,
                          nic::TimeNs now) {
  const MacAddr& own = port.stack->mac();
  nic::RxFrame looped[2 * kTxBatch];
  rte_mbuf* looped_bufs[2 * kTxBatch];
  size_t nlooped = 0;
  uint16_t kept = 0;
  uint32_t kicks = 0;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t len = rte_pktmbuf_data_len(m);
    if (port.endpoint != nullptr && nlooped < std::size(looped) &&
        len >= own.size() && std::memcmp(d, own.data(), own.size()) == 0) {
      if (!port.shards.empty()) {
        rte_mbuf* mine = m;
        if (!DispatchToShards(port, &mine, &kicks)) {
          // Handed to another shard whole, or its ring was full.
          if (mine != nullptr) {
            rte_pktmbuf_free(mine);
          } else {
            ++port.counters.loopback_packets;
          }
          continue;
        }
      }
      looped[nlooped] = {d, len};
      looped_bufs[nlooped++] = m;
    } else {
      if (port.endpoint != nullptr && IsRoceToGroup(d, len)) {
        // Synchronous: the frame is read before the wire gets it. The
        // other shards hold a reference of their own.
        if (!port.shards.empty()) {
          rte_mbuf* copies = m;
          (void)DispatchToShards(port, &copies, &kicks);
        }
        const nic::RxFrame copy{d, len};
        ++port.counters.loopback_packets;
        port.endpoint->Receive(port.index, {&copy, 1}, now);
      }
      pkts[kept++] = m;
    }
  }
  KickShards(port, kicks);
  if (nlooped > 0) {
    port.counters.loopback_packets += nlooped;
    port.endpoint->Receive(port.index, {looped, nlooped}, now);
    rte_pktmbuf_free_bulk(looped_bufs, static_cast<unsigned>(nlooped));
  }
  return kept;
}

uint16_t Daemon::FlushTx(Port& port, nic::TimeNs now) {
  rte_mbuf* staged[2 * kTxBatch];  // fault injection may duplicate each
  rte_mbuf** pkts = port.tx_batch;
  uint16_t n = port.tx_count;
  port.tx_count = 0;
  if (port.tx_faults->enabled() && port.config.faults.tx) {
    n = ApplyFaults(*port.tx_faults, port.tx_held, port.dev->pool(), pkts, n,
                    staged, std::size(staged), now);
    pkts = staged;
  }
  if (n > 0) {
    Capture(port.tx_capture, pkts, n, now);
    n = LoopBack(port, pkts, n, now);
  }
  for (uint16_t i = 0; i < n; ++i) {
    if (port.tx_backlog_count == Port::kBacklog) {
      ++port.counters.tx_dropped;  // counted, never silent
      rte_pktmbuf_free(pkts[i]);
      continue;
    }
    port.tx_backlog[port.tx_backlog_count++] = pkts[i];
  }
  if (port.tx_backlog_count == 0) return 0;
  uint16_t ready = port.tx_backlog_count;
  if (port.endpoint != nullptr) {
    const uint8_t paused = port.endpoint->PausedPriorities(now);
    if (paused != 0) ready = HoldPaused(port, paused);
  }
  port.tx_paused_count = static_cast<uint16_t>(port.tx_backlog_count - ready);
  // A stopped port holds its frames as a disconnected link does.
  uint16_t consumed = 0;
  const uint16_t sent =
      ready == 0 || !port.dev->running()
          ? 0
          : port.dev->TxBurst(port.tx_backlog, ready, &consumed);
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < sent; ++i) {
    bytes += rte_pktmbuf_pkt_len(port.tx_backlog[i]);
  }
  port.counters.tx_packets += sent;
  port.counters.tx_bytes += bytes;
  if (sent < ready) ++port.counters.tx_ring_full;
  // Frames a contained memif fault took (consumed beyond sent) are gone
  // with the peer, as on a pulled cable.
  port.counters.tx_dropped += consumed - sent;
  if (consumed < port.tx_backlog_count) {
    std::memmove(port.tx_backlog, port.tx_backlog + consumed,
                 (port.tx_backlog_count - consumed) * sizeof(rte_mbuf*));
  }
  port.tx_backlog_count =
      static_cast<uint16_t>(port.tx_backlog_count - consumed);
  return sent;
}

bool Daemon::PollPort(unsigned index, nic::TimeNs now) {
  Port& port = *ports_[index];
  nic::FrameEndpoint* const endpoint = port.endpoint;
  bool endpoint_due = endpoint != nullptr && now >= port.next_event;
  rte_mbuf* rx[kRxBurst];
  rte_mbuf* staged[kRxBurst * 3];
  uint32_t kicks = 0;
  uint16_t n = port.dev->running() ? port.dev->RxBurst(rx, kRxBurst) : 0;
  bool busy = n > 0;
  for (uint16_t i = 0; i < n; ++i) {
    port.counters.rx_bytes += rte_pktmbuf_pkt_len(rx[i]);
  }
  port.counters.rx_packets += n;
  rte_mbuf** pkts = rx;
  if (port.rx_faults->enabled() && port.config.faults.rx) {
    n = ApplyFaults(*port.rx_faults, port.rx_held, port.dev->pool(), rx, n,
                    staged, std::size(staged), now);
    pkts = staged;
  }
  if (n > 0) {
    Capture(port.rx_capture, pkts, n, now);
    nic::RxFrame frames[std::size(staged)];
    size_t nic_frames = 0;
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = pkts[i];
      if (m->nb_segs > 1) {
        ++port.counters.rx_segmented;
        continue;
      }
      if (port.spare == nullptr) {
        port.spare = rte_pktmbuf_alloc(port.dev->pool());
      }
      std::span<uint8_t> reply;
      if (port.spare != nullptr) {
        reply = {rte_pktmbuf_mtod(port.spare, uint8_t*),
                 std::min<size_t>(rte_pktmbuf_tailroom(port.spare),
                                  port.dev->max_frame())};
      }
      size_t reply_len = 0;
      std::span<const uint8_t> data(rte_pktmbuf_mtod(m, const uint8_t*),
                                    rte_pktmbuf_data_len(m));
      switch (port.stack->Receive(data, now, reply, &reply_len)) {
        case RxVerdict::kReply:
          port.spare->data_len = static_cast<uint16_t>(reply_len);
          port.spare->pkt_len = static_cast<uint32_t>(reply_len);
          QueueTx(port, port.spare);
          port.spare = nullptr;
          break;
        case RxVerdict::kNic:
          if (port.ingress != nullptr && endpoint != nullptr &&
              port.ingress->Enqueue(m, now) !=
                  IngressCongestion::Offer::kPass) {
            pkts[i] = nullptr;  // queued (or tail-dropped and freed)
            break;
          }
          if (!port.shards.empty() && endpoint != nullptr &&
              !DispatchToShards(port, &pkts[i], &kicks)) {
            break;  // another shard's (pkts[i] is null once handed over)
          }
          // The stack verified the IPv4 header checksum (kNic).
          frames[nic_frames++] = {data.data(),
                                  static_cast<uint32_t>(data.size()), true};
          break;
        case RxVerdict::kConsumed:
        case RxVerdict::kDropped:
          break;
      }
    }
    if (nic_frames > 0) {
      if (endpoint != nullptr) {
        endpoint->Receive(static_cast<uint16_t>(index), {frames, nic_frames},
                          now);
        endpoint_due = true;
      } else {
        port.counters.rx_nic_no_endpoint += nic_frames;
      }
    }
    rte_pktmbuf_free_bulk(pkts, n);
    KickShards(port, kicks);
  }

  if (port.ingress != nullptr && endpoint != nullptr &&
      PollIngress(port, now)) {
    busy = true;
    endpoint_due = true;
  }

  // Back-pressure: with a burst already waiting for the wire, the RNIC
  // keeps its frames (it is asked again next pass). Waiting for room is
  // not progress: the loop yields, so that a peer sharing this core (the
  // daemon at the other end of a memif, an application) can drain it.
  if (endpoint != nullptr && endpoint_due &&
      port.tx_backlog_count - port.tx_paused_count >= kBurst) {
    ++port.counters.tx_backpressure;
  } else if (endpoint != nullptr && endpoint_due) {
    if (!port.tx_stash.Fill(port.dev->pool(), port.dev->max_frame())) {
      ++port.counters.tx_nombuf;
    }
    if (port.tx_stash.size() > 0) {
      const size_t filled = endpoint->Transmit(static_cast<uint16_t>(index),
                                               port.tx_stash.room(), now);
      rte_mbuf* built[kTxBurst];
      uint8_t priorities[kTxBurst];
      port.tx_stash.Take(filled, built, priorities);
      for (size_t i = 0; i < filled; ++i) {
        QueueTx(port, built[i], priorities[i]);
      }
    }
  }
  if (!port.shards.empty() && TakeShardTx(port) > 0) busy = true;
  // Frames still waiting for room are not progress either (Sleep() does
  // not sleep on them); frames held by a pause are not work at all: the
  // pause's end is an endpoint event (NextEventTime) that wakes the loop.
  busy |= FlushTx(port, now) > 0;
  // Received frames may also have gone to the congestion point, whose
  // departure time is one of the events. Set, never cleared here: a
  // PollPort from Sleep() is followed by a pass.
  if (endpoint_due || busy) endpoints_touched_ = true;
  return busy;
}

bool Daemon::PollIngress(Port& port, nic::TimeNs now) {
  bool did = false;
  rte_mbuf* out[kBurst];
  size_t n;
  uint32_t kicks = 0;
  while ((n = port.ingress->Dequeue(now, out)) > 0) {
    nic::RxFrame frames[kBurst];
    size_t local = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!port.shards.empty() && !DispatchToShards(port, &out[i], &kicks)) {
        continue;
      }
      // Queued by PollPort after the stack's checks (kNic).
      frames[local++] = {rte_pktmbuf_mtod(out[i], const uint8_t*),
                         rte_pktmbuf_data_len(out[i]), true};
    }
    if (local > 0) port.endpoint->Receive(port.index, {frames, local}, now);
    rte_pktmbuf_free_bulk(out, static_cast<unsigned>(n));
    did = true;
  }
  KickShards(port, kicks);
  // XOFF/XON to the link's senders: a MAC Control frame, never held by a
  // pause of our own.
  uint8_t pfc[protocol::kMacControlFrameLen];
  const size_t len = port.ingress->PollPfc(now, port.stack->mac(), pfc);
  if (len > 0) {
    rte_mbuf* m = rte_pktmbuf_alloc(port.dev->pool());
    if (m == nullptr) {
      ++port.counters.tx_nombuf;
      return did;
    }
    std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), pfc, len);
    m->data_len = static_cast<uint16_t>(len);
    m->pkt_len = static_cast<uint32_t>(len);
    QueueTx(port, m, kUnpausable);
    did = true;
  }
  return did;
}

bool Daemon::DispatchToShards(Port& port, rte_mbuf** mp, uint32_t* kicks) {
  rte_mbuf* m = *mp;
  const uint32_t shards = static_cast<uint32_t>(port.shards.size()) + 1;
  const uint32_t to =
      ShardOf(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m),
              shards, port.cm_services.get());
  if (to == 0) return true;
  if (to != kAllShards) {
    if (port.shards[to - 1]->Deliver(m)) {
      *kicks |= 1u << to;
      *mp = nullptr;
    } else {
      ++port.counters.rx_shard_ring_full;  // the caller frees it
    }
    return false;
  }
  // Every shard reads it: each holds a reference; shard 0's is the
  // caller's.
  for (uint32_t k = 1; k < shards; ++k) {
    rte_mbuf_refcnt_update(m, 1);
    if (port.shards[k - 1]->Deliver(m)) {
      *kicks |= 1u << k;
    } else {
      rte_mbuf_refcnt_update(m, -1);
      ++port.counters.rx_shard_ring_full;
    }
  }
  return true;
}

void Daemon::KickShards(Port& port, uint32_t kicks) {
  for (uint32_t k = 1; kicks >> k != 0; ++k) {
    if ((kicks >> k) & 1) port.shards[k - 1]->Kick();
  }
}

uint16_t Daemon::TakeShardTx(Port& port) {
  uint16_t taken = 0;
  for (auto& shard : port.shards) {
    // The same back-pressure as the first shard's (PollPort): with a burst
    // waiting for the wire, the shards keep their frames.
    if (port.tx_backlog_count - port.tx_paused_count >= kBurst) break;
    const unsigned room =
        static_cast<unsigned>(std::size(port.tx_batch) - port.tx_count);
    if (room == 0) break;
    rte_mbuf* got[kBurst];
    const unsigned n = shard->TakeTx(got, std::min<unsigned>(room, kBurst));
    for (unsigned i = 0; i < n; ++i) {
      QueueTx(port, got[i], static_cast<uint8_t>(got[i]->hash.usr));
    }
    taken = static_cast<uint16_t>(taken + n);
  }
  return taken;
}

nic::TimeNs Daemon::RefreshNextEvents() {
  nic::TimeNs next = nic::kNever;
  for (auto& p : ports_) {
    if (p->endpoint == nullptr) continue;
    if (p->ingress != nullptr) {
      next = std::min(next, p->ingress->NextEventTime());
    }
    p->next_event = p->endpoint->NextEventTime();
    next = std::min(next, p->next_event);
  }
  return next;
}

}  // namespace rocemu::emulator
