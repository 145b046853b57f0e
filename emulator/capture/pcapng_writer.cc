#include "emulator/capture/pcapng_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rocemu::capture {
namespace {

// Block types and option codes (draft-ietf-opsawg-pcapng sections 4-4.3).
constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 0x00000001;
constexpr uint32_t kEnhancedPacket = 0x00000006;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEnd = 0;
constexpr uint16_t kOptComment = 1;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2;
constexpr uint16_t kIfTsresol = 9;
constexpr uint16_t kEpbFlags = 2;
constexpr uint16_t kEpbPacketId = 5;
constexpr uint16_t kEpbVerdict = 7;
constexpr uint8_t kVerdictHardware = 0;
constexpr uint16_t kLinkTypeEthernet = 1;

size_t Pad4(size_t n) { return (n + 3) & ~size_t{3}; }

// A block assembled in memory (headers and options only; packet data is
// written straight from the caller's buffer).
class Options {
 public:
  void Add(uint16_t code, const void* value, size_t len) {
    // Option values longer than 65535 bytes cannot be encoded: cut.
    len = std::min<size_t>(len, 0xFFFF);
    const uint16_t hdr[2] = {code, static_cast<uint16_t>(len)};
    Append(hdr, sizeof(hdr));
    Append(value, len);
    static constexpr uint8_t kZero[4] = {};
    Append(kZero, Pad4(len) - len);
  }
  void End() {
    if (size_ == 0) return;  // no options: no end-of-options either
    const uint16_t hdr[2] = {kOptEnd, 0};
    Append(hdr, sizeof(hdr));
  }
  const uint8_t* data() const { return buf_; }
  size_t size() const { return size_; }

 private:
  void Append(const void* p, size_t n) {
    n = std::min(n, sizeof(buf_) - size_);
    std::memcpy(buf_ + size_, p, n);
    size_ += n;
  }
  // A comment is at most a few hundred bytes; longer ones are cut here.
  uint8_t buf_[2048];
  size_t size_ = 0;
};

}  // namespace

absl::Status PcapngWriter::Open(const std::string& path, uint32_t snaplen,
                                uint64_t rotate_bytes,
                                std::string_view interface_name) {
  (void)Close();
  path_ = path;
  snaplen_ = snaplen == 0 ? 65535 : snaplen;
  rotate_bytes_ = rotate_bytes;
  interface_ = std::string(interface_name);
  return OpenFile();
}

void PcapngWriter::Put(const void* p, size_t n) {
  if (n != 0 && std::fwrite(p, 1, n, file_) != n) ++errors_;
  file_bytes_ += n;
}

absl::Status PcapngWriter::OpenMemory(std::string* sink, uint32_t snaplen,
                                      std::string_view interface_name) {
  (void)Close();
  path_ = "(memory)";
  snaplen_ = snaplen == 0 ? 65535 : snaplen;
  rotate_bytes_ = 0;
  interface_ = std::string(interface_name);
  file_ = open_memstream(&mem_, &mem_size_);
  if (file_ == nullptr) {
    return absl::ResourceExhaustedError("open_memstream failed");
  }
  sink_ = sink;
  file_bytes_ = 0;
  WriteHeaders();
  return absl::OkStatus();
}

absl::Status PcapngWriter::OpenFile() {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot write capture ", path_,
                                               ": ", std::strerror(errno)));
  }
  // Full buffering: a frame costs a memcpy, the kernel sees 1 MiB writes.
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  file_bytes_ = 0;
  WriteHeaders();
  return absl::OkStatus();
}

void PcapngWriter::WriteHeaders() {
  {
    Options o;
    static constexpr char kAppl[] = "rocemu";
    o.Add(kShbUserAppl, kAppl, sizeof(kAppl) - 1);
    o.End();
    const uint32_t total = static_cast<uint32_t>(28 + o.size());
    const uint32_t head[3] = {kSectionHeader, total, kByteOrderMagic};
    const uint16_t version[2] = {1, 0};
    const int64_t section_length = -1;  // not given: we stream
    Put(head, sizeof(head));
    Put(version, sizeof(version));
    Put(&section_length, sizeof(section_length));
    Put(o.data(), o.size());
    Put(&total, sizeof(total));
  }
  {
    Options o;
    if (!interface_.empty()) {
      o.Add(kIfName, interface_.data(), interface_.size());
    }
    const uint8_t nanoseconds = 9;  // 10^-9 s per timestamp unit
    o.Add(kIfTsresol, &nanoseconds, 1);
    o.End();
    const uint32_t total = static_cast<uint32_t>(20 + o.size());
    const uint32_t head[2] = {kInterfaceDescription, total};
    const uint16_t link[2] = {kLinkTypeEthernet, 0};
    Put(head, sizeof(head));
    Put(link, sizeof(link));
    Put(&snaplen_, sizeof(snaplen_));
    Put(o.data(), o.size());
    Put(&total, sizeof(total));
  }
}

absl::Status PcapngWriter::Reopen() {
  if (file_ == nullptr || sink_ != nullptr) return absl::OkStatus();
  if (std::fclose(file_) != 0) ++errors_;
  file_ = nullptr;
  // If nobody moved the file away, keep it as the next rotation rather
  // than truncating it.
  if (access(path_.c_str(), F_OK) == 0) {
    ++rotations_;
    const std::string rotated = absl::StrCat(path_, ".", rotations_);
    if (std::rename(path_.c_str(), rotated.c_str()) != 0) ++errors_;
  }
  return OpenFile();
}

absl::Status PcapngWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  const bool failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed) ++errors_;
  if (sink_ != nullptr) {
    if (mem_ != nullptr) sink_->assign(mem_, mem_size_);
    std::free(mem_);
    mem_ = nullptr;
    sink_ = nullptr;
  }
  if (errors_ != 0) {
    return absl::DataLossError(
        absl::StrCat(path_, ": ", errors_, " write(s) failed"));
  }
  return absl::OkStatus();
}

void PcapngWriter::Rotate() {
  if (std::fclose(file_) != 0) ++errors_;
  file_ = nullptr;
  ++rotations_;
  const std::string rotated = absl::StrCat(path_, ".", rotations_);
  if (std::rename(path_.c_str(), rotated.c_str()) != 0 || !OpenFile().ok()) {
    ++errors_;
  }
}

void PcapngWriter::Write(std::span<const uint8_t> frame, uint64_t time_ns,
                         const FrameMeta& meta, uint32_t orig_len) {
  if (file_ == nullptr) return;
  const uint32_t caplen =
      static_cast<uint32_t>(std::min<size_t>(frame.size(), snaplen_));
  if (orig_len < frame.size()) orig_len = static_cast<uint32_t>(frame.size());
  Options o;
  if (!meta.comment.empty()) {
    o.Add(kOptComment, meta.comment.data(), meta.comment.size());
  }
  if (meta.direction != Direction::kUnknown) {
    const uint32_t flags = static_cast<uint32_t>(meta.direction);
    o.Add(kEpbFlags, &flags, sizeof(flags));
  }
  if (meta.packet_id != 0) {
    o.Add(kEpbPacketId, &meta.packet_id, sizeof(meta.packet_id));
  }
  if (meta.verdict != 0) {
    const uint8_t v[kVerdictBytes] = {kVerdictHardware,
                                      static_cast<uint8_t>(meta.verdict >> 8),
                                      static_cast<uint8_t>(meta.verdict)};
    o.Add(kEpbVerdict, v, sizeof(v));
  }
  o.End();
  const uint32_t total = static_cast<uint32_t>(32 + Pad4(caplen) + o.size());
  const uint32_t head[7] = {kEnhancedPacket,
                            total,
                            0,  // interface 0
                            static_cast<uint32_t>(time_ns >> 32),
                            static_cast<uint32_t>(time_ns),
                            caplen,
                            orig_len};
  Put(head, sizeof(head));
  Put(frame.data(), caplen);
  static constexpr uint8_t kZero[4] = {};
  Put(kZero, Pad4(caplen) - caplen);
  Put(o.data(), o.size());
  Put(&total, sizeof(total));
  ++frames_;
  if (rotate_bytes_ != 0 && file_bytes_ >= rotate_bytes_) Rotate();
}

}  // namespace rocemu::capture
