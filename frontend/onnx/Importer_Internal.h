#pragma once
// What the importer's files share (Importer.cpp: the model and graph walk; Operators.cpp: one
// translation per ONNX operator; Recurrent.cpp: LSTM and GRU as folds over a List).

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/onnx/Messages.h"
#include "frontend/relay/IR.h"
#include "onnx/onnx_pb.h"
#include "support/Error.h"

namespace grove::onnx_frontend {

using relay::Attrs;
using relay::AttrValue;
using relay::DType;
using relay::Expr;
using relay::NDArray;
using relay::Shape;
using relay::Type;

// An element of a shape value not known until run time (a `?` dimension read by Shape).
inline constexpr int64_t kUnknown = INT64_MIN;
// The most elements a tensor read from the model may have, and one the importer makes from a shape
// (ConstantOfShape, Expand of a constant), which the file's size does not bound.
inline constexpr int64_t kMaxElements = int64_t(1) << 28;
inline constexpr int64_t kMaxMadeElements = int64_t(1) << 24;

// One ONNX value during the import: a Relay expression with its tensor type, plus what is known of
// it now. A constant carries its array; a shape value (an int64 tensor computed from shapes) carries
// its elements, kUnknown where only the run time knows them, and has no expression when any is.
struct OnnxValue {
  Expr expr;
  DType dtype = DType::Float32;
  Shape shape;
  std::optional<NDArray> constant;
  std::optional<std::vector<int64_t>> elements;
  // For a shape value: where each unknown element comes from, (a tensor, its axis) — Shape's — or a
  // null Expr where it was computed. Empty when nothing is known of them.
  std::vector<std::pair<Expr, int64_t>> origins;

  bool known() const { return constant.has_value(); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

// The value of a constant array.
OnnxValue constant_value(const NDArray &array);
// A shape value: a constant when every element is known.
OnnxValue shape_value(std::vector<int64_t> elements, bool scalar,
                      std::vector<std::pair<Expr, int64_t>> origins = {});
// The origins of v's elements, one per element (null where unknown or none).
std::vector<std::pair<Expr, int64_t>> origins_of(const OnnxValue &v);

// The DType of an ONNX TensorProto data type; UserError (naming `what` at `where`) when grove has none.
DType dtype_of(int onnx_type, const std::string &where, const std::string &what);
// The array of an initializer or a Constant node's tensor; UserError for bad or external data.
NDArray read_tensor(const ::onnx::TensorProto &t, const std::string &where);
// Product of `shape` with overflow and size checks (at most `limit`: kMaxElements or kMaxMadeElements).
int64_t checked_elements(const Shape &shape, const std::string &where, const std::string &what,
                         int64_t limit = kMaxElements);

class Importer;

// One node being translated: its inputs, attributes, and the calls it emits (folded when every
// argument is known).
class NodeContext {
 public:
  NodeContext(Importer &importer, const ::onnx::NodeProto &node, int index, int64_t opset);

  const ::onnx::NodeProto &node() const { return node_; }
  int64_t opset() const { return opset_; }
  // "FILE: node #I 'NAME' (OP)", the prefix of every message about this node.
  const std::string &where() const { return where_; }

  // Inputs. An input named "" is absent (ONNX's optional inputs).
  int num_inputs() const { return node_.input_size(); }
  bool has_input(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  const OnnxValue &input(int i, const char *what) const;
  // An input that must be known now: its array (int64 / float elements read with element_as_*).
  const NDArray &known_input(int i, const char *what, const char *why = "") const;
  std::vector<int64_t> known_ints(int i, const char *what) const;
  // A shape input (Reshape's, Expand's): its elements, kUnknown where only the run time knows them.
  std::vector<int64_t> shape_elements(int i, const char *what) const;
  // Whether output i is requested and some node or the graph uses it.
  bool output_used(int i) const;

  // Attributes. Each translation lists the attributes it reads; any other is a UserError.
  void accept_attrs(std::initializer_list<const char *> names) const;
  const ::onnx::AttributeProto *attr(const char *name) const;
  int64_t attr_int(const char *name, int64_t fallback) const;
  float attr_float(const char *name, float fallback) const;
  std::string attr_string(const char *name, const std::string &fallback) const;
  std::vector<int64_t> attr_ints(const char *name, const std::vector<int64_t> &fallback) const;
  std::vector<std::string> attr_strings(const char *name) const;
  [[noreturn]] void bad_attr(const char *name, const std::string &value, const std::string &why) const;

  // Emits `op(args)` with `attrs`; folded into a constant when every argument is known. Tuple
  // arguments (concatenate's) are given as `tuple_args`, the op's single argument.
  OnnxValue call(const char *op, const std::vector<OnnxValue> &args, Attrs attrs = {}) const;
  OnnxValue call_tuple(const char *op, const std::vector<OnnxValue> &fields, Attrs attrs = {}) const;
  // Field `index` of a call whose result is a tuple (nn.batch_norm).
  OnnxValue call_field(const char *op, const std::vector<OnnxValue> &args, Attrs attrs, int index) const;

  Importer &importer() const { return importer_; }

 private:
  Importer &importer_;
  const ::onnx::NodeProto &node_;
  int64_t opset_;
  std::string where_;
};

// The translation of one operator: the node's outputs, in order (fewer than the node declares when
// the rest are unused; output_used says which are).
using Translation = std::vector<OnnxValue> (*)(NodeContext &node);
struct OperatorEntry {
  const char *name;
  int64_t since;  // the first opset whose semantics the translation implements (<= 11 for all)
  Translation translate;
};
// Operators.cpp and Recurrent.cpp: the table, sorted by name.
const std::vector<OperatorEntry> &operator_table();
std::vector<OperatorEntry> recurrent_operators();

// What Recurrent.cpp needs from the importer: the List ADT and new global functions.
class Importer {
 public:
  explicit Importer(std::string file) : file_(std::move(file)) {}
  const std::string &file() const { return file_; }
  relay::Module &module() { return module_; }
  // `type List[A] { Cons(A, List[A]), Nil }`, added to the module on first use.
  const relay::TypeData &list_type();
  // A fresh global name with this prefix (lstm, lstm_1, ...).
  std::string fresh_global(const std::string &prefix);
  // Names used as node inputs or graph outputs.
  std::map<std::string, int> uses;
  // The values defined so far, by ONNX name.
  std::map<std::string, OnnxValue> values;

 private:
  std::string file_;
  relay::Module module_;
  std::map<std::string, int> globals_;
};

}  // namespace grove::onnx_frontend
