#include "protocol/mad.h"

#include "protocol/wire.h"

namespace rocemu::protocol {

void EncodeMadHeader(const MadHeader& h, std::span<uint8_t> out) {
  uint8_t* p = out.data();
  p[0] = h.base_version;
  p[1] = h.mgmt_class;
  p[2] = h.class_version;
  p[3] = h.method;
  StoreBe16(p + 4, h.status);
  StoreBe16(p + 6, h.class_specific);
  StoreBe64(p + 8, h.tid);
  StoreBe16(p + 16, h.attr_id);
  StoreBe16(p + 18, h.resv);
  StoreBe32(p + 20, h.attr_mod);
}

bool ParseMadHeader(std::span<const uint8_t> mad, MadHeader* out) {
  if (mad.size() < kMadHeaderSize) return false;
  const uint8_t* p = mad.data();
  out->base_version = p[0];
  out->mgmt_class = p[1];
  out->class_version = p[2];
  out->method = p[3];
  out->status = LoadBe16(p + 4);
  out->class_specific = LoadBe16(p + 6);
  out->tid = LoadBe64(p + 8);
  out->attr_id = LoadBe16(p + 16);
  out->resv = LoadBe16(p + 18);
  out->attr_mod = LoadBe32(p + 20);
  return true;
}

std::string_view MgmtClassName(uint8_t mgmt_class) {
  switch (mgmt_class) {
    case mgmt_class::kSubnLid:
      return "SubnMgt";
    case mgmt_class::kSubnAdm:
      return "SubnAdm";
    case mgmt_class::kPerfMgt:
      return "PerfMgt";
    case mgmt_class::kBm:
      return "BM";
    case mgmt_class::kDevMgt:
      return "DevMgt";
    case mgmt_class::kCm:
      return "CM";
    case mgmt_class::kSnmp:
      return "SNMP";
    case mgmt_class::kSubnDirected:
      return "SubnMgtDR";
    default:
      return "?";
  }
}

std::string_view MadMethodName(uint8_t method) {
  switch (method) {
    case mad_method::kGet:
      return "Get";
    case mad_method::kSet:
      return "Set";
    case mad_method::kSend:
      return "Send";
    case mad_method::kTrap:
      return "Trap";
    case mad_method::kReport:
      return "Report";
    case mad_method::kTrapRepress:
      return "TrapRepress";
    case mad_method::kGetResp:
      return "GetResp";
    case mad_method::kReportResp:
      return "ReportResp";
    default:
      return "?";
  }
}

}  // namespace rocemu::protocol
