// One port of a FrameNode on a full-duplex RoceChannel. It has no queue:
// when its transmitter is free it asks its node for the next frame
// (FrameNode::PullFrame), serializes it at the port rate, and the channel
// hands it to the peer's node when its last bit arrives. Wire time is the
// in-tree simulator's: preamble, FCS, padding to 60 bytes and the
// inter-frame gap are counted, and the sub-nanosecond remainder is carried
// across back-to-back frames so the long-run rate is exact.
//
// It is an ns3::NetDevice so that ns-3's tools (node lists, traces, pcap)
// see it, but it carries only the frames its node makes: Send() from an
// ns-3 protocol stack is refused (the RNIC is the host's stack).
#ifndef ROCEMU_NS3_ROCE_NET_DEVICE_H_
#define ROCEMU_NS3_ROCE_NET_DEVICE_H_

#include <cstdint>

#include "nic/clock.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/traced-callback.h"

namespace rocemu::ns3sim {

class FrameNode;
class RoceChannel;

struct PortCounters {
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;  // frame bytes without preamble, FCS or gap
  uint64_t rx_frames = 0;
  uint64_t rx_bytes = 0;
  uint64_t busy_ns = 0;  // wire time used by this port's frames
};

class RoceNetDevice : public ns3::NetDevice {
 public:
  static ns3::TypeId GetTypeId();
  RoceNetDevice();
  ~RoceNetDevice() override;

  // Done by FrameNode::AddPort.
  void Bind(FrameNode* node, uint16_t port);
  void SetRate(uint64_t rate_bps) { rate_bps_ = rate_bps; }
  uint64_t rate_bps() const { return rate_bps_; }
  void Attach(ns3::Ptr<RoceChannel> channel);
  // The device at the other end of the channel (null when unattached).
  RoceNetDevice* peer() const;
  uint16_t port_index() const { return port_; }
  FrameNode* frame_node() const { return owner_; }

  // Pulls a frame from the node and starts it if the transmitter is free.
  void TryTransmit(nic::TimeNs now);
  bool busy() const { return busy_; }
  // The channel delivers a frame whose last bit has arrived.
  void Deliver(ns3::Ptr<ns3::Packet> frame);
  const PortCounters& counters() const { return counters_; }

  // --- ns3::NetDevice ---
  void SetIfIndex(const uint32_t index) override { if_index_ = index; }
  uint32_t GetIfIndex() const override { return if_index_; }
  ns3::Ptr<ns3::Channel> GetChannel() const override;
  void SetAddress(ns3::Address address) override;
  ns3::Address GetAddress() const override { return address_; }
  bool SetMtu(const uint16_t mtu) override;
  uint16_t GetMtu() const override { return mtu_; }
  bool IsLinkUp() const override;
  void AddLinkChangeCallback(ns3::Callback<void> callback) override;
  bool IsBroadcast() const override { return false; }
  ns3::Address GetBroadcast() const override;
  bool IsMulticast() const override { return false; }
  ns3::Address GetMulticast(ns3::Ipv4Address group) const override;
  ns3::Address GetMulticast(ns3::Ipv6Address addr) const override;
  bool IsBridge() const override { return false; }
  bool IsPointToPoint() const override { return true; }
  bool Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address& dest,
            uint16_t protocol) override;
  bool SendFrom(ns3::Ptr<ns3::Packet> packet, const ns3::Address& source,
                const ns3::Address& dest, uint16_t protocol) override;
  ns3::Ptr<ns3::Node> GetNode() const override;
  void SetNode(ns3::Ptr<ns3::Node> node) override;
  bool NeedsArp() const override { return false; }
  void SetReceiveCallback(ReceiveCallback cb) override;
  void SetPromiscReceiveCallback(PromiscReceiveCallback cb) override;
  bool SupportsSendFrom() const override { return false; }

 protected:
  void DoDispose() override;

 private:
  void StartTx(ns3::Ptr<ns3::Packet> frame, nic::TimeNs now);
  void TxDone();

  FrameNode* owner_ = nullptr;
  uint16_t port_ = 0;
  ns3::Ptr<RoceChannel> channel_;
  uint64_t rate_bps_ = 100'000'000'000;
  bool busy_ = false;
  nic::TimeNs free_at_ = 0;
  uint64_t carry_ = 0;  // fraction of a ns (in units of 1/rate) owed
  uint32_t if_index_ = 0;
  uint16_t mtu_ = 9000;
  ns3::Mac48Address address_;
  PortCounters counters_;
  // Per-frame traces, for captures made on request (start of
  // serialization; arrival of the last bit).
  ns3::TracedCallback<ns3::Ptr<const ns3::Packet>> tx_trace_;
  ns3::TracedCallback<ns3::Ptr<const ns3::Packet>> rx_trace_;
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_ROCE_NET_DEVICE_H_
