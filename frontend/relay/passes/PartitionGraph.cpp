#include "frontend/relay/passes/PartitionGraph.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Visitor.h"
#include "frontend/relay/byoc/Regions.h"
#include "frontend/relay/passes/PassUtil.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

// A name usable after `@`: letters, digits and underscores ("unsanitary-name++" -> "unsanitary_name__").
std::string sanitize(const std::string &s) {
  std::string out = s;
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return out;
}

// A constant, or a tuple of constant expressions (what bind_constants moves into a partition; a
// tuple of constants feeds `concatenate`). Recursion over tuple nesting only.
bool is_constant_expr(const Expr &e) {
  if (e.as<Constant>()) return true;
  const auto *t = e.as<Tuple>();
  if (!t) return false;
  for (const Expr &f : t->fields)
    if (!is_constant_expr(f)) return false;
  return true;
}

// Where a former region output is found in the partition's flat result: a leaf index, or (for a
// tuple-typed output) one tree per field.
struct OutputTree {
  int leaf = -1;
  std::vector<OutputTree> fields;
};

// One region outlined as a global function.
struct Partition {
  Expr global;                  // its GlobalVar
  std::vector<Expr> inputs;     // per parameter, the original expression passed (a begin's argument)
  bool returns_single = false;  // the function returns its one output itself, not a tuple
  std::unordered_map<const ExprNode *, OutputTree> outputs;  // per distinct end argument
  // Filled while rewriting the caller:
  Expr call;
  std::vector<Expr> leaf_projections;
  std::unordered_map<const ExprNode *, Expr> projections;  // per end argument
};

// The body of one region: its begins become parameters (one per distinct source expression, so a
// value entering twice is one parameter) or, with bind_constants, the constants they carry.
class RegionBody : public ExprMutator {
 public:
  RegionBody(const RegionSet &regions, int region, std::string param_prefix, bool bind_constants)
      : regions_(regions),
        region_(region),
        prefix_(std::move(param_prefix)),
        bind_constants_(bind_constants) {}

  std::vector<Expr> params, inputs;

 protected:
  bool descend(const Expr &e) override { return !is_own_begin(e); }

  Expr rewrite(const Expr &pre, const Expr &post) override {
    // An end of this region met inside it (its value also feeds the region) is an identity here.
    if (is_compiler_end(pre) && regions_.region_of(pre) == region_) return post.as<Call>()->args[0];
    if (!is_own_begin(pre)) return post;
    const Expr &arg = pre.as<Call>()->args[0];
    Expr source = strip_annotations(arg);
    if (bind_constants_ && is_constant_expr(source)) return source;
    auto [slot, fresh] = param_of_.emplace(source.get(), params.size());
    if (fresh) {
      params.push_back(Var::make(fmt::format("{}{}", prefix_, params.size()), pre->checked_type));
      inputs.push_back(arg);
    }
    return params[slot->second];
  }

 private:
  bool is_own_begin(const Expr &e) const { return is_compiler_begin(e) && regions_.region_of(e) == region_; }

  const RegionSet &regions_;
  int region_;
  std::string prefix_;
  bool bind_constants_;
  std::unordered_map<const ExprNode *, size_t> param_of_;
};

// Flattens the region's outputs into one list of non-tuple values, without duplicates.
class OutputFlattener {
 public:
  OutputTree add(const Expr &e, const Type &type) {
    OutputTree tree;
    if (const auto *tt = type.as<TupleType>()) {
      const auto *tuple = e.as<Tuple>();
      for (size_t i = 0; i < tt->fields.size(); ++i) {
        Expr field = tuple ? tuple->fields[i] : projection(e, static_cast<int>(i));
        tree.fields.push_back(add(field, tt->fields[i]));
      }
      return tree;
    }
    auto [slot, fresh] = leaf_index_.emplace(e.get(), static_cast<int>(leaves.size()));
    if (fresh) {
      leaves.push_back(e);
      types.push_back(type);
    }
    tree.leaf = slot->second;
    return tree;
  }

  std::vector<Expr> leaves;
  std::vector<Type> types;

 private:
  Expr projection(const Expr &e, int i) {
    auto [slot, fresh] = projections_.emplace(std::make_pair(e.get(), i), Expr());
    if (fresh) slot->second = TupleGetItem::make(e, i);
    return slot->second;
  }

  std::unordered_map<const ExprNode *, int> leaf_index_;
  std::map<std::pair<const ExprNode *, int>, Expr> projections_;
};

// Names partitions `tvmgen_<mod>_<target>_main_<n>`, n counting per target, skipping names the
// module already has.
class Namer {
 public:
  Namer(const Module &m, std::string mod_name) : module_(m), mod_name_(sanitize(mod_name)) {}

  std::string next(const std::string &target) {
    const std::string t = sanitize(target);
    int &n = count_[t];
    std::string name;
    do {
      name = fmt::format("tvmgen_{}_{}_main_{}", mod_name_, t, n++);
    } while (module_.find_function(name) || taken_.count(name));
    taken_.insert(name);
    return name;
  }

 private:
  const Module &module_;
  std::string mod_name_;
  std::map<std::string, int> count_;
  std::unordered_set<std::string> taken_;
};

bool has_annotation(const Expr &e) {
  bool found = false;
  post_order_visit(e, [&](const Expr &x) { found = found || is_compiler_begin(x) || is_compiler_end(x); });
  return found;
}

// 1. Outline every region: parameters from its begins, the flat output list from its ends' arguments
//    (distinct ones, tuples flattened; a single non-tuple output is returned as is), the attributes
//    Primitive, Inline, Compiler and global_symbol. An end met inside its own region (an output
//    that also feeds the region) is an identity there. A variable the body uses but does not bind is an
//    input that skipped compiler_begin: a UserError.
Partition outline(const RegionSet &regions, int r, const std::string &name, const std::string &prefix,
                  bool bind_constants, Module &out) {
  const AnnotatedRegion &region = regions.regions()[r];
  RegionBody body(regions, r, prefix, bind_constants);
  OutputFlattener flat;
  Partition p;
  size_t distinct_outputs = 0;
  Type last_type;
  for (const Expr &end : region.ends) {
    const Expr &arg = end.as<Call>()->args[0];
    if (p.outputs.count(arg.get())) continue;
    ++distinct_outputs;
    last_type = arg->checked_type;
    p.outputs[arg.get()] = flat.add(body.mutate(arg), arg->checked_type);
  }
  p.returns_single = distinct_outputs == 1 && !last_type.as<TupleType>();
  Expr result = p.returns_single ? flat.leaves[0] : Tuple::make(flat.leaves);
  Type ret = p.returns_single ? flat.types[0] : TupleType::make(flat.types);
  Attrs attrs = Attrs()
                    .with(attr::kPrimitive, AttrValue::of_int(1))
                    .with(attr::kInline, AttrValue::of_int(1))
                    .with(attr::kCompiler, AttrValue::of_string(region.target))
                    .with(attr::kGlobalSymbol, AttrValue::of_string(name));
  Expr fn = Function::make(body.params, result, ret, {}, attrs, region.ends.front()->span);
  std::vector<Expr> free = free_vars(fn);
  if (!free.empty())
    user_error(
        "{}: the region of '{}' ending here uses %{}, defined outside it, without "
        "annotation.compiler_begin: expected every value entering a region to pass through a compiler_begin",
        to_string(region.ends.front()->span), region.target, free[0].as<Var>()->name_hint);
  GROVE_CHECK(!has_annotation(fn), "partition_graph left an annotation in @{}", name);
  out.add_function(name, fn);
  p.global = GlobalVar::make(name);
  p.inputs = body.inputs;
  return p;
}

// 2. Rewrite the function around the regions, iteratively, children before parents. An end's
//    children are its region's inputs (the begins' arguments), so the region's call is built from
//    rewritten inputs and each end becomes its output's projection of the call (one call per
//    region, one projection per output). Annotations outside regions (the "default" ones, and
//    stray begins) become their arguments. Meeting a region's expression other than through an
//    end is a UserError, and so is meeting a node twice on the stack (regions in a cycle).
class CallerRewriter {
 public:
  CallerRewriter(const RegionSet &regions, std::vector<Partition> &partitions)
      : regions_(regions), partitions_(partitions) {}

  Expr rewrite(const Expr &root) {
    struct Frame {
      Expr e;
      std::vector<Expr> kids;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    auto push = [&](const Expr &e) {
      if (const int r = regions_.region_of(e); r >= 0 && !is_compiler_end(e))
        user_error(
            "{}: this expression is inside a region of '{}' but also used outside it, not through "
            "annotation.compiler_end: expected one compiler_end per use outside the region",
            to_string(e->span), regions_.regions()[r].target);
      on_stack_.insert(e.get());
      stack.push_back({e, children(e), 0});
    };
    push(root);
    while (!stack.empty()) {
      Frame &f = stack.back();
      if (f.next < f.kids.size()) {
        Expr c = f.kids[f.next++];
        if (memo_.count(c.get())) continue;
        if (on_stack_.count(c.get()))
          user_error(
              "{}: the annotated regions depend on each other in a cycle (an output of a region reaches one "
              "of its own inputs through other code): expected regions as annotate_target and "
              "merge_compiler_regions make them",
              to_string(c->span));
        push(c);
        continue;
      }
      std::vector<Expr> rewritten;
      rewritten.reserve(f.kids.size());
      for (const Expr &k : f.kids) rewritten.push_back(memo_.at(k.get()));
      Expr result = finish(f.e, rewritten);
      on_stack_.erase(f.e.get());
      memo_[f.e.get()] = result;
      stack.pop_back();
    }
    return memo_.at(root.get());
  }

 private:
  std::vector<Expr> children(const Expr &e) const {
    const int r = regions_.region_of(e);
    if (r >= 0 && is_compiler_end(e)) return partitions_[r].inputs;
    return operands(e);
  }

  Expr finish(const Expr &e, const std::vector<Expr> &kids) {
    if (is_region_leaf(e)) return e;
    const int r = regions_.region_of(e);
    if (r >= 0 && is_compiler_end(e)) {
      Partition &p = partitions_[r];
      if (!p.call.defined()) p.call = Call::make(p.global, kids);
      return project(p, e.as<Call>()->args[0]);
    }
    if (is_compiler_begin(e) || is_compiler_end(e)) return kids.back();  // operands: the op, the argument
    return with_operands(e, kids);
  }

  Expr project(Partition &p, const Expr &output) {
    auto it = p.projections.find(output.get());
    if (it != p.projections.end()) return it->second;
    Expr result = project_tree(p, p.outputs.at(output.get()));
    p.projections[output.get()] = result;
    return result;
  }

  // Recursion over the output's tuple nesting only.
  Expr project_tree(Partition &p, const OutputTree &t) {
    if (t.leaf < 0) {
      std::vector<Expr> fields;
      for (const OutputTree &f : t.fields) fields.push_back(project_tree(p, f));
      return Tuple::make(fields);
    }
    if (p.returns_single) return p.call;
    if (p.leaf_projections.size() <= static_cast<size_t>(t.leaf)) p.leaf_projections.resize(t.leaf + 1);
    Expr &slot = p.leaf_projections[t.leaf];
    if (!slot.defined()) slot = TupleGetItem::make(p.call, t.leaf);
    return slot;
  }

  const RegionSet &regions_;
  std::vector<Partition> &partitions_;
  std::unordered_map<const ExprNode *, Expr> memo_;
  std::unordered_set<const ExprNode *> on_stack_;
};

Expr partition_function(const Expr &fn, Namer &namer, bool bind_constants, Module &out) {
  RegionSet regions = RegionSet::find(fn, /*include_default=*/false);
  std::vector<Partition> partitions;
  for (size_t r = 0; r < regions.regions().size(); ++r) {
    const std::string &target = regions.regions()[r].target;
    const std::string name = namer.next(target);
    const std::string prefix = fmt::format("{}_{}_i", sanitize(target), r);
    partitions.push_back(outline(regions, static_cast<int>(r), name, prefix, bind_constants, out));
  }
  return CallerRewriter(regions, partitions).rewrite(fn);
}

}  // namespace

Module partition_graph(const Module &m, const std::string &mod_name, bool bind_constants) {
  // Parameters take the types of the begins they replace.
  infer_types(m);
  Module out = m;
  Namer namer(m, mod_name);
  for (const auto &[name, fn] : m.functions()) {
    if (fn.as<Function>()->has_attr(attr::kCompiler)) continue;  // already external
    Expr rewritten = partition_function(fn, namer, bind_constants, out);
    GROVE_CHECK(!has_annotation(rewritten), "partition_graph left an annotation in @{}", name);
    out.add_function(name, rewritten);
  }
  infer_types(out);
  return out;
}

}  // namespace grove::relay
