#include "ns3/frame_node.h"

#include "ns3/ns3_clock.h"
#include "ns3/roce_net_device.h"
#include "ns3/simulator.h"

namespace rocemu::ns3sim {

NS_OBJECT_ENSURE_REGISTERED(FrameNode);

ns3::TypeId FrameNode::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("rocemu::FrameNode")
                               .SetParent<ns3::Node>()
                               .SetGroupName("Rocemu");
  return tid;
}

FrameNode::~FrameNode() = default;

uint16_t FrameNode::AddPort(ns3::Ptr<RoceNetDevice> device) {
  const uint16_t index = static_cast<uint16_t>(ports_.size());
  ports_.push_back(ns3::PeekPointer(device));
  AddDevice(device);
  device->Bind(this, index);
  return index;
}

void FrameNode::Kick() {
  const nic::TimeNs now = NowNs();
  Poll(now);
  ScheduleWake(now);
}

void FrameNode::OnDelivered(uint16_t port, ns3::Ptr<ns3::Packet> frame) {
  const nic::TimeNs now = NowNs();
  ReceiveFrame(port, frame, now);
  PollReady(now);
  ScheduleWake(now);
  AfterEvent(now);
}

void FrameNode::OnTxFree(uint16_t port) {
  const nic::TimeNs now = NowNs();
  ports_[port]->TryTransmit(now);
  ScheduleWake(now);
  AfterEvent(now);
}

void FrameNode::Poll(nic::TimeNs now) {
  for (RoceNetDevice* d : ports_) d->TryTransmit(now);
}

void FrameNode::MarkReady(uint16_t port) {
  if (!tracks_ready_) {
    tracks_ready_ = true;
    is_ready_.assign(ports_.size(), 0);
  }
  if (is_ready_[port]) return;
  is_ready_[port] = 1;
  ready_.push_back(port);
}

void FrameNode::PollReady(nic::TimeNs now) {
  if (!tracks_ready_) {
    Poll(now);
    return;
  }
  // A pull may mark more ports (a dequeue that sends XON upstream).
  while (!ready_.empty()) {
    polling_.swap(ready_);
    for (uint16_t p : polling_) {
      is_ready_[p] = 0;
      ports_[p]->TryTransmit(now);
    }
    polling_.clear();
  }
}

void FrameNode::ScheduleWake(nic::TimeNs now) {
  nic::TimeNs t = NextEventTime();
  if (t <= now) {
    // Due now: a pull on one port may have made work for another (a
    // switch's PFC frame towards an idle port). The free ports pull once
    // more; what is still due waits for a busy port to free up.
    PollReady(now);
    t = NextEventTime();
    if (t <= now) return;
  }
  if (t == nic::kNever) return;
  // A pending wake-up at or before t serves; a later one is superseded
  // (it finds wake_at_ changed and does nothing).
  if (wake_at_ != nic::kNever && wake_at_ >= now && wake_at_ <= t) return;
  wake_at_ = t;
  ns3::Simulator::Schedule(NsToTime(t - now), &FrameNode::Wake, this, t);
}

void FrameNode::Wake(nic::TimeNs when) {
  if (wake_at_ != when) return;
  wake_at_ = nic::kNever;
  ++wakeups_;
  const nic::TimeNs now = NowNs();
  Poll(now);
  ScheduleWake(now);
  AfterEvent(now);
}

}  // namespace rocemu::ns3sim
