// The ccompiler code generator's C source (CSourceEmitter.h). The C code computes what the
// interpreter's kernels compute (frontend/relay/ops/Elementwise.cpp), bit for bit: float32
// arithmetic in float, transcendental functions in double rounded once, relu and clip with the same
// comparisons, so NaNs and signed zeros come out the same.

#include "backends/relay/byoc/CSourceEmitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>

#include "frontend/relay/Visitor.h"
#include "frontend/relay/ops/Broadcast.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

// How C computes one element of an op: an expression over its arguments' elements {0} and {1};
// clip's bounds are {2} and {3}.
struct COp {
  const char *name;
  int arity;
  const char *expr;
};

// Sorted by name.
constexpr COp kOps[] = {
    {"abs", 1, "fabsf({0})"},
    {"add", 2, "{0} + {1}"},
    {"clip", 1, "grove_clip({0}, {2}, {3})"},
    {"divide", 2, "{0} / {1}"},
    {"erf", 1, "(float)erf((double){0})"},
    {"exp", 1, "(float)exp((double){0})"},
    {"log", 1, "(float)log((double){0})"},
    {"multiply", 2, "{0} * {1}"},
    {"negative", 1, "-{0}"},
    {"nn.relu", 1, "{0} > 0.0f ? {0} : 0.0f"},
    {"sigmoid", 1, "(float)(1.0 / (1.0 + exp(-(double){0})))"},
    {"sqrt", 1, "(float)sqrt((double){0})"},
    {"subtract", 2, "{0} - {1}"},
    {"tanh", 1, "(float)tanh((double){0})"},
};

// clip(x) = max(min(x, a_max), a_min) in the interpreter's order (it matters when a_min > a_max).
constexpr const char *kClipHelper = R"(static inline float grove_clip(float x, float lo, float hi) {
  const float v = x < hi ? x : hi;
  return v > lo ? v : lo;
}

)";

const COp *find_c_op(const std::string &name) {
  for (const COp &op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

// A float as a C literal that reads back as the same float: the shortest decimal that round-trips,
// parenthesized when negative so that `-{0}` stays a negation.
std::string float_literal(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  s += "f";
  return std::signbit(v) ? "(" + s + ")" : s;
}

int64_t element_count(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Where a tensor of the function lives in the C code.
struct Slot {
  enum class Kind { Input, Constant, Literal, Op } kind;
  int index;  // into inputs, constants or ops
  Shape shape;
  std::string name;  // "in0", "c0", "t0", or the literal itself
};

struct OpRecord {
  const COp *op;
  std::vector<int> args;  // slots
  Shape shape;
  std::string lo, hi;   // clip's bounds as literals
  std::string storage;  // "outputs[0]" or "ws + 12"
};

// The loop nest computing one op:
//   1. drop the result's dimensions of extent 1 (every argument reads index 0 there);
//   2. classify each remaining dimension, per argument, as read in full (the argument's aligned
//      dimension has the result's extent) or broadcast (absent or 1);
//   3. merge adjacent dimensions classified alike: an elementwise op becomes one flat loop, [3,1]+[1,4]
//      two loops;
//   4. index the result row-major over the merged extents, and each argument over the merged
//      dimensions it reads in full (stride 0 elsewhere).
class LoopNest {
 public:
  LoopNest(const Shape &out, const std::vector<Shape> &args) {
    std::vector<std::vector<bool>> full;  // per kept dimension, per argument
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == 1) continue;
      std::vector<bool> reads(args.size());
      for (size_t j = 0; j < args.size(); ++j) {
        const int64_t skip = static_cast<int64_t>(out.size() - args[j].size());
        const int64_t at = static_cast<int64_t>(k) - skip;
        reads[j] = at >= 0 && args[j][at] == out[k];
      }
      if (!full.empty() && full.back() == reads) {
        extents_.back() *= out[k];
      } else {
        extents_.push_back(out[k]);
        full.push_back(reads);
      }
    }
    out_index_ = index([](size_t) { return true; });
    for (size_t j = 0; j < args.size(); ++j)
      arg_index_.push_back(index([&](size_t k) { return full[k][j]; }));
  }

  // `body` (one statement) inside the loops, indented from `indent`.
  std::string emit(const std::string &body, int indent) const {
    std::string text;
    for (size_t k = 0; k < extents_.size(); ++k)
      text += fmt::format("{:{}}for (int64_t i{} = 0; i{} < {}; ++i{}) {{\n", "", indent + 2 * k, k, k,
                          extents_[k], k);
    text += fmt::format("{:{}}{}\n", "", indent + 2 * extents_.size(), body);
    for (size_t k = extents_.size(); k-- > 0;) text += fmt::format("{:{}}}}\n", "", indent + 2 * k);
    return text;
  }

  const std::string &out_index() const { return out_index_; }
  const std::string &arg_index(size_t j) const { return arg_index_[j]; }

 private:
  // Row-major index over the merged dimensions `reads` selects.
  template <typename Reads>
  std::string index(Reads reads) const {
    std::string text;
    int64_t stride = 1;
    for (size_t k = extents_.size(); k-- > 0;) {
      if (!reads(k)) continue;
      std::string term = stride == 1 ? fmt::format("i{}", k) : fmt::format("i{} * {}", k, stride);
      text = text.empty() ? term : term + " + " + text;
      stride *= extents_[k];
    }
    return text.empty() ? "0" : text;
  }

  std::vector<int64_t> extents_;
  std::string out_index_;
  std::vector<std::string> arg_index_;
};

std::string where(const Expr &e) { return to_string(e->span); }

[[noreturn]] void unsupported(const Expr &e, const std::string &what) {
  throw CSourceUnsupported(fmt::format(
      "the ccompiler code generator cannot compile {} (at {}): it compiles float32 tensors and the "
      "operators {}",
      what, where(e), fmt::join(c_source_ops(), ", ")));
}

bool is_c_identifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Emitting one function:
//   1. list the body's nodes in post order (children first) and record what each Let binds;
//   2. reject what C cannot compute here: functions, control flow, references, globals;
//   3. give every tensor a slot: parameters are inputs, constants literals or handed-over arrays,
//      op calls results of known shape (broadcast_shapes of their arguments');
//   4. flatten the result; each output op is computed into its output buffer, the rest into one
//      workspace; an output that is an input, a constant or an op already stored is copied;
//   5. print the C text.
class Emitter {
 public:
  Emitter(const Function &fn, const Expr &fn_expr, const std::vector<Shape> &input_shapes) {
    source_.symbol = symbol_of(fn, fn_expr);
    bind_params(fn, fn_expr, input_shapes);
    std::vector<Expr> order;
    post_order_visit(fn.body, [&](const Expr &e) {
      if (const auto *let = e.as<Let>()) let_value_[let->var.get()] = let->value;
      order.push_back(e);
    });
    for (const Expr &e : order) reject_unsupported(e);
    for (const Expr &e : order) {
      if (e.as<Constant>()) add_constant(e);
      if (e.as<Call>()) add_call(e);
    }
    flatten_result(fn.body);
    assign_storage();
  }

  CSource take() {
    source_.text = text();
    source_.num_ops = static_cast<int>(ops_.size());
    if (!source_.constants.empty()) source_.init_symbol = source_.symbol + "_init";
    return std::move(source_);
  }

 private:
  static std::string symbol_of(const Function &fn, const Expr &fn_expr) {
    const AttrValue *symbol = fn.attrs.find(attr::kGlobalSymbol);
    if (!symbol) return "grove_ccompiler_main";
    if (symbol->kind != AttrValue::Kind::String || !is_c_identifier(symbol->s))
      user_error(
          "the ccompiler code generator names its C function after global_symbol, which must be a C "
          "identifier (at {})",
          where(fn_expr));
    return symbol->s;
  }

  void bind_params(const Function &fn, const Expr &fn_expr, const std::vector<Shape> &input_shapes) {
    if (fn.params.size() != input_shapes.size())
      user_error(
          "the ccompiler code generator was given {} input shapes for a function of {} parameters (at {})",
          input_shapes.size(), fn.params.size(), where(fn_expr));
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const Expr &p = fn.params[i];
      const auto *type = p.type().as<TensorType>();
      const std::string name = "%" + p.as<Var>()->name_hint;
      if (!type || type->dtype != DType::Float32)
        unsupported(p, fmt::format("parameter {} of type {}", name, to_string(p.type())));
      const Shape &shape = input_shapes[i];
      bool fits = shape.size() == type->shape.size();
      for (size_t d = 0; fits && d < shape.size(); ++d)
        fits = shape[d] >= 0 && (type->shape[d] == kAnyDim || type->shape[d] == shape[d]);
      if (!fits)
        user_error("the ccompiler code generator cannot compile parameter {} of type {} for shape {} (at {})",
                   name, to_string(p.type()), shape_to_string(shape), where(p));
      add_slot(p, {Slot::Kind::Input, static_cast<int>(i), shape, fmt::format("in{}", i)});
      param_names_.push_back(name);
    }
  }

  void reject_unsupported(const Expr &e) {
    switch (e->kind) {
      case ExprKind::Function:
        unsupported(e, "a function inside the partition");
      case ExprKind::If:
      case ExprKind::Match:
        unsupported(e, "control flow (if, match)");
      case ExprKind::RefCreate:
      case ExprKind::RefRead:
      case ExprKind::RefWrite:
        unsupported(e, "references");
      case ExprKind::GlobalVar:
        unsupported(e, "a call of @" + e.as<GlobalVar>()->name);
      case ExprKind::Constructor:
        unsupported(e, "the constructor " + e.as<Constructor>()->name);
      default:
        return;
    }
  }

  void add_slot(const Expr &e, Slot slot) {
    slot_of_[e.get()] = static_cast<int>(slots_.size());
    slots_.push_back(std::move(slot));
  }

  void add_constant(const Expr &e) {
    const NDArray &data = e.as<Constant>()->data;
    if (data.dtype() != DType::Float32) unsupported(e, fmt::format("a {} constant", to_string(data.dtype())));
    // One finite element: a literal the C compiler can fold. Anything else is handed over at init.
    if (data.size() == 1 && std::isfinite(data.data<float>()[0])) {
      add_slot(e, {Slot::Kind::Literal, -1, data.shape(), float_literal(data.data<float>()[0])});
      return;
    }
    const int index = static_cast<int>(source_.constants.size());
    source_.constants.push_back(data);
    add_slot(e, {Slot::Kind::Constant, index, data.shape(), fmt::format("c{}", index)});
  }

  // The node `e` stands for once let-bound variables, let bodies and projections of tuples are seen
  // through.
  Expr resolve(Expr e) const {
    while (true) {
      if (auto it = let_value_.find(e.get()); it != let_value_.end()) {
        e = it->second;
      } else if (const auto *let = e.as<Let>()) {
        e = let->body;
      } else if (const auto *get = e.as<TupleGetItem>()) {
        Expr tuple = resolve(get->tuple);
        const auto *fields = tuple.as<Tuple>();
        if (!fields) return e;
        e = fields->fields[get->index];
      } else {
        return e;
      }
    }
  }

  int tensor_slot(const Expr &e) const {
    Expr node = resolve(e);
    auto it = slot_of_.find(node.get());
    if (it == slot_of_.end()) unsupported(node, fmt::format("a {} used as a tensor", to_string(node->kind)));
    return it->second;
  }

  void add_call(const Expr &e) {
    const auto *call = e.as<Call>();
    const auto *op = call->op.as<Op>();
    if (!op) unsupported(e, "a call of a function");
    const COp *c_op = find_c_op(op->name);
    if (!c_op) unsupported(e, "the operator " + op->name);
    if (const auto *type = e->checked_type.as<TensorType>(); type && type->dtype != DType::Float32)
      unsupported(e, fmt::format("{} on {}", op->name, to_string(type->dtype)));
    GROVE_CHECK(static_cast<int>(call->args.size()) == c_op->arity, "{} with {} arguments", op->name,
                call->args.size());
    OpRecord record{c_op, {}, {}, {}, {}, {}};
    for (const Expr &a : call->args) record.args.push_back(tensor_slot(a));
    record.shape = slots_[record.args[0]].shape;
    if (c_op->arity == 2) {
      try {
        record.shape = broadcast_shapes(record.shape, slots_[record.args[1]].shape);
      } catch (const OpError &err) {
        user_error("{}: {} (at {})", op->name, err.what(), where(e));
      }
    }
    if (op->name == "clip") {
      // The interpreter converts the bounds to float (TVM's make_const) before comparing.
      const ClipAttrs bounds = clip_attrs(call->attrs);
      record.lo = float_literal(static_cast<float>(bounds.a_min));
      record.hi = float_literal(static_cast<float>(bounds.a_max));
      uses_clip_ = true;
    }
    const int index = static_cast<int>(ops_.size());
    ops_.push_back(std::move(record));
    add_slot(e, {Slot::Kind::Op, index, ops_.back().shape, fmt::format("t{}", index)});
  }

  // Left to right, nested tuples flattened (recursion over the written nesting of tuples only).
  void flatten_result(const Expr &e) {
    Expr node = resolve(e);
    if (const auto *tuple = node.as<Tuple>()) {
      for (const Expr &f : tuple->fields) flatten_result(f);
      return;
    }
    const int slot = tensor_slot(node);
    outputs_.push_back(slot);
    source_.output_shapes.push_back(slots_[slot].shape);
  }

  // Outputs first: each op in the result is computed into its output buffer. Every other op gets a
  // block of the workspace, reusing a block of the same size whose op has no later reader (a chain of
  // n elementwise ops needs two blocks, not n).
  void assign_storage() {
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const Slot &slot = slots_[outputs_[k]];
      if (slot.kind == Slot::Kind::Op && ops_[slot.index].storage.empty())
        ops_[slot.index].storage = fmt::format("outputs[{}]", k);
      else
        copies_.emplace_back(k, outputs_[k]);
    }
    std::vector<size_t> last_reader(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) {
      last_reader[i] = std::max(last_reader[i], i);
      for (int a : ops_[i].args)
        if (slots_[a].kind == Slot::Kind::Op) last_reader[slots_[a].index] = i;
    }
    std::vector<std::vector<size_t>> free_after(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) free_after[last_reader[i]].push_back(i);
    std::multimap<int64_t, int64_t> free_blocks;  // size -> offset
    std::vector<int64_t> offset(ops_.size(), -1);
    for (size_t i = 0; i < ops_.size(); ++i) {
      OpRecord &op = ops_[i];
      if (op.storage.empty()) {
        const int64_t size = element_count(op.shape);
        if (auto block = free_blocks.find(size); block != free_blocks.end()) {
          offset[i] = block->second;
          free_blocks.erase(block);
        } else {
          offset[i] = workspace_;
          workspace_ += size;
        }
        op.storage = offset[i] == 0 ? "ws" : fmt::format("ws + {}", offset[i]);
      }
      // Released only after op i has its block: an op never writes over what it reads.
      for (size_t j : free_after[i])
        if (offset[j] >= 0) free_blocks.emplace(element_count(ops_[j].shape), offset[j]);
    }
  }

  std::string op_statement(const OpRecord &op, size_t index) const {
    std::vector<Shape> arg_shapes;
    for (int a : op.args) arg_shapes.push_back(slots_[a].shape);
    LoopNest nest(op.shape, arg_shapes);
    std::vector<std::string> reads;
    for (size_t j = 0; j < op.args.size(); ++j) {
      const Slot &arg = slots_[op.args[j]];
      reads.push_back(arg.kind == Slot::Kind::Literal ? arg.name
                                                      : fmt::format("{}[{}]", arg.name, nest.arg_index(j)));
    }
    reads.resize(2);
    const std::string value = fmt::format(fmt::runtime(op.op->expr), reads[0], reads[1], op.lo, op.hi);
    std::vector<std::string> arg_names;
    for (int a : op.args) arg_names.push_back(slots_[a].name);
    return fmt::format("  /* t{} = {}({}): {} */\n", index, op.op->name, fmt::join(arg_names, ", "),
                       shape_to_string(op.shape)) +
           nest.emit(fmt::format("t{}[{}] = {};", index, nest.out_index(), value), 2);
  }

  std::string text() const {
    const std::string &sym = source_.symbol;
    std::string t = fmt::format(
        "/* grove ccompiler: {}, {} ops on float32 (generated). */\n"
        "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n",
        sym, ops_.size());
    if (uses_clip_) t += kClipHelper;
    const size_t num_constants = source_.constants.size();
    if (num_constants > 0)
      t += fmt::format(
          "/* The bound constants, handed over once by {0}_init. */\n"
          "static const float *constants[{1}];\n\n"
          "int {0}_init(const float *const *handed) {{\n"
          "  for (int i = 0; i < {1}; ++i) constants[i] = handed[i];\n"
          "  return 0;\n}}\n\n",
          sym, num_constants);
    t += fmt::format("int {}(const float *const *inputs, float *const *outputs) {{\n", sym);
    for (const Slot &s : slots_) {
      if (s.kind == Slot::Kind::Input)
        t += fmt::format("  const float *{} = inputs[{}]; /* {}: {} */\n", s.name, s.index,
                         param_names_[s.index], shape_to_string(s.shape));
      if (s.kind == Slot::Kind::Constant)
        t += fmt::format("  const float *{} = constants[{}]; /* {} */\n", s.name, s.index,
                         shape_to_string(s.shape));
    }
    if (workspace_ > 0)
      t += fmt::format("  float *ws = (float *)malloc(sizeof(float) * {});\n  if (ws == NULL) return 1;\n",
                       workspace_);
    for (size_t i = 0; i < ops_.size(); ++i) t += fmt::format("  float *t{} = {};\n", i, ops_[i].storage);
    for (size_t i = 0; i < ops_.size(); ++i) t += op_statement(ops_[i], i);
    for (const auto &[k, slot_index] : copies_) {
      const Slot &s = slots_[slot_index];
      if (s.kind == Slot::Kind::Literal)
        t += fmt::format("  outputs[{}][0] = {};\n", k, s.name);
      else
        t += fmt::format("  memcpy(outputs[{}], {}, sizeof(float) * {});\n", k, s.name,
                         element_count(s.shape));
    }
    if (workspace_ > 0) t += "  free(ws);\n";
    t += "  return 0;\n}\n";
    return t;
  }

  CSource source_;
  std::unordered_map<const ExprNode *, Expr> let_value_;  // a let-bound Var -> its value
  std::unordered_map<const ExprNode *, int> slot_of_;
  std::vector<Slot> slots_;
  std::vector<std::string> param_names_;
  std::vector<OpRecord> ops_;
  std::vector<int> outputs_;                    // slots, flattened result order
  std::vector<std::pair<size_t, int>> copies_;  // (output, slot) copied at the end
  int64_t workspace_ = 0;                       // floats
  bool uses_clip_ = false;
};

}  // namespace

const std::vector<std::string> &c_source_ops() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const COp &op : kOps) all.push_back(op.name);
    return all;
  }();
  return names;
}

CSource emit_c_source(const Expr &function, const std::vector<Shape> &input_shapes) {
  const auto *fn = function.as<Function>();
  GROVE_CHECK(fn != nullptr, "emitting C source for a {}", to_string(function->kind));
  return Emitter(*fn, function, input_shapes).take();
}

}  // namespace grove::relay
