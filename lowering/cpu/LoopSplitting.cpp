#include "lowering/cpu/LoopSplitting.h"

#include <fmt/format.h>

#include <set>

namespace grove::lowering::internal {

namespace {

// Split points of the loop over `var`: every condition `var + c < 0` (after moving terms left)
// divides the range at -c.
class SplitFinder : public HI::IRVisitor {
 public:
  explicit SplitFinder(const std::string &var) : var_(var) {}
  std::set<int64_t> splits;

 private:
  using HI::IRVisitor::visit;
  void add(const HExpr &a, const HExpr &b, int64_t shift) {
    HExpr d = HI::simplify(a - b);
    if (const HI::Variable *v = d.as<HI::Variable>()) {
      if (v->name == var_) splits.insert(shift);
    } else if (const HI::Add *add = d.as<HI::Add>()) {
      const HI::Variable *v = add->a.as<HI::Variable>();
      const HI::IntImm *c = add->b.as<HI::IntImm>();
      if (v && c && v->name == var_) splits.insert(shift - c->value);
    }
  }
  void visit(const HI::LT *op) override {
    add(op->a, op->b, 0);
    HI::IRVisitor::visit(op);
  }
  void visit(const HI::LE *op) override {
    add(op->a, op->b, 1);
    HI::IRVisitor::visit(op);
  }
  const std::string &var_;
};

// `body` simplified knowing var is in [lo, hi): the selects of concatenations on var are resolved
// here, before any load in a branch not taken could be read as out of bounds.
Stmt within(const std::string &var, int64_t lo, int64_t hi, const Stmt &body) {
  HI::Scope<HI::Interval> bounds;
  bounds.push(var, HI::Interval(HExpr(int(lo)), HExpr(int(hi - 1))));
  return HI::simplify(body, true, bounds);
}

}  // namespace

std::vector<int64_t> split_points(const std::string &var, const HExpr &min, const HExpr &extent,
                                  const Stmt &body) {
  const HI::IntImm *lo = min.as<HI::IntImm>(), *ext = extent.as<HI::IntImm>();
  if (!lo || !ext) return {};
  SplitFinder finder(var);
  body.accept(&finder);
  std::vector<int64_t> cuts{lo->value};
  for (int64_t s : finder.splits)
    if (s > lo->value && s < lo->value + ext->value) cuts.push_back(s);
  cuts.push_back(lo->value + ext->value);
  return cuts;
}

Stmt partitioned_for(const std::string &name, HExpr min, HExpr extent, Stmt body, HI::ForType type) {
  min = HI::simplify(min);
  extent = HI::simplify(extent);
  std::vector<int64_t> cuts = split_points(name, min, extent, body);
  if (cuts.size() <= 2) return HI::For::make(name, min, extent, type, Halide::DeviceAPI::None, body);
  std::vector<Stmt> loops;
  for (size_t i = 0; i + 1 < cuts.size(); i++) {
    std::string piece = fmt::format("{}_{}", name, i);
    Stmt b = within(piece, cuts[i], cuts[i + 1], HI::substitute(name, var(piece), body));
    loops.push_back(
        HI::For::make(piece, int(cuts[i]), int(cuts[i + 1] - cuts[i]), type, Halide::DeviceAPI::None, b));
  }
  return HI::Block::make(loops);
}

Stmt vectorized_for(const std::string &name, HExpr extent, Stmt body, int lanes) {
  extent = HI::simplify(extent);
  std::vector<int64_t> cuts = split_points(name, 0, extent, body);
  if (cuts.empty() || lanes <= 1) return partitioned_for(name, 0, extent, body, HI::ForType::Serial);
  std::vector<Stmt> loops;
  for (size_t i = 0; i + 1 < cuts.size(); i++) {
    std::string piece = cuts.size() > 2 ? fmt::format("{}_{}", name, i) : name;
    const int64_t lo = cuts[i], n = cuts[i + 1] - cuts[i], whole = n / lanes * lanes;
    const Stmt piece_body = within(piece, lo, lo + n, HI::substitute(name, var(piece), body));
    // piece = lo + outer * lanes + lane over the whole vectors, the lane loop vectorized...
    if (whole > 0) {
      std::string outer = piece + "_vo", lane = piece + "_vi";
      Stmt b = HI::LetStmt::make(piece, int(lo) + var(outer) * lanes + var(lane), piece_body);
      b = HI::For::make(lane, 0, lanes, HI::ForType::Vectorized, Halide::DeviceAPI::None, b);
      loops.push_back(
          HI::For::make(outer, 0, int(whole / lanes), HI::ForType::Serial, Halide::DeviceAPI::None, b));
    }
    // ...then the rest as one narrower vector (a piece between split points need not be a
    // multiple of the vector width: H = 150 has a rest of 6).
    if (const int64_t rest = n - whole; rest > 0) {
      std::string lane = piece + "_vr";
      Stmt b = HI::LetStmt::make(piece, int(lo + whole) + var(lane), piece_body);
      loops.push_back(HI::For::make(lane, 0, int(rest),
                                    rest > 1 ? HI::ForType::Vectorized : HI::ForType::Serial,
                                    Halide::DeviceAPI::None, b));
    }
  }
  return HI::Block::make(loops);
}

}  // namespace grove::lowering::internal
