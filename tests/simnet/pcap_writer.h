// A pcap file with nanosecond timestamps taken from virtual time, written
// through libpcap so that every pcap reader (and ../shared/oracle) accepts it.
#ifndef ROCEMU_TESTS_SIMNET_PCAP_WRITER_H_
#define ROCEMU_TESTS_SIMNET_PCAP_WRITER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "nic/clock.h"

typedef struct pcap pcap_t;
typedef struct pcap_dumper pcap_dumper_t;

namespace rocemu::simnet {

class PcapWriter {
 public:
  static absl::StatusOr<std::unique_ptr<PcapWriter>> Open(
      const std::string& path, uint32_t snaplen = 65535);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  void Write(nic::TimeNs t, std::span<const uint8_t> frame);
  void Flush();
  uint64_t frames_written() const { return frames_; }

 private:
  PcapWriter(pcap_t* pcap, pcap_dumper_t* dumper, uint32_t snaplen)
      : pcap_(pcap), dumper_(dumper), snaplen_(snaplen) {}
  pcap_t* pcap_;
  pcap_dumper_t* dumper_;
  uint32_t snaplen_;
  uint64_t frames_ = 0;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_PCAP_WRITER_H_
