// Presentation of a FrameReport: one JSON object (field names documented in
// docs/decoder.md) or one human-readable line.
#ifndef ROCEMU_EMULATOR_TOOLS_FRAME_FORMAT_H_
#define ROCEMU_EMULATOR_TOOLS_FRAME_FORMAT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "emulator/tools/frame_report.h"
#include "protocol/frame.h"

namespace rocemu::tools {

// Lower-case identifiers used in both output forms.
std::string_view AethTypeName(protocol::AethType type);
std::string_view NakCodeName(uint8_t code);
std::string FormatMac(const protocol::MacAddr& mac);
// Dotted quad for IPv4 (held IPv4-mapped), RFC 5952 text for IPv6.
std::string FormatIp(const protocol::IpAddr& ip, bool ipv6);

// The report as one JSON object, fields in the documented order.
nlohmann::ordered_json FrameJson(const FrameReport& r);
// One line, no trailing newline.
std::string FormatFrameText(const FrameReport& r);

}  // namespace rocemu::tools

#endif  // ROCEMU_EMULATOR_TOOLS_FRAME_FORMAT_H_
