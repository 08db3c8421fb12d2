#pragma once
// The op table: every primitive operator grove's Relay layer knows, with what type inference, the
// interpreter and operator fusion need to know about it. The table is plain data, built once from
// the op groups listed in Op.cpp (elementwise, reduce, transform, nn); nothing registers itself.
//
// An op's *type relation* maps its argument types to its result type:
//   * it returns the result type when the arguments say enough;
//   * it returns a null Type when an argument is not known yet (an IncompleteType): the type solver
//     retries after other constraints are solved;
//   * it throws OpError when the arguments or attributes are wrong — the message says what was
//     expected and what was found; the type checker adds the call's file:line:col and the op name.
// An op may also have an *argument inference* (TVM's relations assign argument types too): from the
// known argument types and the attributes it gives the type of an argument that is still a hole
// (nn.conv2d's and nn.dense's weight), which the type checker unifies before running the relation:
//   * it returns one entry per argument, null where it gives nothing (or an empty vector);
//   * with `explain` (inference is over and the argument is still a hole) it throws OpError naming
//     the attributes it lacks instead of giving nothing.
// Unknown dimensions (kAnyDim, `?`) follow Relay's `Any`: in broadcasting, `?` against n gives n
// (checked at run time), `?` against `?` gives `?`; elsewhere a result dimension computed from a `?`
// is `?`.
//
// float16 is a storage type: the ops that compute (the elementwise, reduce and nn groups) compute
// it in float32, as TVM's code generation does on CPUs. The table wraps their kernels
// (float16_in_float32) so that a call with a float16 argument gets its float16 arguments widened
// to float32 (exact), and every float32 result is rounded to float16, to nearest even — except
// where the call's `out_dtype` or `dtype` attribute asks for float32 (nn.dense of float16 to
// float32, a cast); an `out_dtype` of float16 is float32 to the wrapped kernel. Transforms move
// bytes and take float16 as it is.
//
// An op's *kernel* computes the result on concrete tensors. Arguments that are tuples
// (concatenate's) arrive flattened, field by field; a tuple result (split, nn.batch_norm) is returned
// as its fields, any other result as one tensor. Kernels check at run time what types could not
// (a `?` that meets a mismatching size) and throw OpError naming the shapes; the interpreter adds
// the op name and location.

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

// TVM's TOpPattern, which operator fusion reads.
enum class OpPattern {
  ElemWise = 0,
  Broadcast = 1,
  Injective = 2,
  CommReduce = 3,
  OutEWiseFusable = 4,
  Tuple = 7,
  Opaque = 8
};
const char *to_string(OpPattern p);

// Thrown by type relations and kernels; the caller adds the op name and the location.
class OpError : public std::runtime_error {
 public:
  explicit OpError(const std::string &message) : std::runtime_error(message) {}
};

using TypeRelation = Type (*)(const std::vector<Type> &args, const Attrs &attrs);
using ArgInference = std::vector<Type> (*)(const std::vector<Type> &args, const Attrs &attrs, bool explain);
using OpKernel = std::function<std::vector<NDArray>(const std::vector<NDArray> &args, const Attrs &attrs)>;

struct OpDef {
  std::string name;                     // as in the text format: "nn.conv2d"
  int num_args;                         // the number of call arguments (a tuple counts as one)
  OpPattern pattern;                    // for operator fusion
  std::vector<std::string> attr_names;  // the keyword attributes the op accepts
  TypeRelation relation;
  OpKernel kernel;
  ArgInference infer_args = nullptr;  // types for arguments still unknown, or null
};

// The op named `name`, or null.
const OpDef *find_op(std::string_view name);
// Every op, sorted by name.
const std::vector<OpDef> &all_ops();

// The op groups (one file each under ops/); Op.cpp concatenates them into the table.
std::vector<OpDef> elementwise_ops();  // ops/Elementwise.cpp: unary, binary (broadcast), compare, where, clip
std::vector<OpDef> reduce_ops();       // ops/Reduce.cpp: sum, mean, max, nn.softmax
std::vector<OpDef> transform_ops();    // ops/Transform.cpp: concatenate ... full
std::vector<OpDef> nn_ops();           // ops/NN.cpp: nn.dense ... nn.batch_norm
std::vector<OpDef> annotation_ops();   // ops/Annotation.cpp: annotation.compiler_begin/end (BYOC)

// `kernel` with float16 computed in float32 (see above); calls without a float16 argument run
// `kernel` as it is.
OpKernel float16_in_float32(OpKernel kernel);

// Reading attributes in relations and kernels. Each throws OpError naming the attribute and what
// was expected when the value has the wrong kind; `fallback` is used when the attribute is absent
// or None.
int64_t attr_int(const Attrs &attrs, const std::string &name, int64_t fallback);
double attr_float(const Attrs &attrs, const std::string &name, double fallback);
bool attr_bool(const Attrs &attrs, const std::string &name, bool fallback);
std::string attr_string(const Attrs &attrs, const std::string &name, const std::string &fallback);
// A list of integers; a single integer is read as a one-element list.
std::vector<int64_t> attr_ints(const Attrs &attrs, const std::string &name,
                               const std::vector<int64_t> &fallback);
// Throws OpError when the attribute is absent or None.
void require_attr(const Attrs &attrs, const std::string &name);

}  // namespace grove::relay
