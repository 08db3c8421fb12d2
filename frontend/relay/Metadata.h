#pragma once
// TVM's `#[metadata]` section: what a module printed by TVM (`mod.astext()`, the "relay" models
// `tvmc` reads) ends with when it has constants that are not literals. It is TVM's JSON object
// graph (tvm.ir.save_json): `root` names a Map node whose key "relay.Constant" maps to an Array of
// relay.Constant nodes, each with an attribute `data`, an index into `b64ndarrays` — each entry a
// tensor in TVM's NDArray save format (magic 0xDD5E40F096B4A13F, a reserved word, the device, the
// rank, the DLDataType code/bits/lanes, the shape as int64s, the byte count, the little-endian
// bytes), base64-encoded. `meta[relay.Constant][i]` is the i-th element of that Array.
//
// The parser reads the section in place of the sidecar (parse_relay_file, parse_module); the printer
// writes it with PrintOptions::inline_meta (`grove relay opt --meta inline`).

#include <string>
#include <string_view>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// The constants meta[relay.Constant][i] refers to, in order. `where` names the section in messages
// ("m.relay:12"). A UserError for anything malformed: not JSON, no relay.Constant list, a node that
// is not one, a bad index, base64 or NDArray header, a device other than the CPU, a vector dtype,
// a dtype grove has no name for, or a byte count that does not match the shape.
std::vector<NDArray> read_tvm_metadata(std::string_view json, const std::string &where);

// The section's JSON (after the `#[metadata]` line) for `constants`, as TVM writes it.
std::string write_tvm_metadata(const std::vector<NDArray> &constants);

// One tensor in TVM's NDArray save format, base64-encoded, and back.
std::string encode_tvm_ndarray(const NDArray &a);
NDArray decode_tvm_ndarray(std::string_view base64, const std::string &where);

}  // namespace grove::relay
