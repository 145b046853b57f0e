// Host-order transport headers <-> wire bytes (IBTA vol. 1 9.2-9.3). Callers
// guarantee the buffer sizes; the opcode table says which headers exist.
#ifndef ROCEMU_PROTOCOL_TRANSPORT_CODEC_H_
#define ROCEMU_PROTOCOL_TRANSPORT_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "protocol/headers.h"
#include "protocol/opcode.h"

namespace rocemu::protocol {

void EncodeBth(const Bth& bth, uint8_t* p);  // 12 bytes
Bth DecodeBth(const uint8_t* p);
// In place: field by field into *bth, so that the parser never copies a
// struct it has just written byte by byte (a store-forwarding stall).
void DecodeBth(const uint8_t* p, Bth* bth);
void EncodeReth(const Reth& reth, uint8_t* p);  // 16 bytes
Reth DecodeReth(const uint8_t* p);
void EncodeAeth(const Aeth& aeth, uint8_t* p);  // 4 bytes
Aeth DecodeAeth(const uint8_t* p);
void EncodeDeth(const Deth& deth, uint8_t* p);  // 8 bytes; reserved byte 0
Deth DecodeDeth(const uint8_t* p);
void EncodeAtomicEth(const AtomicEth& a, uint8_t* p);  // 28 bytes
AtomicEth DecodeAtomicEth(const uint8_t* p);
void EncodeAtomicAckEth(const AtomicAckEth& a, uint8_t* p);  // 8 bytes
AtomicAckEth DecodeAtomicAckEth(const uint8_t* p);

// BTH and the extension headers `info` lists, in wire order;
// info.header_len bytes.
void EncodeTransportHeaders(const TransportHeaders& hdr, const OpcodeInfo& info,
                            uint8_t* p);
// The extension headers after the BTH (hdr->bth is left untouched);
// reads info.header_len - 12 bytes at p + 12.
void DecodeExtensionHeaders(const uint8_t* p, const OpcodeInfo& info,
                            TransportHeaders* hdr);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_TRANSPORT_CODEC_H_
