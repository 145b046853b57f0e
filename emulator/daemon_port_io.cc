// The daemon's side of each port's frames: receive bursts into the RNIC
// and the net stack, the RNIC's frames out through fault injection,
// capture, loopback and the per-priority hold of paused traffic.
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_replace.h"
#include "emulator/capture/mbuf_tag.h"
#include "emulator/daemon.h"
#include "emulator/logging.h"
#include "emulator/port/shard_dispatch.h"
#include "protocol/headers.h"
#include "protocol/multicast.h"
#include "protocol/pfc.h"

namespace rocemu::emulator {
namespace {

constexpr nic::TimeNs kReorderWait = 1'000'000;  // if no frame follows

// The probability, in parts per million, of the fault behind `r`.
uint64_t FaultPpm(const FaultInjector& f, nic::DropReason r) {
  FaultAction a = FaultAction::kPass;
  switch (r) {
    case nic::DropReason::kFaultDrop:
      a = FaultAction::kDrop;
      break;
    case nic::DropReason::kFaultCorrupt:
      a = FaultAction::kCorrupt;
      break;
    case nic::DropReason::kFaultDuplicate:
      a = FaultAction::kDuplicate;
      break;
    case nic::DropReason::kFaultReorder:
      a = FaultAction::kReorder;
      break;
    case nic::DropReason::kFaultDelay:
      a = FaultAction::kDelay;
      break;
    default:
      return 0;
  }
  return static_cast<uint64_t>(f.probability(a) * 1e6 + 0.5);
}

// What a daemon reason carried in a tag did to the frame.
nic::VerdictAction TagAction(nic::DropReason r) {
  switch (r) {
    case nic::DropReason::kFaultCorrupt:
      return nic::VerdictAction::kCorrupted;
    case nic::DropReason::kFaultDuplicate:
      return nic::VerdictAction::kDuplicated;
    case nic::DropReason::kFaultReorder:
    case nic::DropReason::kFaultDelay:
      return nic::VerdictAction::kHeld;
    case nic::DropReason::kCpEcnMark:
      return nic::VerdictAction::kMarked;
    default:
      return nic::VerdictAction::kDropped;
  }
}

// A RoCEv2 frame to an IP multicast group (a UD multicast SEND).
bool IsRoceToGroup(const uint8_t* d, uint32_t len) {
  return len >= protocol::kEthHeaderLen && protocol::IsIpMulticastMac(d) &&
         RoceBthOffset(d, len) != 0;
}

}  // namespace

absl::Status Daemon::OpenCaptures() {
  const bool ng = config_.capture.format == config::CaptureFormat::kPcapng;
  for (auto& p : ports_) {
    std::string rx = absl::StrReplaceAll(config_.capture.rx_path,
                                         {{"{port}", p->config.name}});
    std::string tx = absl::StrReplaceAll(config_.capture.tx_path,
                                         {{"{port}", p->config.name}});
    if (absl::Status s = p->rx_capture.Open(rx, config_.capture.snaplen,
                                            config_.capture.rotate_bytes, ng,
                                            p->config.name);
        !s.ok()) {
      return s;
    }
    // One path for both: one pcapng file, each frame with its direction.
    p->tx_out = rx == tx ? &p->rx_capture : &p->tx_capture;
    if (rx == tx) continue;
    if (absl::Status s = p->tx_capture.Open(tx, config_.capture.snaplen,
                                            config_.capture.rotate_bytes, ng,
                                            p->config.name);
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

void Daemon::FlushCaptures(nic::TimeNs now) {
  // Every 100 ms: whoever reads a capture while the daemon runs sees whole
  // blocks up to then.
  constexpr nic::TimeNs kCaptureFlushPeriod = 100'000'000;
  if (!capture_on_ || now < next_capture_flush_) return;
  next_capture_flush_ = now + kCaptureFlushPeriod;
  for (auto& p : ports_) {
    p->rx_capture.Flush();
    p->tx_capture.Flush();
  }
}

void Daemon::CaptureFrame(Port& port, CaptureWriter& writer, rte_mbuf* m,
                          capture::Direction dir, nic::TimeNs now,
                          const capture::DaemonVerdict* daemon) {
  if (!writer.is_open()) return;
  MbufTag& tag = Tag(m);
  if (tag.packet_id == 0) tag.packet_id = NextPacketId(port);
  capture::FrameMeta meta;
  if (writer.pcapng()) {
    capture::DaemonVerdict from_tag;
    if (tag.reason != nic::DropReason::kNone) {
      // What the daemon did to it on the way (a fault, an ECN mark).
      const bool tx = dir == capture::Direction::kOutbound;
      from_tag.reason = tag.reason;
      from_tag.action = TagAction(tag.reason);
      from_tag.args[0] =
          FaultPpm(tx ? *port.tx_faults : *port.rx_faults, tag.reason);
      from_tag.args[1] = tx;
      from_tag.args[2] = tag.arg;
      if (tag.reason == nic::DropReason::kCpEcnMark) from_tag.args[0] = tag.arg;
    }
    meta = capture::DescribeFrame(dir, tag.packet_id, port.verdicts, daemon,
                                  &port.note_scratch, &from_tag);
  }
  writer.Write({rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m)},
               wall_base_ns_ + now, meta);
}

void Daemon::DaemonDrop(Port& port, CaptureWriter* writer, rte_mbuf* m,
                        capture::Direction dir, nic::TimeNs now,
                        nic::DropReason r, nic::VerdictAction action,
                        uint64_t arg0, uint64_t arg1) {
  port.reasons.Add(r);
  if (writer == nullptr || !writer->is_open()) return;
  capture::DaemonVerdict v;
  v.reason = r;
  v.action = action;
  v.args[0] = arg0;
  v.args[1] = arg1;
  CaptureFrame(port, *writer, m, dir, now, &v);
}

uint16_t Daemon::ApplyFaults(Port& port, FaultInjector& faults,
                             FaultState& held, const FaultSite& site,
                             rte_mbuf** in, uint16_t n, rte_mbuf** out,
                             size_t out_cap, nic::TimeNs now) {
  const uint64_t tx = site.dir == capture::Direction::kOutbound;
  auto ppm = [&](FaultAction a) {
    return static_cast<uint64_t>(faults.probability(a) * 1e6 + 0.5);
  };
  // What was done to a frame that goes on: counted now, written into its
  // tag for whoever captures it.
  auto mark = [&](rte_mbuf* m, nic::DropReason r, uint32_t arg) {
    port.reasons.Add(r);
    MbufTag& t = Tag(m);
    t.reason = r;
    t.arg = arg;
  };
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
        DaemonDrop(port, site.capture, m, site.dir, now,
                   nic::DropReason::kFaultDrop, nic::VerdictAction::kDropped,
                   ppm(FaultAction::kDrop), tx);
        rte_pktmbuf_free(m);
        continue;
      case FaultAction::kCorrupt: {
        uint32_t bit = faults.CorruptBit(rte_pktmbuf_data_len(m));
        rte_pktmbuf_mtod(m, uint8_t*)[bit / 8] ^=
            static_cast<uint8_t>(1u << (bit % 8));
        mark(m, nic::DropReason::kFaultCorrupt, bit);
        break;
      }
      case FaultAction::kDuplicate:
        if (rte_mbuf* copy =
                rte_pktmbuf_copy(m, port.dev->pool(), 0, UINT32_MAX)) {
          // The copy is a frame of its own: a new id when captured.
          Tag(copy).packet_id = 0;
          mark(copy, nic::DropReason::kFaultDuplicate, 0);
          out[k++] = copy;
        }
        break;
      case FaultAction::kReorder:
        // One frame is held at a time: one already held goes out now and
        // this one takes its place, so that every reorder the injector
        // decided (and counted) is one carried out.
        if (held.reorder != nullptr) out[k++] = held.reorder;
        mark(m, nic::DropReason::kFaultReorder, 0);
        held.reorder = m;
        held.reorder_deadline = now + kReorderWait;
        continue;
      case FaultAction::kDelay:
        if (held.count < FaultState::kCapacity) {
          mark(m, nic::DropReason::kFaultDelay,
               static_cast<uint32_t>(faults.delay_ns()));
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

void Daemon::QueueTx(Port& port, rte_mbuf* m, uint8_t priority,
                     uint64_t packet_id) {
  Tag(m) = MbufTag{packet_id, 0, nic::DropReason::kNone};
  if (port.tx_count == std::size(port.tx_batch)) {
    ++port.counters.tx_dropped;
    DaemonDrop(port, capture_on_ ? port.tx_out : nullptr, m,
               capture::Direction::kOutbound, clock_->Now(),
               nic::DropReason::kTxBacklogFull, nic::VerdictAction::kDropped);
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
  // With shards, a looped frame is captured before it may be handed to
  // another shard (whose verdicts this lcore cannot read).
  bool captured[2 * kTxBatch];
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t len = rte_pktmbuf_data_len(m);
    if (port.endpoint != nullptr && nlooped < std::size(looped) &&
        len >= own.size() && std::memcmp(d, own.data(), own.size()) == 0) {
      if (!port.shards.empty()) {
        rte_mbuf* mine = m;
        CaptureFrame(port, *port.tx_out, m, capture::Direction::kOutbound, now);
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
      captured[nlooped] = !port.shards.empty();
      // The same frame, received: the same packet id, so that the
      // capture shows what the receiving QP did with it.
      looped[nlooped] = {d, len, false, Tag(m).packet_id};
      looped_bufs[nlooped++] = m;
    } else {
      if (port.endpoint != nullptr && IsRoceToGroup(d, len)) {
        // Synchronous: the frame is read before the wire gets it. The
        // other shards hold a reference of their own.
        if (!port.shards.empty()) {
          rte_mbuf* copies = m;
          (void)DispatchToShards(port, &copies, &kicks);
        }
        const nic::RxFrame copy{d, len, false, Tag(m).packet_id};
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
    // Written after the RNIC took them: with what it did to them.
    for (size_t i = 0; i < nlooped; ++i) {
      if (captured[i]) continue;
      CaptureFrame(port, *port.tx_out, looped_bufs[i],
                   capture::Direction::kOutbound, now);
    }
    rte_pktmbuf_free_bulk(looped_bufs, static_cast<unsigned>(nlooped));
  }
  return kept;
}

uint16_t Daemon::FlushTx(Port& port, nic::TimeNs now) {
  rte_mbuf* staged[2 * kTxBatch];  // fault injection may duplicate each
  rte_mbuf** pkts = port.tx_batch;
  uint16_t n = port.tx_count;
  port.tx_count = 0;
  CaptureWriter* const cap = capture_on_ ? port.tx_out : nullptr;
  if (port.tx_faults->enabled() && port.config.faults.tx) {
    n = ApplyFaults(port, *port.tx_faults, port.tx_held,
                    {cap, capture::Direction::kOutbound}, pkts, n, staged,
                    std::size(staged), now);
    pkts = staged;
  }
  if (n > 0) n = LoopBack(port, pkts, n, now);
  const uint16_t first_new = port.tx_backlog_count;
  for (uint16_t i = 0; i < n; ++i) {
    if (port.tx_backlog_count == Port::kBacklog) {
      ++port.counters.tx_dropped;  // counted, never silent
      DaemonDrop(port, cap, pkts[i], capture::Direction::kOutbound, now,
                 nic::DropReason::kTxBacklogFull, nic::VerdictAction::kDropped);
      rte_pktmbuf_free(pkts[i]);
      continue;
    }
    port.tx_backlog[port.tx_backlog_count++] = pkts[i];
  }
  if (port.tx_backlog_count == 0) return 0;
  uint16_t ready = port.tx_backlog_count;
  const uint8_t paused =
      port.endpoint != nullptr ? port.endpoint->PausedPriorities(now) : 0;
  // This pass's frames go into the capture as they join the backlog; those
  // of a paused priority say that they wait.
  if (cap != nullptr || paused != 0) {
    for (uint16_t i = first_new; i < port.tx_backlog_count; ++i) {
      rte_mbuf* m = port.tx_backlog[i];
      const uint32_t prio = m->hash.usr;
      if (prio < 8 && ((paused >> prio) & 1) != 0) {
        DaemonDrop(port, cap, m, capture::Direction::kOutbound, now,
                   nic::DropReason::kPfcPaused, nic::VerdictAction::kHeld,
                   prio);
      } else if (cap != nullptr) {
        CaptureFrame(port, *cap, m, capture::Direction::kOutbound, now);
      }
    }
  }
  if (paused != 0) ready = HoldPaused(port, paused);
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
  for (uint16_t i = 0; i < n; ++i) Tag(rx[i]) = MbufTag{};
  CaptureWriter* const cap = capture_on_ ? &port.rx_capture : nullptr;
  constexpr capture::Direction kIn = capture::Direction::kInbound;
  rte_mbuf** pkts = rx;
  if (port.rx_faults->enabled() && port.config.faults.rx) {
    n = ApplyFaults(port, *port.rx_faults, port.rx_held, {cap, kIn}, rx, n,
                    staged, std::size(staged), now);
    pkts = staged;
  }
  if (n > 0) {
    RnicPort* const rp =
        port.shards.empty() && endpoint != nullptr ? rnic(index) : nullptr;
    nic::Rnic* const steer = rp != nullptr && !rp->rnic().flow_table().empty()
                                 ? &rp->rnic()
                                 : nullptr;
    nic::RxFrame frames[std::size(staged)];
    // frames[k] came from nic_bufs[k] (captured once the RNIC took them).
    rte_mbuf* nic_bufs[std::size(staged)];
    size_t nic_frames = 0;
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = pkts[i];
      if (m->nb_segs > 1) {
        ++port.counters.rx_segmented;
        DaemonDrop(port, cap, m, kIn, now, nic::DropReason::kRxSegmented,
                   nic::VerdictAction::kDropped);
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
          if (cap != nullptr) CaptureFrame(port, *cap, m, kIn, now);
          port.spare->data_len = static_cast<uint16_t>(reply_len);
          port.spare->pkt_len = static_cast<uint32_t>(reply_len);
          QueueTx(port, port.spare);
          port.spare = nullptr;
          break;
        case RxVerdict::kNic:
          if (endpoint == nullptr) {
            ++port.counters.rx_nic_no_endpoint;
            DaemonDrop(port, cap, m, kIn, now, nic::DropReason::kNoRnic,
                       nic::VerdictAction::kDropped);
            break;
          }
          if (port.ingress != nullptr) {
            const IngressCongestion::Offer o = port.ingress->Enqueue(m, now);
            if (o == IngressCongestion::Offer::kDropped) {
              DaemonDrop(port, cap, m, kIn, now, nic::DropReason::kCpTailDrop,
                         nic::VerdictAction::kDropped,
                         port.ingress->depth_bytes(),
                         port.ingress->capacity_bytes());
              break;  // freed with the burst
            }
            if (o == IngressCongestion::Offer::kQueued) {
              pkts[i] = nullptr;  // captured when it leaves the queue
              break;
            }
          }
          if (!port.shards.empty()) {
            // Captured before another shard may take it (that shard's
            // verdicts are not this lcore's to read).
            if (cap != nullptr) CaptureFrame(port, *cap, m, kIn, now);
            if (!DispatchToShards(port, &pkts[i], &kicks)) {
              break;  // another shard's (pkts[i] is null once handed over)
            }
          } else if (cap != nullptr) {
            Tag(m).packet_id = NextPacketId(port);
          }
          // The stack verified the IPv4 header checksum (kNic).
          nic_bufs[nic_frames] = m;
          frames[nic_frames++] = {data.data(),
                                  static_cast<uint32_t>(data.size()), true,
                                  Tag(m).packet_id};
          break;
        case RxVerdict::kConsumed:
          if (cap != nullptr) CaptureFrame(port, *cap, m, kIn, now);
          break;
        case RxVerdict::kDropped:
          // Not the stack's nor RoCE: a raw QP's flow rule may want it
          // (nic/flow_table.h; one RNIC per port only).
          if (steer != nullptr && steer->WouldSteer(data)) {
            if (cap != nullptr) Tag(m).packet_id = NextPacketId(port);
            nic_bufs[nic_frames] = m;
            frames[nic_frames++] = {data.data(),
                                    static_cast<uint32_t>(data.size()), false,
                                    Tag(m).packet_id};
            break;
          }
          DaemonDrop(port, cap, m, kIn, now, nic::DropReason::kStackDropped,
                     nic::VerdictAction::kDropped);
          break;
      }
    }
    if (nic_frames > 0) {
      endpoint->Receive(static_cast<uint16_t>(index), {frames, nic_frames},
                        now);
      endpoint_due = true;
      // Written after the RNIC took them: with what it did to them.
      if (cap != nullptr && port.shards.empty()) {
        for (size_t k = 0; k < nic_frames; ++k) {
          CaptureFrame(port, *cap, nic_bufs[k], kIn, now);
        }
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
      uint64_t ids[kTxBurst];
      port.tx_stash.Take(filled, built, priorities, ids);
      for (size_t i = 0; i < filled; ++i) {
        QueueTx(port, built[i], priorities[i], ids[i]);
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
  CaptureWriter* const cap = capture_on_ ? &port.rx_capture : nullptr;
  constexpr capture::Direction kIn = capture::Direction::kInbound;
  uint32_t marked[kBurst];
  while ((n = port.ingress->Dequeue(now, out, marked)) > 0) {
    nic::RxFrame frames[kBurst];
    rte_mbuf* bufs[kBurst];
    size_t local = 0;
    for (size_t i = 0; i < n; ++i) {
      rte_mbuf* m = out[i];
      if (marked[i] != 0) {
        port.reasons.Add(nic::DropReason::kCpEcnMark);
        Tag(m).reason = nic::DropReason::kCpEcnMark;
        Tag(m).arg = marked[i];
      }
      if (!port.shards.empty()) {
        if (cap != nullptr) CaptureFrame(port, *cap, m, kIn, now);
        if (!DispatchToShards(port, &out[i], &kicks)) continue;
      } else if (cap != nullptr) {
        Tag(m).packet_id = NextPacketId(port);
      }
      // Queued by PollPort after the stack's checks (kNic).
      bufs[local] = m;
      frames[local++] = {rte_pktmbuf_mtod(m, const uint8_t*),
                         rte_pktmbuf_data_len(m), true, Tag(m).packet_id};
    }
    if (local > 0) {
      port.endpoint->Receive(port.index, {frames, local}, now);
      if (cap != nullptr && port.shards.empty()) {
        for (size_t k = 0; k < local; ++k) {
          CaptureFrame(port, *cap, bufs[k], kIn, now);
        }
      }
    }
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
      port.reasons.Add(nic::DropReason::kShardRingFull);
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
      port.reasons.Add(nic::DropReason::kShardRingFull);
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
      QueueTx(port, got[i], static_cast<uint8_t>(got[i]->hash.usr),
              Tag(got[i]).packet_id);
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
