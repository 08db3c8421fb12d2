#pragma once
// grove's recursive compiler as a code generator, its claim: a Relay pass that runs before fusion
// and claims the calls of the recursive functions grove compiles (the recursive forms of
// Recognition.h), as annotate_target and partition_graph claim regions for dnnl, outlining each as
// an external function with Compiler="grove" whose body is the call as written:
//   - `@map(fn (%t) { ...; let %r = @f(%t, ws...); ...; rest }, xs)`, @map the standard map over a
//     List (checked structurally, TreeAdts.h): the closure's leading bindings are projections of
//     %t, calls of recursive forms (encoders) on %t or a projection of it whose other arguments do not
//     depend on the element, and bindings that do not depend on it either (tuples, projections,
//     constants, variables, operator calls); the rest uses neither %t nor its projections. It becomes
//         let <the bindings that do not depend on the element>;
//         let %rs = @grove_map_f(xs, ws...);
//         @map(fn (%r) { rest }, %rs)
//     with `def @grove_map_f(%xs, %ws..., Compiler="grove") { @map(fn (%t) { @f(%t, %ws...) }, %xs) }`
//     — with several encoders, the outlined closure gives the tuple of their results and %r is that
//     tuple; when the rest is the encoder's result, the call `@grove_map_f(xs, ws...)` is all. An
//     argument other than a variable is bound before the call, as the bindings are. Encoders are
//     also found in the rest's dataflow (graph form: `nn.dense(@f(%t, ws...).0, %wc)`, outside
//     branches and closures). Where @map is monomorphic, both maps are `@grove_list_map[A, B]`, the
//     standard map over that List, added once.
//   - a direct call `@f(args...)` elsewhere: `@grove_f(args...)`, one `def @grove_f(params of @f,
//     Compiler="grove") { @f(params...) }` per @f.
// The bodies of the recursive forms themselves (their own recursion, a rose tree's map over its
// children) are what grove translates, and are left as written. A global that already has
// Compiler="grove" (annotate_target's doing) and is not a recursive form is a UserError saying why;
// one that is loses the attribute, its calls claimed as above.
//
// Fusion leaves Compiler functions alone. The VM calls them with InvokeExternal; grove's code
// generator (byoc/GroveCodegen.cpp) reads what to run from their bodies (read_claimed), and a call
// that grove declines (a fold whose initial state is not all zeros) runs the body.

#include <optional>
#include <string>
#include <vector>

#include "backends/relay/recursive/Recognition.h"
#include "frontend/relay/IR.h"

namespace grove::relay {

// The Compiler attribute of grove's functions: grove's code generator's name.
inline constexpr const char *kGroveCompiler = "grove";

// The UserError for a function with Compiler="grove" that grove cannot compile, at `span`, saying why.
[[noreturn]] void grove_cannot_compile(const Span &span, const std::string &global, const std::string &why);

// The typed module `m` with grove's calls claimed, typed again. `forms` is m's recognition.
Module claim_recursive(const Module &m, const RecursiveForms &forms);

// One recursive form's call in a claimed function's body.
struct ClaimedEncoder {
  std::string function;   // the recursive global, without `@`
  std::vector<int> path;  // over a list: the projection of the element it takes, outermost first
  // For each of the function's parameters, the claimed function's parameter passed to it; -1 for
  // the tree (or list) parameter over a list, which is the element (or its projection).
  std::vector<int> args;
};

// What a claimed function runs: `@map` of its encoders over the List in its first parameter (their
// tuple when several), or one direct call.
struct ClaimedFunction {
  bool over_list = false;
  std::string cons, nil;  // over a list: the List's constructors
  std::vector<ClaimedEncoder> encoders;
};

// The claimed function `global` of the typed module `m`, read from its body as claim_recursive
// writes it; nullopt when the body is not of that shape.
std::optional<ClaimedFunction> read_claimed(const Module &m, const std::string &global);

}  // namespace grove::relay
