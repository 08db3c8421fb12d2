#pragma once
// What an external code generator claims (bring-your-own-codegen): its support declarations and
// pattern table, as plain data the partitioning passes read. The code generators themselves live in
// backends/relay/byoc/ (Codegen.h); each fills one ExternalTarget.
//
//   * ops: per operator name, a predicate on a typed call of it (attributes, argument types): the
//     target compiles that call when the predicate holds (a null predicate: always).
//   * patterns: named dataflow patterns (DFPattern.h), in priority order, each with an optional check
//     on the match. merge_composite outlines every match as a function with
//     `Composite="<target>.<name>"`; annotate_target then claims calls of those functions for the
//     target whose name prefixes the composite name.
//   * claims_function: optionally, whole global functions the target compiles by itself (grove's
//     recursive compiler claims recursive tree functions); annotate_target marks them with
//     `Compiler="<target>"` instead of annotating their calls.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/relay/IR.h"
#include "frontend/relay/byoc/Pattern.h"

namespace grove::relay {

// A predicate on a typed op call (the Call node; its arguments' checked types are set).
using SupportPredicate = std::function<bool(const Call &call)>;

struct CompositePattern {
  std::string name;  // the composite's full name, "<target>.<name>": "dnnl.dense_bias_relu"
  DFPattern pattern;
  // A check on a match (attributes, shapes); null = every match. Receives the matched root.
  std::function<bool(const DFPatternMatch &match)> check;
};

struct ExternalTarget {
  std::string name;  // "dnnl"; a valid identifier, never "default"
  std::map<std::string, SupportPredicate> ops;
  std::vector<CompositePattern> patterns;
  std::function<bool(const Module &module, const std::string &global)> claims_function;

  // Whether this target compiles `call`: an op call it declares (predicate holding), or a call of a
  // Function whose Composite attribute starts with "<name>.".
  bool supports(const Call &call) const;
};

}  // namespace grove::relay
