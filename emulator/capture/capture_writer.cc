#include "emulator/capture/capture_writer.h"

namespace rocemu::emulator {

absl::Status CaptureWriter::Open(const std::string& path, uint32_t snaplen,
                                 uint64_t rotate_bytes, bool pcapng,
                                 std::string_view interface_name) {
  Close();
  if (pcapng) return ng_.Open(path, snaplen, rotate_bytes, interface_name);
  return pcap_.Open(path, snaplen, rotate_bytes);
}

absl::Status CaptureWriter::Reopen() {
  if (ng_.is_open()) return ng_.Reopen();
  return pcap_.Reopen();
}

void CaptureWriter::Close() {
  (void)ng_.Close();
  pcap_.Close();
}

}  // namespace rocemu::emulator
