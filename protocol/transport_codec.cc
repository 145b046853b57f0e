#include "protocol/transport_codec.h"

#include <cstring>

#include "protocol/wire.h"

namespace rocemu::protocol {

// BTH byte 1: SE(7) M(6) PadCnt(5:4) TVer(3:0); byte 4: F(7) B(6) resv6;
// byte 8: A(7) resv7.
void EncodeBth(const Bth& bth, uint8_t* p) {
  p[0] = bth.opcode;
  p[1] = static_cast<uint8_t>((bth.se ? 0x80 : 0) | (bth.mig_req ? 0x40 : 0) |
                              (bth.pad_cnt & 0x3) << 4 | (bth.tver & 0xF));
  StoreBe16(p + 2, bth.pkey);
  p[4] = static_cast<uint8_t>((bth.fecn ? 0x80 : 0) | (bth.becn ? 0x40 : 0) |
                              (bth.resv6 & 0x3F));
  StoreBe24(p + 5, bth.dest_qp & kQpnMask);
  p[8] = static_cast<uint8_t>((bth.ack_req ? 0x80 : 0) | (bth.resv7 & 0x7F));
  StoreBe24(p + 9, bth.psn & kPsnMask);
}

void DecodeBth(const uint8_t* p, Bth* bth) {
  bth->opcode = p[0];
  bth->se = (p[1] & 0x80) != 0;
  bth->mig_req = (p[1] & 0x40) != 0;
  bth->pad_cnt = (p[1] >> 4) & 0x3;
  bth->tver = p[1] & 0xF;
  bth->pkey = LoadBe16(p + 2);
  bth->fecn = (p[4] & 0x80) != 0;
  bth->becn = (p[4] & 0x40) != 0;
  bth->resv6 = p[4] & 0x3F;
  bth->dest_qp = LoadBe24(p + 5);
  bth->ack_req = (p[8] & 0x80) != 0;
  bth->resv7 = p[8] & 0x7F;
  bth->psn = LoadBe24(p + 9);
}

Bth DecodeBth(const uint8_t* p) {
  Bth bth;
  DecodeBth(p, &bth);
  return bth;
}

void EncodeReth(const Reth& reth, uint8_t* p) {
  StoreBe64(p, reth.va);
  StoreBe32(p + 8, reth.rkey);
  StoreBe32(p + 12, reth.dma_len);
}

Reth DecodeReth(const uint8_t* p) {
  return Reth{
      .va = LoadBe64(p), .rkey = LoadBe32(p + 8), .dma_len = LoadBe32(p + 12)};
}

void EncodeAeth(const Aeth& aeth, uint8_t* p) {
  p[0] = aeth.syndrome;
  StoreBe24(p + 1, aeth.msn & 0xFFFFFF);
}

Aeth DecodeAeth(const uint8_t* p) {
  return Aeth{.syndrome = p[0], .msn = LoadBe24(p + 1)};
}

void EncodeDeth(const Deth& deth, uint8_t* p) {
  StoreBe32(p, deth.qkey);
  p[4] = deth.resv8;
  StoreBe24(p + 5, deth.src_qp & kQpnMask);
}

Deth DecodeDeth(const uint8_t* p) {
  return Deth{.qkey = LoadBe32(p), .src_qp = LoadBe24(p + 5), .resv8 = p[4]};
}

void EncodeAtomicEth(const AtomicEth& a, uint8_t* p) {
  StoreBe64(p, a.va);
  StoreBe32(p + 8, a.rkey);
  StoreBe64(p + 12, a.swap_add);
  StoreBe64(p + 20, a.compare);
}

AtomicEth DecodeAtomicEth(const uint8_t* p) {
  return AtomicEth{.va = LoadBe64(p),
                   .rkey = LoadBe32(p + 8),
                   .swap_add = LoadBe64(p + 12),
                   .compare = LoadBe64(p + 20)};
}

void EncodeAtomicAckEth(const AtomicAckEth& a, uint8_t* p) {
  StoreBe64(p, a.orig);
}

AtomicAckEth DecodeAtomicAckEth(const uint8_t* p) {
  return AtomicAckEth{.orig = LoadBe64(p)};
}

void EncodeTransportHeaders(const TransportHeaders& hdr, const OpcodeInfo& info,
                            uint8_t* p) {
  EncodeBth(hdr.bth, p);
  p += kBthLen;
  if (info.Has(kExtXrceth)) {
    p[0] = hdr.xrceth.resv8;
    StoreBe24(p + 1, hdr.xrceth.srqn & kQpnMask);
    p += kXrcethLen;
  }
  if (info.Has(kExtFeth)) {
    StoreBe32(p, hdr.feth.Encode());
    p += kFethLen;
  }
  if (info.Has(kExtRdeth)) {
    StoreBe32(p, hdr.rdeth_ee_context & 0xFFFFFF);
    p += kRdethLen;
  }
  if (info.Has(kExtDeth)) {
    EncodeDeth(hdr.deth, p);
    p += kDethLen;
  }
  if (info.Has(kExtReth)) {
    EncodeReth(hdr.reth, p);
    p += kRethLen;
  }
  if (info.Has(kExtAtomicEth)) {
    EncodeAtomicEth(hdr.atomic, p);
    p += kAtomicEthLen;
  }
  if (info.Has(kExtAeth)) {
    EncodeAeth(hdr.aeth, p);
    p += kAethLen;
  }
  if (info.Has(kExtAtomicAckEth)) {
    EncodeAtomicAckEth(hdr.atomic_ack, p);
    p += kAtomicAckEthLen;
  }
  if (info.Has(kExtImmDt)) {
    StoreBe32(p, hdr.imm);
    p += kImmDtLen;
  }
  if (info.Has(kExtIeth)) {
    StoreBe32(p, hdr.ieth_rkey);
    p += kIethLen;
  }
  if (info.Has(kExtCnpPad)) {
    std::memset(p, 0, kCnpPadLen);
  }
}

void DecodeExtensionHeaders(const uint8_t* p, const OpcodeInfo& info,
                            TransportHeaders* hdr) {
  p += kBthLen;
  if (info.Has(kExtXrceth)) {
    hdr->xrceth = Xrceth{.srqn = LoadBe24(p + 1), .resv8 = p[0]};
    p += kXrcethLen;
  }
  if (info.Has(kExtFeth)) {
    hdr->feth = Feth::Decode(LoadBe32(p));
    p += kFethLen;
  }
  if (info.Has(kExtRdeth)) {
    hdr->rdeth_ee_context = LoadBe24(p + 1);
    p += kRdethLen;
  }
  if (info.Has(kExtDeth)) {
    hdr->deth = DecodeDeth(p);
    p += kDethLen;
  }
  if (info.Has(kExtReth)) {
    hdr->reth = DecodeReth(p);
    p += kRethLen;
  }
  if (info.Has(kExtAtomicEth)) {
    hdr->atomic = DecodeAtomicEth(p);
    p += kAtomicEthLen;
  }
  if (info.Has(kExtAeth)) {
    hdr->aeth = DecodeAeth(p);
    p += kAethLen;
  }
  if (info.Has(kExtAtomicAckEth)) {
    hdr->atomic_ack = DecodeAtomicAckEth(p);
    p += kAtomicAckEthLen;
  }
  if (info.Has(kExtImmDt)) {
    hdr->imm = LoadBe32(p);
    p += kImmDtLen;
  }
  if (info.Has(kExtIeth)) {
    hdr->ieth_rkey = LoadBe32(p);
  }
}

}  // namespace rocemu::protocol
