#include "protocol/pfc.h"

#include <cstring>

#include "protocol/crc32.h"
#include "protocol/icrc.h"
#include "protocol/wire.h"

namespace rocemu::protocol {
namespace {

constexpr size_t kOpcodeOffset = kEthHeaderLen;
constexpr size_t kParamOffset = kEthHeaderLen + 2;

size_t WriteMacControl(const MacAddr& src_mac, uint16_t opcode,
                       std::span<uint8_t> out, bool append_fcs) {
  const size_t len = kMacControlFrameLen + (append_fcs ? kEthFcsLen : 0);
  if (out.size() < len) return 0;
  std::memset(out.data(), 0, kMacControlFrameLen);
  std::memcpy(out.data(), kMacControlDa.data(), 6);
  std::memcpy(out.data() + 6, src_mac.data(), 6);
  StoreBe16(out.data() + 12, kEtherTypeMacControl);
  StoreBe16(out.data() + kOpcodeOffset, opcode);
  return len;
}

void AppendFcs(std::span<uint8_t> out) {
  StoreIcrc(EthernetFcs(out.first(kMacControlFrameLen)),
            out.data() + kMacControlFrameLen);
}

}  // namespace

uint32_t EthernetFcs(std::span<const uint8_t> frame) { return Crc32(0, frame); }

size_t BuildPfcFrame(const MacAddr& src_mac, const PfcInfo& pfc,
                     std::span<uint8_t> out, bool append_fcs) {
  const size_t len =
      WriteMacControl(src_mac, kMacControlOpcodePfc, out, append_fcs);
  if (len == 0) return 0;
  uint8_t* p = out.data() + kParamOffset;
  p[0] = 0;  // reserved high octet of the class-enable vector
  p[1] = pfc.enable_vector;
  for (size_t i = 0; i < pfc.quanta.size(); ++i) {
    StoreBe16(p + 2 + 2 * i, pfc.quanta[i]);
  }
  if (append_fcs) AppendFcs(out);
  return len;
}

size_t BuildPauseFrame(const MacAddr& src_mac, uint16_t quanta,
                       std::span<uint8_t> out, bool append_fcs) {
  const size_t len =
      WriteMacControl(src_mac, kMacControlOpcodePause, out, append_fcs);
  if (len == 0) return 0;
  StoreBe16(out.data() + kParamOffset, quanta);
  if (append_fcs) AppendFcs(out);
  return len;
}

ParseError ParseMacControl(std::span<const uint8_t> frame, PfcInfo* out,
                           bool* is_pfc) {
  *out = PfcInfo{};
  *is_pfc = false;
  if (frame.size() < kMacControlFrameLen) return ParseError::kTooShort;
  if (LoadBe16(frame.data() + 12) != kEtherTypeMacControl) {
    return ParseError::kBadMacControl;
  }
  const bool reserved_da =
      std::memcmp(frame.data(), kMacControlDa.data(), 6) == 0;
  const uint8_t* p = frame.data() + kParamOffset;
  switch (LoadBe16(frame.data() + kOpcodeOffset)) {
    case kMacControlOpcodePause: {
      const bool individual_da = (frame[0] & 0x01) == 0;
      if (!reserved_da && !individual_da) return ParseError::kBadMacControl;
      out->enable_vector = 0xFF;
      out->quanta.fill(LoadBe16(p));
      return ParseError::kOk;
    }
    case kMacControlOpcodePfc:
      *is_pfc = true;
      if (!reserved_da || p[0] != 0) return ParseError::kBadMacControl;
      out->enable_vector = p[1];
      for (size_t i = 0; i < out->quanta.size(); ++i) {
        out->quanta[i] = LoadBe16(p + 2 + 2 * i);
      }
      return ParseError::kOk;
    default:
      return ParseError::kBadMacControl;
  }
}

}  // namespace rocemu::protocol
