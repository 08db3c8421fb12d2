#pragma once
// The Relay text printer: modules and expressions in TVM's text format 0.0.5, as TVM's printer
// writes it, such that parse(print(m)) is structurally equal to m (relay/StructuralEqual.h).
//
//   * Every call, tuple, projection, ref, if, match or nested function that is an operand of another
//     node is bound first as a graph binding (`%0 = add(%x, %y);`), so the text nests shallowly; a
//     scope's result and a let's value are printed in place. Lets print as `let %x = v;` lines.
//   * Variables print their name hint made a valid, module-unique name (`%x`, `%x1`, `%v0` for a
//     hint `0`), so that distinct variables never share a name and never read as graph bindings.
//   * Scalar constants of every dtype print as literals that read back
//     bit for bit (`True`, `1`, `2i64`, `0.1f`, `-inff64`); other constants print as
//     `meta[relay.Constant][i]` and are appended to the meta list, the sidecar's contents.
// Iterative over let chains and operand nests; recursion only per nested scope (a function,
// branch or clause inside another), which the text itself nests.

#include <string>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

struct PrintOptions {
  // `/* ty=... */` (the checked_type) after every graph binding and let value that has one.
  bool show_types = false;
  // print_module: the meta constants as TVM's `#[metadata]` section at the end of the text
  // (relay/Metadata.h) instead of a sidecar; `meta` is then still filled.
  bool inline_meta = false;
};

struct PrintedModule {
  std::string text;
  std::vector<NDArray> meta;  // meta[relay.Constant][i] is meta[i]
};

// `#[version = "0.0.5"]`, the type definitions, then the functions, in definition order.
PrintedModule print_module(const Module &m, const PrintOptions &options = {});

// An expression, preceded by `free_var %x: T;` for each free variable. Non-literal constants are
// appended to `meta` (numbered from its current size); without `meta` they are still printed as
// meta references, numbered from 0, for messages.
std::string print_expr(const Expr &e, std::vector<NDArray> *meta = nullptr, const PrintOptions &options = {});

// An attribute value as the text format writes it: `1`, `1e-05f`, `True`, `"NCHW"`, `[1, 1]`, `None`.
std::string print_attr_value(const AttrValue &value);

// Writes the module's text to `path` and, when it has meta constants, the sidecar meta_path(path)
// (relay/Parser.h), each atomically; the sidecar is written first, so the new text never appears
// without its constants. With options.inline_meta the constants are in the text and no sidecar is
// written.
void write_relay_file(const std::string &path, const Module &m, const PrintOptions &options = {});

}  // namespace grove::relay
