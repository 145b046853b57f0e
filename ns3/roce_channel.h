// A full-duplex point-to-point link between two RoceNetDevices with one
// propagation delay; serialization is each device's business.
#ifndef ROCEMU_NS3_ROCE_CHANNEL_H_
#define ROCEMU_NS3_ROCE_CHANNEL_H_

#include <array>
#include <cstdint>

#include "nic/clock.h"
#include "ns3/channel.h"
#include "ns3/packet.h"

namespace rocemu::ns3sim {

class RoceNetDevice;

class RoceChannel : public ns3::Channel {
 public:
  static ns3::TypeId GetTypeId();
  RoceChannel();

  void set_delay_ns(nic::TimeNs d) { delay_ns_ = d; }
  nic::TimeNs delay_ns() const { return delay_ns_; }
  // At most two devices; false for a third.
  bool Attach(RoceNetDevice* device);
  RoceNetDevice* Peer(const RoceNetDevice* device) const;
  // `frame` leaves `from` now; its last bit reaches the peer after
  // `last_bit_ns` of serialization plus the propagation delay.
  void Transmit(ns3::Ptr<ns3::Packet> frame, const RoceNetDevice* from,
                nic::TimeNs last_bit_ns);

  std::size_t GetNDevices() const override;
  ns3::Ptr<ns3::NetDevice> GetDevice(std::size_t i) const override;

 private:
  std::array<RoceNetDevice*, 2> devices_{};
  nic::TimeNs delay_ns_ = 1000;
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_ROCE_CHANNEL_H_
