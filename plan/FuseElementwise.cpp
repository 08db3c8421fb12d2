#include "plan/FuseElementwise.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "ilir/Affine.h"
#include "ilir/IRVisitor.h"

namespace grove::plan {

namespace {

bool has_sum(const ilir::Expr &e) {
  return ilir::contains(e, [](const ilir::Expr &x) { return x.as<ilir::Sum>() != nullptr; });
}

// Only loads, selects and integer index arithmetic: reading it again costs a load, nothing more.
bool is_index_expression(const ilir::Expr &e) {
  return !ilir::contains(e, [](const ilir::Expr &x) {
    if (x.as<ilir::Unary>()) return true;
    const auto *b = x.as<ilir::Binary>();
    return b && b->type == ilir::ScalarType::Float;
  });
}

// Worth computing once rather than once per reader: a transcendental or a division.
bool is_costly(const ilir::Expr &e) {
  return ilir::contains(e, [](const ilir::Expr &x) {
    const auto *u = x.as<ilir::Unary>();
    if (u)
      return u->op == ilir::UnaryOp::Tanh || u->op == ilir::UnaryOp::Sigmoid || u->op == ilir::UnaryOp::Exp;
    const auto *b = x.as<ilir::Binary>();
    return b && b->op == ilir::BinOp::Div;
  });
}

// The reads of a vector temp `tensor` in one compute over `var` in [0, extent): for each offset c of
// a read `tensor[n, var + c]`, the rows of var it is read at, one range per path through the
// selects whose conditions cut var (`select(var < k, ...)`, as concatenations and slices lower).
class ReadRows {
 public:
  ReadRows(std::string tensor, std::string var, const std::map<std::string, int64_t> &sizes)
      : tensor_(std::move(tensor)), var_(std::move(var)), sizes_(sizes) {}

  // False if some read has another form (then nothing is known).
  bool walk(const ilir::Expr &e, int64_t lo, int64_t hi) {
    if (lo >= hi) return true;
    if (const auto *l = e.as<ilir::Load>()) {
      if (l->tensor != tensor_) return walk_all(l->indices, lo, hi);
      std::optional<int64_t> c;
      if (l->indices.size() == 1) c = ilir::offset_from(l->indices[0], var_, sizes_);
      if (!c) return false;
      reads_[*c].push_back({lo, hi});
      return true;
    }
    if (const auto *s = e.as<ilir::Select>()) {
      if (std::optional<Rows> t = rows_where(s->cond, lo, hi)) {
        // The false branch takes the rest: below and above the true rows (one of them may be empty).
        if (is_interval(s->cond))
          return walk(s->t, t->first, t->second) && walk(s->f, lo, std::min(hi, t->first)) &&
                 walk(s->f, std::max(lo, t->second), hi);
        return walk(s->t, t->first, t->second) && walk(s->f, lo, hi);
      }
      return walk(s->cond, lo, hi) && walk(s->t, lo, hi) && walk(s->f, lo, hi);
    }
    if (const auto *b = e.as<ilir::Binary>()) return walk(b->a, lo, hi) && walk(b->b, lo, hi);
    if (const auto *u = e.as<ilir::Unary>()) return walk(u->a, lo, hi);
    if (const auto *sum = e.as<ilir::Sum>()) return walk(sum->body, lo, hi);
    return !ilir::contains(e, [&](const ilir::Expr &x) {
      const auto *l = x.as<ilir::Load>();
      return l && l->tensor == tensor_;
    });
  }

  // How many of the elements [0, length) these reads compute, counting an element once per offset
  // that reads it (the same offset in one compute is one value, shared by the back end).
  int64_t elements_read(int64_t length) const {
    int64_t total = 0;
    for (const auto &[c, ranges] : reads_) {
      std::vector<std::pair<int64_t, int64_t>> rows;
      for (auto [lo, hi] : ranges) {
        int64_t a = std::max<int64_t>(lo + c, 0), b = std::min(hi + c, length);
        if (a < b) rows.emplace_back(a, b);
      }
      std::sort(rows.begin(), rows.end());
      int64_t end = 0;
      for (auto [a, b] : rows) {
        total += std::max<int64_t>(0, b - std::max(a, end));
        end = std::max(end, b);
      }
    }
    return total;
  }

 private:
  bool walk_all(const std::vector<ilir::Expr> &es, int64_t lo, int64_t hi) {
    for (const ilir::Expr &x : es)
      if (!walk(x, lo, hi)) return false;
    return true;
  }
  using Rows = std::pair<int64_t, int64_t>;

  // The rows of [lo, hi) where `cond` holds, if it is `a < b` or `a <= b` with a - b = ±var + c, or
  // a conjunction of those; nothing otherwise.
  std::optional<Rows> rows_where(const ilir::Expr &cond, int64_t lo, int64_t hi) const {
    const auto *b = cond.as<ilir::Binary>();
    if (!b) return std::nullopt;
    if (b->op == ilir::BinOp::And) {
      std::optional<Rows> x = rows_where(b->a, lo, hi);
      std::optional<Rows> y = x ? rows_where(b->b, x->first, x->second) : std::nullopt;
      return y;
    }
    if (b->op != ilir::BinOp::LT && b->op != ilir::BinOp::LE) return std::nullopt;
    std::optional<ilir::Affine> x = ilir::affine(b->a, sizes_), y = ilir::affine(b->b, sizes_);
    if (!x || !y) return std::nullopt;
    ilir::Affine d = *x - *y;
    const int64_t a = d.coeff(var_), strict = b->op == ilir::BinOp::LT ? 1 : 0;
    if (d.coeffs.size() != 1 || (a != 1 && a != -1)) return std::nullopt;
    // var + c < 0 ⇔ var < -c; var + c <= 0 ⇔ var < 1 - c; -var + c < 0 ⇔ var >= c + 1;
    // -var + c <= 0 ⇔ var >= c.
    if (a == 1) return Rows{lo, std::max(lo, std::min(hi, 1 - strict - d.constant))};
    return Rows{std::min(hi, std::max(lo, d.constant + strict)), hi};
  }
  // Whether the rows where `cond` fails are the rest of the range (not a conjunction's, which are
  // not one interval and are then taken as the whole range).
  static bool is_interval(const ilir::Expr &cond) {
    const auto *b = cond.as<ilir::Binary>();
    return b && b->op != ilir::BinOp::And;
  }

  std::string tensor_, var_;
  const std::map<std::string, int64_t> &sizes_;
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> reads_;
};

// Whether the computes after body[i] would, with temp body[i] fused into them, compute some of its
// elements more than once: known only for a vector temp read by vector computes at constant offsets.
bool read_twice(const ilir::Program &p, const ilir::Case &c, size_t i,
                const std::map<std::string, int64_t> &sizes) {
  const ilir::Compute &def = c.body[i];
  const ilir::TensorDecl &decl = p.get(def.tensor);
  if (decl.shape.size() != 1) return false;
  std::optional<int64_t> length = ilir::constant_value(decl.shape[0], sizes);
  if (!length) return false;
  int64_t total = 0;
  for (size_t u = i + 1; u < c.body.size(); u++) {
    const ilir::Compute &use = c.body[u];
    const ilir::TensorDecl &out = p.get(use.tensor);
    if (use.indices.size() != 1 || out.shape.size() != 1) return false;
    std::optional<int64_t> extent = ilir::constant_value(out.shape[0], sizes);
    if (!extent) return false;
    ReadRows rows(def.tensor, use.indices[0], sizes);
    if (!rows.walk(use.value, 0, *extent)) return false;
    total += rows.elements_read(*length);
  }
  return total > *length;
}

void fuse_case(const ilir::Program &p, ilir::Case &c, const std::map<std::string, int64_t> &sizes) {
  for (size_t i = 0; i < c.body.size();) {
    const ilir::Compute &def = c.body[i];
    bool fusable = p.get(def.tensor).kind == ilir::TensorKind::Temp && !has_sum(def.value);
    if (fusable && !is_index_expression(def.value))
      for (size_t u = i + 1; u < c.body.size(); u++)
        fusable = fusable && !ilir::read_inside_sum(c.body[u].value, def.tensor);
    if (fusable && is_costly(def.value)) fusable = !read_twice(p, c, i, sizes);
    if (!fusable) {
      i++;
      continue;
    }
    ilir::Compute removed = def;
    c.body.erase(c.body.begin() + i);
    for (size_t u = i; u < c.body.size(); u++)
      c.body[u].value = ilir::inline_definition(c.body[u].value, removed);
  }
}

}  // namespace

ilir::Program fuse_elementwise(const ilir::Program &program, const std::map<std::string, int64_t> &sizes) {
  ilir::Program p = program;
  fuse_case(p, p.leaf, sizes);
  fuse_case(p, p.internal, sizes);
  // Drop the declarations of temps no case computes any more.
  std::set<std::string> computed;
  for (const ilir::Case *c : {&p.leaf, &p.internal})
    for (const ilir::Compute &op : c->body) computed.insert(op.tensor);
  std::erase_if(p.tensors, [&](const ilir::TensorDecl &t) {
    return t.kind == ilir::TensorKind::Temp && !computed.count(t.name);
  });
  return p;
}

}  // namespace grove::plan
