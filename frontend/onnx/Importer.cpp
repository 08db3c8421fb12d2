// The ONNX importer's model and graph walk (OnnxImporter.h):
//   1. Parse the ModelProto (protobuf rejects bad wire data; sizes are checked before allocating).
//   2. Check the default domain's opset (11 to 17).
//   3. Initializers become constants; graph inputs that are not initializers become @main's
//      parameters, typed from their ONNX types (a dim_param or a missing dim_value is `?`).
//   4. Nodes, in their (topological) order, are translated by the operator table; a node whose
//      inputs are all known is folded into constants by the Relay ops' own kernels.
//   5. The graph outputs are @main's result; type inference then checks the whole module.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "frontend/onnx/Importer_Internal.h"
#include "frontend/onnx/OnnxImporter.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/ops/Op.h"

namespace grove::onnx_frontend {

using namespace relay;

namespace {

const char *onnx_type_name(int t) {
  switch (t) {
    case ::onnx::TensorProto::FLOAT:
      return "float";
    case ::onnx::TensorProto::UINT8:
      return "uint8";
    case ::onnx::TensorProto::INT8:
      return "int8";
    case ::onnx::TensorProto::UINT16:
      return "uint16";
    case ::onnx::TensorProto::INT16:
      return "int16";
    case ::onnx::TensorProto::INT32:
      return "int32";
    case ::onnx::TensorProto::INT64:
      return "int64";
    case ::onnx::TensorProto::STRING:
      return "string";
    case ::onnx::TensorProto::BOOL:
      return "bool";
    case ::onnx::TensorProto::FLOAT16:
      return "float16";
    case ::onnx::TensorProto::DOUBLE:
      return "double";
    case ::onnx::TensorProto::UINT32:
      return "uint32";
    case ::onnx::TensorProto::UINT64:
      return "uint64";
    case ::onnx::TensorProto::COMPLEX64:
      return "complex64";
    case ::onnx::TensorProto::COMPLEX128:
      return "complex128";
    case ::onnx::TensorProto::BFLOAT16:
      return "bfloat16";
    default:
      return "undefined";
  }
}

// A Relay variable name for an ONNX value name ("onnx::Gemm_0" -> "onnx__Gemm_0").
std::string relay_name(const std::string &name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  return out;
}

Type tensor_type(const OnnxValue &v) { return TensorType::make(v.shape, v.dtype); }

OnnxValue typed(Expr e, const Type &t, const std::string &where) {
  const auto *tt = t.as<TensorType>();
  if (!tt) user_error(msg::kOpError, where, "the operator's result is not a tensor");
  OnnxValue v;
  v.expr = std::move(e);
  v.dtype = tt->dtype;
  v.shape = tt->shape;
  return v;
}

// The value of a Relay call: folded when every argument is known, else a Call of the op.
OnnxValue emit(const std::string &where, const char *op, const std::vector<OnnxValue> &args, bool tuple_arg,
               const Attrs &attrs, int field) {
  const OpDef *def = find_op(op);
  GROVE_CHECK(def != nullptr, "the importer emits the unknown op {}", op);
  std::vector<Type> types;
  std::vector<Expr> exprs;
  bool all_known = true;
  for (const OnnxValue &a : args) {
    if (!a.expr.defined())
      user_error(msg::kOpError, where, "a shape known only at run time cannot be used as a tensor");
    types.push_back(tensor_type(a));
    exprs.push_back(a.expr);
    all_known = all_known && a.known();
  }
  if (tuple_arg) {
    types = {TupleType::make(types)};
    exprs = {Tuple::make(exprs)};
  }
  Type result;
  try {
    result = def->relation(types, attrs);
  } catch (const OpError &e) {
    user_error(msg::kOpError, where, fmt::format("{}: {}", op, e.what()));
  }
  GROVE_CHECK(result.defined(), "{}'s relation needs more than the importer's complete types", op);
  if (field >= 0) {
    const auto *tuple = result.as<TupleType>();
    GROVE_CHECK(tuple && field < int(tuple->fields.size()), "{} has no result field {}", op, field);
    result = tuple->fields[field];
  }
  if (all_known && def->kernel) {
    std::vector<NDArray> arrays;
    for (const OnnxValue &a : args) arrays.push_back(*a.constant);
    std::vector<NDArray> out;
    try {
      out = def->kernel(arrays, attrs);
    } catch (const OpError &e) {
      user_error(msg::kOpError, where, fmt::format("{}: {}", op, e.what()));
    }
    const size_t k = field >= 0 ? size_t(field) : 0;
    GROVE_CHECK(k < out.size(), "{}'s kernel returned {} results", op, out.size());
    return constant_value(out[k]);
  }
  Expr call = Call::make(Op::make(op), exprs, attrs);
  if (field >= 0) call = TupleGetItem::make(call, field);
  return typed(call, result, where);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Values and tensors
// ---------------------------------------------------------------------------------------------

OnnxValue constant_value(const NDArray &array) {
  OnnxValue v;
  v.expr = Constant::make(array);
  v.dtype = array.dtype();
  v.shape = array.shape();
  v.constant = array;
  return v;
}

std::vector<std::pair<Expr, int64_t>> origins_of(const OnnxValue &v) {
  const size_t n = v.elements ? v.elements->size() : size_t(v.known() ? v.constant->size() : 0);
  if (v.origins.size() == n) return v.origins;
  return std::vector<std::pair<Expr, int64_t>>(n, {Expr(), 0});
}

OnnxValue shape_value(std::vector<int64_t> elements, bool scalar,
                      std::vector<std::pair<Expr, int64_t>> origins) {
  const bool all_known =
      std::none_of(elements.begin(), elements.end(), [](int64_t e) { return e == kUnknown; });
  Shape shape = scalar ? Shape{} : Shape{int64_t(elements.size())};
  if (all_known) {
    NDArray a(DType::Int64, shape);
    std::copy(elements.begin(), elements.end(), a.data<int64_t>());
    OnnxValue v = constant_value(a);
    v.elements = std::move(elements);
    return v;
  }
  OnnxValue v;
  v.dtype = DType::Int64;
  v.shape = shape;
  if (origins.size() == elements.size()) v.origins = std::move(origins);
  v.elements = std::move(elements);
  return v;
}

DType dtype_of(int t, const std::string &where, const std::string &what) {
  switch (t) {
    case ::onnx::TensorProto::FLOAT:
      return DType::Float32;
    case ::onnx::TensorProto::UINT8:
      return DType::UInt8;
    case ::onnx::TensorProto::INT8:
      return DType::Int8;
    case ::onnx::TensorProto::UINT16:
      return DType::UInt16;
    case ::onnx::TensorProto::INT16:
      return DType::Int16;
    case ::onnx::TensorProto::INT32:
      return DType::Int32;
    case ::onnx::TensorProto::INT64:
      return DType::Int64;
    case ::onnx::TensorProto::BOOL:
      return DType::Bool;
    case ::onnx::TensorProto::FLOAT16:
      return DType::Float16;
    case ::onnx::TensorProto::DOUBLE:
      return DType::Float64;
    case ::onnx::TensorProto::UINT32:
      return DType::UInt32;
    case ::onnx::TensorProto::UINT64:
      return DType::UInt64;
    default:
      user_error(msg::kUnsupportedDType, where, onnx_type_name(t), t, what);
  }
}

int64_t checked_elements(const Shape &shape, const std::string &where, const std::string &what,
                         int64_t limit) {
  const std::string most = limit == kMaxElements ? "2^28" : "2^24";
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) user_error(msg::kTensorDims, where, what, d);
    if (d != 0 && n > limit / d) user_error(msg::kTensorTooBig, where, what, "more than " + most, most);
    n *= d;
  }
  if (n > limit) user_error(msg::kTensorTooBig, where, what, n, most);
  return n;
}

namespace {
// How many values the typed field of `dtype` holds (TensorProto keeps small integers in int32_data).
int64_t typed_values(const ::onnx::TensorProto &t, DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return t.float_data_size();
    case DType::Float64:
      return t.double_data_size();
    case DType::Int64:
      return t.int64_data_size();
    case DType::UInt32:
    case DType::UInt64:
      return t.uint64_data_size();
    default:
      return t.int32_data_size();
  }
}
}  // namespace

NDArray read_tensor(const ::onnx::TensorProto &t, const std::string &where) {
  const std::string &name = t.name();
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) user_error(msg::kExternalData, where, name);
  const DType dtype = dtype_of(t.data_type(), where, name);
  Shape shape(t.dims().begin(), t.dims().end());
  const int64_t n = checked_elements(shape, where, name);
  const size_t bytes = size_t(n) * dtype_bytes(dtype);
  auto mismatch = [&](int64_t found, size_t raw) {
    user_error(msg::kTensorSize, where, name, shape_to_string(shape), onnx_type_name(t.data_type()), found,
               raw, fmt::format("{} value(s)", n));
  };
  // The data is checked against the shape before anything is allocated: a small file cannot ask
  // for a large array.
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      mismatch(int64_t(t.raw_data().size() / dtype_bytes(dtype)), t.raw_data().size());
    NDArray a(dtype, shape);
    if (bytes > 0) std::memcpy(a.raw(), t.raw_data().data(), bytes);
    return a;
  }
  if (typed_values(t, dtype) != n) mismatch(typed_values(t, dtype), 0);
  NDArray a(dtype, shape);
  auto fill = [&](const auto &field, auto convert) {
    if (field.size() != n) mismatch(field.size(), 0);
    for (int64_t i = 0; i < n; ++i) convert(i, field.Get(int(i)));
  };
  switch (dtype) {
    case DType::Float32:
      fill(t.float_data(), [&](int64_t i, float v) { a.data<float>()[i] = v; });
      break;
    case DType::Float64:
      fill(t.double_data(), [&](int64_t i, double v) { a.data<double>()[i] = v; });
      break;
    case DType::Int64:
      fill(t.int64_data(), [&](int64_t i, int64_t v) { a.data<int64_t>()[i] = v; });
      break;
    case DType::Int32:
      fill(t.int32_data(), [&](int64_t i, int32_t v) { a.data<int32_t>()[i] = v; });
      break;
    case DType::Int16:
      fill(t.int32_data(), [&](int64_t i, int32_t v) { a.data<int16_t>()[i] = int16_t(v); });
      break;
    case DType::Int8:
      fill(t.int32_data(), [&](int64_t i, int32_t v) { a.data<int8_t>()[i] = int8_t(v); });
      break;
    case DType::UInt16:
    case DType::Float16:
      fill(t.int32_data(), [&](int64_t i, int32_t v) { a.data<uint16_t>()[i] = uint16_t(v); });
      break;
    case DType::UInt8:
    case DType::Bool:
      fill(t.int32_data(), [&](int64_t i, int32_t v) { a.data<uint8_t>()[i] = uint8_t(v); });
      break;
    case DType::UInt32:
      fill(t.uint64_data(), [&](int64_t i, uint64_t v) { a.data<uint32_t>()[i] = uint32_t(v); });
      break;
    case DType::UInt64:
      fill(t.uint64_data(), [&](int64_t i, uint64_t v) { a.data<uint64_t>()[i] = v; });
      break;
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// NodeContext
// ---------------------------------------------------------------------------------------------

NodeContext::NodeContext(Importer &importer, const ::onnx::NodeProto &node, int index, int64_t opset)
    : importer_(importer),
      node_(node),
      opset_(opset),
      where_(fmt::format(msg::kNodeWhere, importer.file(), index, node.name(), node.op_type())) {}

const OnnxValue &NodeContext::input(int i, const char *what) const {
  if (!has_input(i)) user_error(msg::kMissingInput, where_, i, what);
  auto it = importer_.values.find(node_.input(i));
  if (it == importer_.values.end()) user_error(msg::kUndefinedInput, where_, i, node_.input(i));
  return it->second;
}

const NDArray &NodeContext::known_input(int i, const char *what, const char *why) const {
  const OnnxValue &v = input(i, what);
  if (!v.known()) user_error(msg::kNotKnown, where_, i, node_.input(i), why);
  return *v.constant;
}

std::vector<int64_t> NodeContext::known_ints(int i, const char *what) const {
  const NDArray &a = known_input(i, what);
  if (!is_int(a.dtype()) || a.ndim() > 1)
    user_error(msg::kRank, where_, i, a.ndim(), fmt::format("{} must be a 1-D integer tensor", what));
  std::vector<int64_t> out(size_t(a.size()));
  for (int64_t k = 0; k < a.size(); ++k) out[k] = a.element_as_int(k);
  return out;
}

std::vector<int64_t> NodeContext::shape_elements(int i, const char *what) const {
  const OnnxValue &v = input(i, what);
  if (v.elements) return *v.elements;
  return known_ints(i, what);
}

bool NodeContext::output_used(int i) const {
  return i < node_.output_size() && !node_.output(i).empty() && importer_.uses.count(node_.output(i)) > 0;
}

void NodeContext::accept_attrs(std::initializer_list<const char *> names) const {
  for (const ::onnx::AttributeProto &a : node_.attribute()) {
    bool ok = false;
    for (const char *n : names) ok = ok || a.name() == n;
    if (ok) continue;
    std::string accepted;
    for (const char *n : names) accepted += (accepted.empty() ? "" : ", ") + std::string(n);
    user_error(msg::kUnsupportedAttr, where_, a.name(),
               accepted.empty() ? ": the operator takes none" : "; grove reads " + accepted);
  }
}

const ::onnx::AttributeProto *NodeContext::attr(const char *name) const {
  for (const ::onnx::AttributeProto &a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeContext::attr_int(const char *name, int64_t fallback) const {
  const auto *a = attr(name);
  if (!a) return fallback;
  if (a->type() != ::onnx::AttributeProto::INT) user_error(msg::kAttrKind, where_, name, "an integer");
  return a->i();
}

float NodeContext::attr_float(const char *name, float fallback) const {
  const auto *a = attr(name);
  if (!a) return fallback;
  if (a->type() != ::onnx::AttributeProto::FLOAT) user_error(msg::kAttrKind, where_, name, "a float");
  return a->f();
}

std::string NodeContext::attr_string(const char *name, const std::string &fallback) const {
  const auto *a = attr(name);
  if (!a) return fallback;
  if (a->type() != ::onnx::AttributeProto::STRING) user_error(msg::kAttrKind, where_, name, "a string");
  return a->s();
}

std::vector<int64_t> NodeContext::attr_ints(const char *name, const std::vector<int64_t> &fallback) const {
  const auto *a = attr(name);
  if (!a) return fallback;
  if (a->type() != ::onnx::AttributeProto::INTS)
    user_error(msg::kAttrKind, where_, name, "a list of integers");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<std::string> NodeContext::attr_strings(const char *name) const {
  const auto *a = attr(name);
  if (!a) return {};
  if (a->type() != ::onnx::AttributeProto::STRINGS)
    user_error(msg::kAttrKind, where_, name, "a list of strings");
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

void NodeContext::bad_attr(const char *name, const std::string &value, const std::string &why) const {
  user_error(msg::kAttrValue, where_, name, value, why);
}

OnnxValue NodeContext::call(const char *op, const std::vector<OnnxValue> &args, Attrs attrs) const {
  return emit(where_, op, args, false, attrs, -1);
}

OnnxValue NodeContext::call_tuple(const char *op, const std::vector<OnnxValue> &fields, Attrs attrs) const {
  return emit(where_, op, fields, true, attrs, -1);
}

OnnxValue NodeContext::call_field(const char *op, const std::vector<OnnxValue> &args, Attrs attrs,
                                  int index) const {
  return emit(where_, op, args, false, attrs, index);
}

// ---------------------------------------------------------------------------------------------
// Importer
// ---------------------------------------------------------------------------------------------

const TypeData &Importer::list_type() {
  if (const TypeData *t = module_.find_type("List")) return *t;
  TypeData data;
  data.header = GlobalTypeVar::make("List");
  Type a = TypeVar::make("A");
  data.type_vars = {a};
  data.constructors = {Constructor::make("Cons", {a, TypeCall::make(data.header, {a})}, data.header, 0),
                       Constructor::make("Nil", {}, data.header, 1)};
  module_.add_type(data);
  return *module_.find_type("List");
}

std::string Importer::fresh_global(const std::string &prefix) {
  int &n = globals_[prefix];
  std::string name = n == 0 ? prefix : fmt::format("{}_{}", prefix, n);
  ++n;
  return name;
}

namespace {

int64_t default_opset(const ::onnx::ModelProto &model, const std::string &file) {
  int64_t opset = -1;
  for (const ::onnx::OperatorSetIdProto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 0) user_error(msg::kNoOpset, file);
  if (opset < 11 || opset > 17) user_error(msg::kOpset, file, opset);
  return opset;
}

std::string supported_operators() {
  std::string names;
  for (const OperatorEntry &e : operator_table()) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}

const OperatorEntry *find_operator(const std::string &name) {
  const std::vector<OperatorEntry> &table = operator_table();
  auto it = std::lower_bound(table.begin(), table.end(), name,
                             [](const OperatorEntry &e, const std::string &n) { return e.name < n; });
  return it != table.end() && it->name == name ? &*it : nullptr;
}

// A graph input's tensor type: a dim_param or an absent dim_value is `?`.
Type input_type(const ::onnx::ValueInfoProto &info, const std::string &file) {
  if (!info.type().has_tensor_type()) user_error(msg::kInputNotTensor, file, info.name());
  const ::onnx::TypeProto_Tensor &t = info.type().tensor_type();
  const DType dtype = dtype_of(t.elem_type(), fmt::format("'{}'", file), info.name());
  if (!t.has_shape()) user_error(msg::kInputNoShape, file, info.name());
  Shape shape;
  for (int d = 0; d < t.shape().dim_size(); ++d) {
    const ::onnx::TensorShapeProto_Dimension &dim = t.shape().dim(d);
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) user_error(msg::kBadDim, file, d, info.name(), dim.dim_value());
      shape.push_back(dim.dim_value());
    } else {
      shape.push_back(kAnyDim);
    }
  }
  return TensorType::make(shape, dtype);
}

Module import_model(const ::onnx::ModelProto &model, const std::string &file) {
  if (!model.has_graph()) user_error(msg::kNoGraph, file);
  const int64_t opset = default_opset(model, file);
  const ::onnx::GraphProto &graph = model.graph();
  if (graph.output_size() == 0) user_error(msg::kNoOutputs, file);
  if (graph.sparse_initializer_size() > 0)
    user_error(msg::kSparse, "'" + file + "'", graph.sparse_initializer(0).values().name());

  Importer importer(file);
  std::map<std::string, OnnxValue> &values = importer.values;
  std::map<std::string, std::string> defined_as;
  auto define = [&](const std::string &name, OnnxValue v, const std::string &as) {
    auto [it, fresh] = defined_as.emplace(name, as);
    if (!fresh) user_error(msg::kDuplicateName, file, name, it->second, as);
    values[name] = std::move(v);
  };

  for (const ::onnx::TensorProto &t : graph.initializer())
    define(t.name(), constant_value(read_tensor(t, "'" + file + "'")), "an initializer");

  std::vector<Expr> params;
  std::set<std::string> param_names;
  for (const ::onnx::ValueInfoProto &info : graph.input()) {
    if (info.name().empty()) user_error(msg::kBadName, file, "input");
    if (defined_as.count(info.name()) && defined_as[info.name()] == "an initializer")
      continue;  // old exporters
    Type type = input_type(info, file);
    std::string name = relay_name(info.name());
    for (int k = 1; !param_names.insert(name).second; ++k)
      name = relay_name(info.name()) + "_" + std::to_string(k);
    Expr var = Var::make(name, type);
    params.push_back(var);
    const auto *tt = type.as<TensorType>();
    OnnxValue v;
    v.expr = var;
    v.dtype = tt->dtype;
    v.shape = tt->shape;
    define(info.name(), v, "a graph input");
  }

  for (const ::onnx::NodeProto &node : graph.node())
    for (const std::string &in : node.input())
      if (!in.empty()) ++importer.uses[in];
  for (const ::onnx::ValueInfoProto &out : graph.output()) ++importer.uses[out.name()];

  for (int i = 0; i < graph.node_size(); ++i) {
    const ::onnx::NodeProto &node = graph.node(i);
    NodeContext ctx(importer, node, i, opset);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      user_error(msg::kUnsupportedOp, ctx.where(), node.op_type(),
                 fmt::format(" of the domain '{}'", node.domain()), supported_operators());
    const OperatorEntry *entry = find_operator(node.op_type());
    if (!entry) user_error(msg::kUnsupportedOp, ctx.where(), node.op_type(), "", supported_operators());
    if (opset < entry->since)
      user_error(msg::kUnsupportedOpInOpset, ctx.where(), node.op_type(), opset, node.op_type(),
                 entry->since);
    std::vector<OnnxValue> outputs = entry->translate(ctx);
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      if (k < int(outputs.size()) && !outputs[k].expr.defined() && !outputs[k].elements)
        continue;  // an unused output
      if (k >= int(outputs.size())) {
        if (ctx.output_used(k))
          user_error(msg::kUnusedOutputOnly, ctx.where(), k, node.output(k),
                     "the first " + std::to_string(outputs.size()));
        continue;
      }
      define(node.output(k), outputs[k], fmt::format("output {} of node #{}", k, i));
    }
  }

  std::vector<Expr> results;
  for (const ::onnx::ValueInfoProto &out : graph.output()) {
    if (out.name().empty()) user_error(msg::kBadName, file, "output");
    auto it = values.find(out.name());
    if (it == values.end()) user_error(msg::kOutputUndefined, file, out.name());
    if (!it->second.expr.defined()) {
      std::string dims;
      for (int64_t e : *it->second.elements)
        dims += (dims.empty() ? "" : ", ") + (e == kUnknown ? std::string("?") : std::to_string(e));
      user_error(msg::kOutputNotTensor, file, out.name(), "[" + dims + "]");
    }
    results.push_back(it->second.expr);
  }
  Expr body = results.size() == 1 ? results[0] : Tuple::make(results);
  importer.module().add_function("main", Function::make(params, body));
  infer_types(importer.module());
  return importer.module();
}

}  // namespace

Module import_onnx(std::string_view bytes, const std::string &file) {
  if (bytes.size() > size_t(std::numeric_limits<int>::max())) user_error(msg::kTooLarge, file, bytes.size());
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), int(bytes.size()))) user_error(msg::kNotAModel, file);
  return import_model(model, file);
}

Module import_onnx_file(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) user_error(msg::kCannotRead, path, "it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(msg::kCannotRead, path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) user_error(msg::kCannotRead, path, "its size cannot be read");
  if (size > std::streamoff(std::numeric_limits<int>::max())) user_error(msg::kTooLarge, path, size);
  in.seekg(0);
  std::string bytes(size_t(size), '\0');
  if (size > 0 && !in.read(bytes.data(), size)) user_error(msg::kCannotRead, path, "a read failed");
  return import_onnx(bytes, path);
}

bool is_onnx_file(const std::string &path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".onnx") return true;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char first = 0;
  return in.get(first) && first == 0x08;
}

Module read_program_file(const std::string &path) {
  return is_onnx_file(path) ? import_onnx_file(path) : parse_relay_file(path);
}

}  // namespace grove::onnx_frontend
