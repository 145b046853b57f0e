#include "ns3/roce_net_device.h"

#include <algorithm>

#include "ns3/frame_node.h"
#include "ns3/ns3_clock.h"
#include "ns3/roce_channel.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

namespace rocemu::ns3sim {

namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;
// Preamble+SFD, FCS, inter-frame gap and the shortest frame without FCS.
constexpr uint64_t kPreambleBytes = 8;
constexpr uint64_t kFcsBytes = 4;
constexpr uint64_t kIfgBytes = 12;
constexpr uint64_t kMinFrameBytes = 60;

}  // namespace

NS_OBJECT_ENSURE_REGISTERED(RoceNetDevice);

ns3::TypeId RoceNetDevice::GetTypeId() {
  static ns3::TypeId tid =
      ns3::TypeId("rocemu::RoceNetDevice")
          .SetParent<ns3::NetDevice>()
          .SetGroupName("Rocemu")
          .AddTraceSource(
              "PhyTxBegin", "A frame starts serialization on this port",
              ns3::MakeTraceSourceAccessor(&RoceNetDevice::tx_trace_),
              "ns3::Packet::TracedCallback")
          .AddTraceSource(
              "PhyRxEnd", "The last bit of a frame arrived on this port",
              ns3::MakeTraceSourceAccessor(&RoceNetDevice::rx_trace_),
              "ns3::Packet::TracedCallback");
  return tid;
}

RoceNetDevice::RoceNetDevice() = default;
RoceNetDevice::~RoceNetDevice() = default;

void RoceNetDevice::Bind(FrameNode* node, uint16_t port) {
  owner_ = node;
  port_ = port;
}

void RoceNetDevice::Attach(ns3::Ptr<RoceChannel> channel) {
  channel_ = channel;
  channel_->Attach(this);
}

RoceNetDevice* RoceNetDevice::peer() const {
  return channel_ ? channel_->Peer(this) : nullptr;
}

void RoceNetDevice::TryTransmit(nic::TimeNs now) {
  if (busy_ || !channel_) return;
  ns3::Ptr<ns3::Packet> frame = owner_->PullFrame(port_, now);
  if (frame) StartTx(frame, now);
}

void RoceNetDevice::StartTx(ns3::Ptr<ns3::Packet> frame, nic::TimeNs now) {
  const uint64_t len = frame->GetSize();
  const uint64_t arrive_bytes =
      kPreambleBytes + std::max(len, kMinFrameBytes) + kFcsBytes;
  const uint64_t occupy_bytes = arrive_bytes + kIfgBytes;
  // Exact over back-to-back frames: the sub-ns remainder is carried.
  if (free_at_ != now) carry_ = 0;
  const uint64_t occ = occupy_bytes * 8 * kNsPerSecond + carry_;
  const nic::TimeNs occupy_ns = occ / rate_bps_;
  const nic::TimeNs arrive_ns =
      (arrive_bytes * 8 * kNsPerSecond + carry_) / rate_bps_;
  carry_ = occ % rate_bps_;
  free_at_ = now + occupy_ns;
  busy_ = true;
  ++counters_.tx_frames;
  counters_.tx_bytes += len;
  counters_.busy_ns += occupy_ns;
  tx_trace_(frame);
  ns3::Simulator::Schedule(NsToTime(occupy_ns), &RoceNetDevice::TxDone, this);
  channel_->Transmit(frame, this, arrive_ns);
}

void RoceNetDevice::TxDone() {
  busy_ = false;
  owner_->OnTxFree(port_);
}

void RoceNetDevice::Deliver(ns3::Ptr<ns3::Packet> frame) {
  ++counters_.rx_frames;
  counters_.rx_bytes += frame->GetSize();
  rx_trace_(frame);
  owner_->OnDelivered(port_, frame);
}

ns3::Ptr<ns3::Channel> RoceNetDevice::GetChannel() const { return channel_; }

void RoceNetDevice::SetAddress(ns3::Address address) {
  address_ = ns3::Mac48Address::ConvertFrom(address);
}

bool RoceNetDevice::SetMtu(const uint16_t mtu) {
  mtu_ = mtu;
  return true;
}

bool RoceNetDevice::IsLinkUp() const { return channel_ != nullptr; }

void RoceNetDevice::AddLinkChangeCallback(ns3::Callback<void> /*callback*/) {
  // Links never change state in a fabric run.
}

ns3::Address RoceNetDevice::GetBroadcast() const {
  return ns3::Mac48Address::GetBroadcast();
}

ns3::Address RoceNetDevice::GetMulticast(ns3::Ipv4Address group) const {
  return ns3::Mac48Address::GetMulticast(group);
}

ns3::Address RoceNetDevice::GetMulticast(ns3::Ipv6Address addr) const {
  return ns3::Mac48Address::GetMulticast(addr);
}

bool RoceNetDevice::Send(ns3::Ptr<ns3::Packet> /*packet*/,
                         const ns3::Address& /*dest*/, uint16_t /*protocol*/) {
  return false;  // frames come from this port's node only
}

bool RoceNetDevice::SendFrom(ns3::Ptr<ns3::Packet> /*packet*/,
                             const ns3::Address& /*source*/,
                             const ns3::Address& /*dest*/,
                             uint16_t /*protocol*/) {
  return false;
}

ns3::Ptr<ns3::Node> RoceNetDevice::GetNode() const { return owner_; }

void RoceNetDevice::SetNode(ns3::Ptr<ns3::Node> /*node*/) {
  // Bound by FrameNode::AddPort, which knows the port index.
}

void RoceNetDevice::SetReceiveCallback(ReceiveCallback /*cb*/) {}

void RoceNetDevice::SetPromiscReceiveCallback(PromiscReceiveCallback /*cb*/) {}

void RoceNetDevice::DoDispose() {
  channel_ = nullptr;
  owner_ = nullptr;
  ns3::NetDevice::DoDispose();
}

}  // namespace rocemu::ns3sim
