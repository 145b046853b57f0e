#include "ns3/roce_channel.h"

#include "ns3/frame_node.h"
#include "ns3/ns3_clock.h"
#include "ns3/roce_net_device.h"
#include "ns3/simulator.h"

namespace rocemu::ns3sim {

NS_OBJECT_ENSURE_REGISTERED(RoceChannel);

ns3::TypeId RoceChannel::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("rocemu::RoceChannel")
                               .SetParent<ns3::Channel>()
                               .SetGroupName("Rocemu");
  return tid;
}

RoceChannel::RoceChannel() = default;

bool RoceChannel::Attach(RoceNetDevice* device) {
  for (RoceNetDevice*& d : devices_) {
    if (d == nullptr) {
      d = device;
      return true;
    }
  }
  return false;
}

RoceNetDevice* RoceChannel::Peer(const RoceNetDevice* device) const {
  return devices_[0] == device ? devices_[1] : devices_[0];
}

void RoceChannel::Transmit(ns3::Ptr<ns3::Packet> frame,
                           const RoceNetDevice* from, nic::TimeNs last_bit_ns) {
  RoceNetDevice* to = Peer(from);
  if (to == nullptr) return;
  // The event runs in the receiving node's context, as ns-3 channels do.
  ns3::Simulator::ScheduleWithContext(to->frame_node()->GetId(),
                                      NsToTime(last_bit_ns + delay_ns_),
                                      &RoceNetDevice::Deliver, to, frame);
}

std::size_t RoceChannel::GetNDevices() const {
  return (devices_[0] != nullptr) + (devices_[1] != nullptr);
}

ns3::Ptr<ns3::NetDevice> RoceChannel::GetDevice(std::size_t i) const {
  return i < 2 ? devices_[i] : nullptr;
}

}  // namespace rocemu::ns3sim
