// Capture files read back with libpcap, not with our own code: what the
// writers' tests compare against.
#ifndef ROCEMU_TESTS_LIBPCAP_FRAMES_H_
#define ROCEMU_TESTS_LIBPCAP_FRAMES_H_

#include <pcap/pcap.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rocemu::test_support {

struct CapturedFrame {
  uint64_t ns;   // nanoseconds since the epoch
  uint32_t len;  // on the wire (caplen: data.size())
  std::vector<uint8_t> data;
};

// Every frame of the pcap or pcapng file at `path`, with nanosecond
// times; an unreadable file or a link type other than Ethernet fails the
// calling test.
inline std::vector<CapturedFrame> ReadWithLibpcap(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(
      path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  EXPECT_NE(p, nullptr) << err;
  std::vector<CapturedFrame> out;
  if (p == nullptr) return out;
  EXPECT_EQ(pcap_get_tstamp_precision(p), PCAP_TSTAMP_PRECISION_NANO);
  EXPECT_EQ(pcap_datalink(p), DLT_EN10MB);
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) {
    // With nanosecond precision libpcap puts nanoseconds in tv_usec.
    out.push_back({static_cast<uint64_t>(h->ts.tv_sec) * 1000000000 +
                       static_cast<uint64_t>(h->ts.tv_usec),
                   h->len, std::vector<uint8_t>(d, d + h->caplen)});
  }
  pcap_close(p);
  return out;
}

}  // namespace rocemu::test_support

#endif  // ROCEMU_TESTS_LIBPCAP_FRAMES_H_
