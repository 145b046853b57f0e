// An ns-3 node whose ports pull frames when their transmitter is free: the
// RNIC host (rnic_host.h) and the switch (roce_switch.h). The scheduling is
// the in-tree simulator's (tests/simnet): a port asks its node for the next
// frame at the instant the wire frees, right after the node received a
// frame, at the node's NextEventTime() (retransmission, pacer, pause
// expiry, PFC refresh) and when the application gave it work (Kick). With
// one frame on the wire and none queued in the device, the node chooses
// each frame when it can go, which is what per-priority pause and the
// DCQCN pacer need.
#ifndef ROCEMU_NS3_FRAME_NODE_H_
#define ROCEMU_NS3_FRAME_NODE_H_

#include <cstdint>
#include <vector>

#include "nic/clock.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/ptr.h"

namespace rocemu::ns3sim {

class RoceNetDevice;

class FrameNode : public ns3::Node {
 public:
  static ns3::TypeId GetTypeId();
  ~FrameNode() override;

  // The next frame for `port`, whose transmitter is free at `now`, or null.
  virtual ns3::Ptr<ns3::Packet> PullFrame(uint16_t port, nic::TimeNs now) = 0;
  // The last bit of `frame` arrived on `port`.
  virtual void ReceiveFrame(uint16_t port, ns3::Ptr<ns3::Packet> frame,
                            nic::TimeNs now) = 0;
  // Earliest time a free port may get a frame without any receive in
  // between, or kNever.
  virtual nic::TimeNs NextEventTime() const = 0;

  // Adds `device` as the next port (also Node::AddDevice); returns its index.
  uint16_t AddPort(ns3::Ptr<RoceNetDevice> device);
  uint16_t num_ports() const { return static_cast<uint16_t>(ports_.size()); }
  RoceNetDevice* port(uint16_t i) const { return ports_[i]; }

  // The node may have something to send now (work posted from outside a
  // frame event): free ports pull, and a wake-up is set for later work.
  void Kick();

  // Entry points for the devices (RoceNetDevice): a frame arrived, or a
  // port's transmitter became free.
  void OnDelivered(uint16_t port, ns3::Ptr<ns3::Packet> frame);
  void OnTxFree(uint16_t port);

  uint64_t wakeups() const { return wakeups_; }

 protected:
  // Called after every frame event and wake-up of this node, outside any
  // pull: the host's application polls its completion queue here.
  virtual void AfterEvent(nic::TimeNs /*now*/) {}
  // A node with many ports says which ones got work (a frame queued for
  // them, a PFC frame to send): after a received frame only those pull,
  // instead of every port of a 64-port switch. A node that never calls it
  // has all its ports polled.
  void MarkReady(uint16_t port);

 private:
  void Poll(nic::TimeNs now);
  void PollReady(nic::TimeNs now);
  void ScheduleWake(nic::TimeNs now);
  void Wake(nic::TimeNs when);

  std::vector<RoceNetDevice*> ports_;  // owned by ns3::Node's device list
  bool tracks_ready_ = false;
  std::vector<uint16_t> ready_;
  std::vector<uint16_t> polling_;  // ready_ being served
  std::vector<uint8_t> is_ready_;
  nic::TimeNs wake_at_ = nic::kNever;
  uint64_t wakeups_ = 0;
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_FRAME_NODE_H_
