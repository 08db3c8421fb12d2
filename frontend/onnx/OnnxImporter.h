#pragma once
// The ONNX importer: an ONNX ModelProto (opsets 11 to 17 of the default domain) translated to a
// Relay Module whose @main takes the graph inputs as parameters (dim_params and unknown dimensions
// become `?`) and returns the graph output (a tuple for several). Initializers and Constant nodes
// become Relay constants, which the printer writes to the constants sidecar as for any Relay file.
//
// What is computed at import time: every node whose inputs are all known (constants, initializers,
// shapes) is folded, and shapes flow as values whose dimensions may be unknown until run time, so the
// Shape / Gather / Concat / Reshape arithmetic of torch.onnx.export becomes static Relay reshapes.
// The ONNX LSTM and GRU (forward, one layer, default activations) become grove's fold over a List of
// the sequence's steps (backends/relay/recursive/SequenceFunctions.h), which the VM compiles.
//
// Every unsupported operator, opset, attribute value or data type is a UserError naming it and the
// node (its name and index); so is a truncated, corrupt or hostile file. Nothing here crashes on bad
// bytes.

#include <string>
#include <string_view>

#include "frontend/relay/IR.h"

namespace grove::onnx_frontend {

// The model serialized in `bytes`; `file` names it in messages.
relay::Module import_onnx(std::string_view bytes, const std::string &file);
// The model in the file `path`.
relay::Module import_onnx_file(const std::string &path);

// Whether `path` names an ONNX model rather than Relay text: the extension ".onnx", or a file that
// starts as a serialized ModelProto does (the ir_version field, byte 0x08), which Relay text never does.
bool is_onnx_file(const std::string &path);

// The one place grove's commands read a program file: an ONNX model (imported) or Relay text with
// its constants sidecar (relay::parse_relay_file).
relay::Module read_program_file(const std::string &path);

}  // namespace grove::onnx_frontend
