#include "frontend/relay/Printer.h"

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "frontend/relay/Metadata.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Visitor.h"
#include "support/Error.h"
#include "support/FileIO.h"

namespace grove::relay {
namespace {

std::string pad(int indent) { return std::string(static_cast<size_t>(indent), ' '); }

template <typename T, typename F>
std::string join(const std::vector<T> &items, F &&print) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ", ";
    s += print(items[i]);
  }
  return s;
}

std::string join_types(const std::vector<Type> &types) {
  return join(types, [](const Type &t) { return to_string(t); });
}

// ---------------------------------------------------------------------------------------------
// Literals
// ---------------------------------------------------------------------------------------------

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// A float literal that the lexer reads back bit for bit: the shortest form, else more digits. The
// lexer reads the numeral as a double (strtod) and rounds it, and refuses a numeral beyond the
// type's largest finite value, which the short forms of a value close to it can be.
template <typename T>
std::optional<std::string> float_literal(T v, const char *suffix) {
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "inf" + suffix;
  if (std::isnan(v)) {
    if (!same_bits(v, std::numeric_limits<T>::quiet_NaN())) return std::nullopt;
    return std::string("nan") + suffix;
  }
  const double limit = std::is_same_v<T, float> ? static_cast<double>(FLT_MAX) : DBL_MAX;
  for (const std::string &numeral :
       {fmt::format("{}", v), fmt::format("{:.9g}", v), fmt::format("{:.17g}", static_cast<double>(v))}) {
    const double read = std::strtod(numeral.c_str(), nullptr);
    if (std::fabs(read) <= limit && same_bits(static_cast<T>(read), v)) return numeral + suffix;
  }
  return std::nullopt;
}

// The literal for a scalar constant of a dtype the text format writes without meta, or nullopt.
std::optional<std::string> literal(const NDArray &a) {
  if (!a.defined() || a.ndim() != 0) return std::nullopt;
  switch (a.dtype()) {
    case DType::Bool: {
      const auto byte = static_cast<unsigned char>(a.raw()[0]);
      if (byte > 1) return std::nullopt;
      return byte ? "True" : "False";
    }
    case DType::Int32:
      return std::to_string(*a.data<int32_t>());
    case DType::Int64:
      return std::to_string(*a.data<int64_t>()) + "i64";
    case DType::Float32:
      return float_literal(*a.data<float>(), "f");
    case DType::Float64:
      return float_literal(*a.data<double>(), "f64");
    case DType::Int8:
      return std::to_string(*a.data<int8_t>()) + "i8";
    case DType::Int16:
      return std::to_string(*a.data<int16_t>()) + "i16";
    case DType::UInt8:
      return std::to_string(*a.data<uint8_t>()) + "u8";
    case DType::UInt16:
      return std::to_string(*a.data<uint16_t>()) + "u16";
    case DType::UInt32:
      return std::to_string(*a.data<uint32_t>()) + "u32";
    case DType::UInt64:
      return std::to_string(*a.data<uint64_t>()) + "u64";
    case DType::Float16: {
      // The lexer rounds the numeral to float32, then to half: the shortest float form of the
      // half's value reads back exactly (it is exactly representable); NaN only in its canonical form.
      const double v = a.element_as_double(0);
      if (std::isnan(v)) {
        if (!a.bitwise_equal(NDArray::scalar(DType::Float16, v))) return std::nullopt;
        return std::string("nanf16");
      }
      if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "inff16";
      const std::string numeral = fmt::format("{}", static_cast<float>(v));
      if (!a.bitwise_equal(NDArray::scalar(DType::Float16, std::strtod(numeral.c_str(), nullptr))))
        return std::nullopt;
      return numeral + "f16";
    }
  }
  return std::nullopt;
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

// A name hint made a valid local name: letters, digits and '_', starting with a letter, so that
// `%0` stays a graph binding (TVM prefixes `v` the same way).
std::string sanitize(const std::string &hint) {
  std::string s;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
    s = "v" + s;
  return s;
}

bool is_atomic(const Expr &e) {
  switch (e->kind) {
    case ExprKind::Var:
    case ExprKind::GlobalVar:
    case ExprKind::Constant:
    case ExprKind::Op:
    case ExprKind::Constructor:
      return true;
    default:
      return false;
  }
}

// The operands of `e` that are printed in its own scope, so must be named before it: everything
// but a function's body, a let (printed as a parenthesized scope), branches and clause bodies.
void operands_of(const Expr &e, std::vector<const Expr *> &out) {
  out.clear();
  if (const auto *n = e.as<Call>()) {
    out.push_back(&n->op);
    for (const Expr &a : n->args) out.push_back(&a);
  } else if (const auto *n = e.as<Tuple>()) {
    for (const Expr &f : n->fields) out.push_back(&f);
  } else if (const auto *n = e.as<TupleGetItem>()) {
    out.push_back(&n->tuple);
  } else if (const auto *n = e.as<RefCreate>()) {
    out.push_back(&n->value);
  } else if (const auto *n = e.as<RefRead>()) {
    out.push_back(&n->ref);
  } else if (const auto *n = e.as<RefWrite>()) {
    out.push_back(&n->ref);
    out.push_back(&n->value);
  } else if (const auto *n = e.as<If>()) {
    out.push_back(&n->cond);
  } else if (const auto *n = e.as<Match>()) {
    out.push_back(&n->data);
  }
}

// ---------------------------------------------------------------------------------------------
// The printer
// ---------------------------------------------------------------------------------------------

// Prints by the algorithm:
//   1. A scope (a function body, a branch, a clause body, a parenthesized let) prints its let chain
//      in a loop: for each let, the value's operands, then `let %x = value;`; then the result.
//   2. Before a node is printed in place, its operands that are not atoms (variables, globals,
//      constants, ops, constructors) and not yet named in an enclosing scope are bound, in post
//      order with an explicit stack, as `%N = ...;` lines. A node shared by several operands is
//      bound once; bindings made in a scope are forgotten when it closes, so a node used again
//      outside it is printed again there.
//   3. A node is printed in place by strict dispatch (visit_*), its operands by name, its scopes
//      by step 1 with two more spaces of indentation.
class Printer : public ExprFunctor<std::string, int> {
 public:
  Printer(const PrintOptions &options, std::vector<NDArray> *meta)
      : options_(options), meta_(meta), meta_base_(meta ? meta->size() : 0) {}

  std::string module(const Module &m) {
    std::string out = "#[version = \"0.0.5\"]\n";
    bool first = true;
    for (const TypeData &td : m.types()) {
      if (!first) out += "\n";
      first = false;
      out += type_def(td);
    }
    for (const auto &[name, function] : m.functions()) {
      if (!first) out += "\n";
      first = false;
      const auto *f = function.as<Function>();
      GROVE_CHECK(f, "global @{} is a {}, not a Function", name, to_string(function->kind));
      out += function_text("def @" + name, f, function, 0) + "\n";
    }
    return out;
  }

  std::string expression(const Expr &e) {
    std::string out = free_var_lines(e, 0);
    return out + scope(e, 0);
  }

 protected:
  std::string visit_Constant(const Constant *n, const Expr &e, int) override {
    if (std::optional<std::string> text = literal(n->data)) return *text;
    return fmt::format("meta[relay.Constant][{}]", meta_index(n->data));
  }
  std::string visit_Var(const Var *, const Expr &e, int) override { return "%" + var_name(e); }
  std::string visit_GlobalVar(const GlobalVar *n, const Expr &, int) override { return "@" + n->name; }
  std::string visit_Op(const Op *n, const Expr &, int) override { return n->name; }
  std::string visit_Constructor(const Constructor *n, const Expr &, int) override { return n->name; }

  std::string visit_Tuple(const Tuple *n, const Expr &, int) override {
    std::string s = "(" + join(n->fields, [&](const Expr &f) { return name_of(f); });
    return s + (n->fields.size() == 1 ? ",)" : ")");
  }
  std::string visit_TupleGetItem(const TupleGetItem *n, const Expr &, int) override {
    return name_of(n->tuple) + "." + std::to_string(n->index);
  }
  std::string visit_Call(const Call *n, const Expr &, int) override {
    std::string head = name_of(n->op);
    if (!n->type_args.empty()) head += "[" + join_types(n->type_args) + "]";
    // A constructor without fields is written bare (`Nil`), as TVM writes it (unless the call has
    // attributes to write).
    const auto *ctor = n->op.as<Constructor>();
    if (ctor && ctor->inputs.empty() && n->args.empty() && n->type_args.empty() && n->attrs.empty())
      return head;
    std::string args = join(n->args, [&](const Expr &a) { return name_of(a); });
    std::string attrs = attr_list(n->attrs);
    if (!args.empty() && !attrs.empty()) args += ", ";
    return head + "(" + args + attrs + ")";
  }
  std::string visit_Function(const Function *n, const Expr &e, int indent) override {
    return function_text("fn ", n, e, indent);
  }
  // Pieces are printed in separate statements, in text order: printing allocates names and
  // graph-binding numbers, and the operands of `+` are evaluated in no fixed order.
  std::string visit_Let(const Let *, const Expr &e, int indent) override {
    std::string inner = scope(e, indent + 2);
    return "(\n" + inner + "\n" + pad(indent) + ")";
  }
  std::string visit_If(const If *n, const Expr &, int indent) override {
    std::string s = "if (" + name_of(n->cond) + ") {\n";
    s += scope(n->then_branch, indent + 2);
    s += "\n" + pad(indent) + "} else {\n";
    s += scope(n->else_branch, indent + 2);
    return s + "\n" + pad(indent) + "}";
  }
  std::string visit_Match(const Match *n, const Expr &, int indent) override {
    std::string s = std::string(n->complete ? "match" : "match?") + " (" + name_of(n->data) + ") {\n";
    for (const Clause &c : n->clauses) {
      s += pad(indent + 2) + pattern(c.lhs) + " => {\n";
      s += scope(c.rhs, indent + 4);
      s += "\n" + pad(indent + 2) + "},\n";
    }
    return s + pad(indent) + "}";
  }
  std::string visit_RefCreate(const RefCreate *n, const Expr &, int) override {
    return "ref(" + name_of(n->value) + ")";
  }
  std::string visit_RefRead(const RefRead *n, const Expr &, int) override {
    return "ref_read(" + name_of(n->ref) + ")";
  }
  std::string visit_RefWrite(const RefWrite *n, const Expr &, int) override {
    return "ref_write(" + name_of(n->ref) + ", " + name_of(n->value) + ")";
  }

 private:
  // 1. A scope's lines, each indented by `indent`, the last one its result (no newline after it).
  std::string scope(const Expr &root, int indent) {
    scopes_.emplace_back();
    std::string out;
    Expr e = root;
    while (const auto *let = e.as<Let>()) {
      // A let-bound function may call itself: name the variable before printing the value.
      const std::string var = binder(let->var);
      const std::string value = in_place(let->value, indent, out);  // after `var`: names in text order
      out += pad(indent) + "let " + var + " = " + value + type_comment(let->value) + ";\n";
      e = let->body;
    }
    std::string result = in_place(e, indent, out);
    out += pad(indent) + result;
    for (const ExprNode *node : scopes_.back()) bound_.erase(node);
    scopes_.pop_back();
    return out;
  }

  // `e` printed in place, after binding its operands (lines appended to `out`).
  std::string in_place(const Expr &e, int indent, std::string &out) {
    if (is_atomic(e) || bound_.count(e.get())) return name_of(e);
    bind_operands(e, indent, out);
    return dispatch(e, indent);
  }

  // 2. Binds the unnamed, non-atomic operands of `root` (not `root` itself), in post order.
  void bind_operands(const Expr &root, int indent, std::string &out) {
    struct Frame {
      const Expr *e;
      bool expanded;
    };
    std::vector<Frame> stack;
    std::vector<const Expr *> operands;
    auto push_operands = [&](const Expr &e) {
      operands_of(e, operands);
      for (size_t i = operands.size(); i-- > 0;) {
        if (!is_atomic(*operands[i]) && !bound_.count(operands[i]->get()))
          stack.push_back({operands[i], false});
      }
    };
    push_operands(root);
    while (!stack.empty()) {
      Frame &f = stack.back();
      const Expr &e = *f.e;
      if (bound_.count(e.get())) {
        stack.pop_back();
        continue;
      }
      if (!f.expanded) {
        f.expanded = true;
        push_operands(e);  // may reallocate `stack`: `f` is not used after this
        continue;
      }
      stack.pop_back();
      const std::string name = "%" + std::to_string(next_temp_++);
      const std::string value = dispatch(e, indent);
      out += pad(indent) + name + " = " + value + type_comment(e) + ";\n";
      bound_.emplace(e.get(), name);
      scopes_.back().push_back(e.get());
    }
  }

  // An operand's name: an atom's text or its graph binding.
  std::string name_of(const Expr &e) {
    if (is_atomic(e)) return dispatch(e, 0);
    auto it = bound_.find(e.get());
    GROVE_CHECK(it != bound_.end(), "{} operand printed before it was bound", to_string(e->kind));
    return it->second;
  }

  std::string type_comment(const Expr &e) {
    if (!options_.show_types || !e->checked_type.defined()) return "";
    return " /* ty=" + to_string(e->checked_type) + " */";
  }

  // The meta index of `data`: constants with the same dtype, shape and bytes share one entry, so
  // that printing a parsed module (a node per reference) gives the same text again.
  size_t meta_index(const NDArray &data) {
    const size_t key = std::hash<std::string_view>()(
        std::string_view(reinterpret_cast<const char *>(data.raw()), data.nbytes()));
    for (size_t index : meta_by_hash_[key]) {
      if (meta_entries_[index].bitwise_equal(data)) return index + meta_base_;
    }
    meta_by_hash_[key].push_back(meta_entries_.size());
    meta_entries_.push_back(data);
    if (meta_) meta_->push_back(data);
    return meta_entries_.size() - 1 + meta_base_;
  }

  // ---- variables ----

  std::string var_name(const Expr &var) {
    auto [it, inserted] = var_names_.emplace(var.get(), "");
    if (inserted) it->second = fresh_name(sanitize(var.as<Var>()->name_hint));
    return it->second;
  }
  // TVM's scheme: the hint itself, else the hint followed by the first unused number.
  std::string fresh_name(const std::string &base) {
    std::string name = base;
    auto it = name_counts_.find(base);
    if (it != name_counts_.end()) {
      do {
        name = base + std::to_string(++it->second);
      } while (name_counts_.count(name));
    }
    name_counts_.emplace(name, 0);
    return name;
  }
  // A binding occurrence: `%x` or `%x: T`. A variable bound again (a shared let or function
  // printed once per use) gets a fresh name, which the uses printed after it take, so that the
  // text never binds one name twice.
  std::string binder(const Expr &var) {
    const auto *v = var.as<Var>();
    GROVE_CHECK(v, "a binder that is a {}", to_string(var->kind));
    if (bound_once_.insert(var.get()).second) {
      var_name(var);
    } else {
      var_names_[var.get()] = fresh_name(sanitize(v->name_hint));
    }
    std::string s = "%" + var_names_.at(var.get());
    if (v->type_annotation.defined()) s += ": " + to_string(v->type_annotation);
    return s;
  }

  std::string free_var_lines(const Expr &e, int indent) {
    std::string out;
    for (const Expr &v : free_vars(e)) out += pad(indent) + "free_var " + binder(v) + ";\n";
    return out;
  }

  // ---- functions, patterns, attributes, type definitions ----

  std::string function_text(const std::string &prefix, const Function *f, const Expr &e, int indent) {
    std::string s = prefix;
    if (!f->type_params.empty()) s += "[" + join_types(f->type_params) + "]";
    std::string params = join(f->params, [&](const Expr &p) { return binder(p); });
    std::string attrs = attr_list(f->attrs);
    if (!params.empty() && !attrs.empty()) params += ", ";
    s += "(" + params + attrs + ") ";
    if (f->ret_type.defined()) s += "-> " + to_string(f->ret_type) + " ";
    // A global function's free variables (if any) are declared where its body starts.
    s += "{\n";
    if (prefix.rfind("def ", 0) == 0) s += free_var_lines(e, indent + 2);
    s += scope(f->body, indent + 2);
    return s + "\n" + pad(indent) + "}";
  }

  // Patterns nest as deep as they are written: recursion is fine.
  std::string pattern(const Pattern &p) {
    switch (p->kind) {
      case PatternKind::Wildcard:
        return "_";
      case PatternKind::Var:
        return binder(p->var);
      case PatternKind::Constructor: {
        std::string s = p->constructor.as<Constructor>()->name;
        if (p->patterns.empty()) return s;
        return s + "(" + join(p->patterns, [&](const Pattern &q) { return pattern(q); }) + ")";
      }
      case PatternKind::Tuple:
        return "(" + join(p->patterns, [&](const Pattern &q) { return pattern(q); }) + ")";
    }
    GROVE_CHECK(false, "unknown pattern kind");
  }

  static std::string attr_list(const Attrs &attrs) {
    return join(attrs.entries(), [](const std::pair<std::string, AttrValue> &kv) {
      return kv.first + "=" + print_attr_value(kv.second);
    });
  }

  static std::string type_def(const TypeData &td) {
    std::string s = "type " + to_string(td.header);
    if (!td.type_vars.empty()) s += "[" + join_types(td.type_vars) + "]";
    s += " {\n";
    for (const Expr &c : td.constructors) {
      const auto *ctor = c.as<Constructor>();
      s += "  " + ctor->name;
      if (!ctor->inputs.empty()) s += "(" + join_types(ctor->inputs) + ")";
      s += ",\n";
    }
    return s + "}\n";
  }

  const PrintOptions &options_;
  std::vector<NDArray> *meta_;
  std::unordered_map<const ExprNode *, std::string> var_names_;
  std::unordered_map<std::string, int> name_counts_;
  std::unordered_set<const ExprNode *> bound_once_;          // variables whose binder was printed
  std::unordered_map<const ExprNode *, std::string> bound_;  // graph bindings visible here
  std::vector<std::vector<const ExprNode *>> scopes_;        // what each open scope bound
  std::vector<NDArray> meta_entries_;  // this printer's constants; meta[i] is meta_entries_[i - meta_base_]
  std::unordered_map<size_t, std::vector<size_t>> meta_by_hash_;
  size_t meta_base_ = 0;
  int next_temp_ = 0;
};

}  // namespace

std::string print_attr_value(const AttrValue &value) {
  switch (value.kind) {
    case AttrValue::Kind::None:
      return "None";
    case AttrValue::Kind::Int:
      return std::to_string(value.i);
    case AttrValue::Kind::Float: {
      // The shortest numeral strtod reads back exactly; `f64` where a float32 could not hold it.
      if (std::isinf(value.f) || std::isnan(value.f)) {
        return std::string(value.f < 0 ? "-" : "") + (std::isinf(value.f) ? "inff" : "nanf");
      }
      return fmt::format("{}", value.f) + (std::fabs(value.f) <= FLT_MAX ? "f" : "f64");
    }
    case AttrValue::Kind::Bool:
      return value.b ? "True" : "False";
    case AttrValue::Kind::String:
      return quote(value.s);
    case AttrValue::Kind::List:
      return "[" + join(value.list, [](const AttrValue &v) { return print_attr_value(v); }) + "]";
  }
  GROVE_CHECK(false, "unknown attribute value kind");
}

PrintedModule print_module(const Module &m, const PrintOptions &options) {
  PrintedModule result;
  result.text = Printer(options, &result.meta).module(m);
  if (options.inline_meta && !result.meta.empty())
    result.text += "\n#[metadata]\n" + write_tvm_metadata(result.meta);
  return result;
}

std::string print_expr(const Expr &e, std::vector<NDArray> *meta, const PrintOptions &options) {
  return Printer(options, meta).expression(e);
}

void write_relay_file(const std::string &path, const Module &m, const PrintOptions &options) {
  PrintedModule printed = print_module(m, options);
  if (!printed.meta.empty() && !options.inline_meta) write_meta_constants(meta_path(path), printed.meta);
  const std::string_view pieces[] = {printed.text};
  write_file_atomically(path, pieces);
}

}  // namespace grove::relay
