#pragma once
// The reader of TVM Relay's text format, version 0.0.5: text → Module or Expr, every node with the
// Span (file, line, col) it was written at. Bad input is a UserError at file:line:col that says what
// was expected and what was found, or what grove does not support.

#include <string>
#include <string_view>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// Parses a whole program: a module of `type` and `def` definitions, or a single expression
// (optionally preceded by `free_var %x: T;` declarations), which becomes `@main` with the free vars
// as its parameters in declaration order. `meta` holds the constants `meta[relay.Constant][i]` refers to.
Module parse_module(std::string_view text, const std::string &file_name,
                    const std::vector<NDArray> &meta = {});

// An expression alone (for tests and tools); free vars must be declared with free_var. Types of ADTs
// come from `module` (e.g. Cons, Nil) when given.
Expr parse_expr(std::string_view text, const std::string &file_name, const Module *module = nullptr,
                const std::vector<NDArray> &meta = {});

// Reads FILE; if the text uses meta[relay.Constant][i], reads the constants from the sidecar file
// meta_path(FILE) (see below) and errors clearly (naming FILE:line:col and the sidecar) if it is missing or
// too short.
Module parse_relay_file(const std::string &path);

// The constants sidecar of a Relay file: FILE with its extension replaced by ".meta.safetensors"
// (prog.relay -> prog.meta.safetensors), tensors named "relay.Constant.0", "relay.Constant.1", ...
std::string meta_path(const std::string &relay_path);

}  // namespace grove::relay
