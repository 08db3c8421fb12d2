#include "lowering/cpu/ReductionKernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "ilir/IRVisitor.h"
#include "lowering/cpu/ExprLowering.h"
#include "lowering/cpu/LoopSplitting.h"
#include "lowering/cpu/Names.h"
#include "support/Error.h"

namespace grove::lowering::internal {

namespace {

bool mentions(const ilir::Expr &e, const std::string &v) {
  return ilir::contains(
      e, [&](const ilir::Expr &x) { return x.as<ilir::Var>() && x.as<ilir::Var>()->name == v; });
}

bool is_zero(const ilir::Expr &e) { return e.as<ilir::FloatImm>() && e.as<ilir::FloatImm>()->value == 0.0f; }

// `value` as a(n, row) · b(n, col): a weight gradient's outer product per node, with a condition
// on the row folded into a.
struct Factors {
  ilir::Expr a, b;
};
std::optional<Factors> factor(const ilir::Expr &value, const std::string &row, const std::string &col) {
  if (const auto *s = value.as<ilir::Select>()) {
    if (!is_zero(s->f) || mentions(s->cond, col)) return std::nullopt;
    std::optional<Factors> f = factor(s->t, row, col);
    if (!f) return std::nullopt;
    return Factors{ilir::Select::make(s->cond, f->a, ilir::Expr(0.0f)), f->b};
  }
  const auto *m = value.as<ilir::Binary>();
  if (!m || m->op != ilir::BinOp::Mul) return std::nullopt;
  if (!mentions(m->a, col) && !mentions(m->b, row)) return Factors{m->a, m->b};
  if (!mentions(m->b, col) && !mentions(m->a, row)) return Factors{m->b, m->a};
  return std::nullopt;
}

// g[row, col] += Σ_n a(n, row) · b(n, col), register-blocked: a block of `rows` rows × `cols`
// columns of accumulators (a stack block LLVM keeps in registers) loaded from g, summed over a chunk
// of nodes, and stored back. The nodes go in chunks of kChunk, each chunk's rows of a and b read
// from the caches by every block of the thread's rows (over all the nodes at once they would not
// fit: the blocks would stream them from memory, one pass per block).
class OuterProducts {
 public:
  OuterProducts(const TensorAccess &access, const ilir::TensorDecl &g, const Factors &f,
                const std::string &row, const std::string &col)
      : access_(access), g_(g), row_(row), col_(col) {
    a_ = ExprLowering(access, nullptr, nullptr).lower(f.a);
    b_ = ExprLowering(access, nullptr, nullptr).lower(f.b);
  }

  // The block of `rows` rows from `r0` and `cols` columns from `c0`, over the nodes
  // [first, first + count).
  Stmt block(const HExpr &r0, const HExpr &c0, int rows, int cols, const HExpr &first,
             const HExpr &count) const {
    const std::string acc = fmt::format("acc_{}_{}x{}", g_.name, rows, cols);
    const std::string j = col_ + "_v";
    HExpr col = c0 + var(j);
    // acc[r * cols + j] += a(n, r0 + r) · b(n, c0 + j), for every r, vectorized over j.
    std::vector<Stmt> updates, in, out;
    HExpr x = HI::substitute(col_, col, b_);
    for (int r = 0; r < rows; r++) {
      HExpr a = HI::substitute(row_, r0 + r, a_);
      HExpr at = r * cols + var(j);
      updates.push_back(store(acc, load(Halide::Float(32), acc, at, false) + a * var("x_" + j), at, false));
      std::vector<HExpr> idx{r0 + r, col};
      in.push_back(store(acc, access_.load(g_, HExpr(), idx), at, false));
      out.push_back(access_.store(g_, HExpr(), idx, load(Halide::Float(32), acc, at, false)));
    }
    auto vec = [&](Stmt s) {
      return HI::For::make(j, 0, cols, HI::ForType::Vectorized, Halide::DeviceAPI::None, std::move(s));
    };
    Stmt per_node = vec(HI::LetStmt::make("x_" + j, x, HI::Block::make(updates)));
    Stmt nodes = HI::For::make("n", first, count, HI::ForType::Serial, Halide::DeviceAPI::None, per_node);
    Stmt s = HI::Block::make({vec(HI::Block::make(in)), nodes, vec(HI::Block::make(out))});
    return HI::Allocate::make(acc, Halide::Float(32), Halide::MemoryType::Stack, {rows * cols},
                              HI::const_true(), s);
  }

  // Every block of a band of `rows` rows from r0: whole blocks of `cols` columns, then the rest.
  Stmt band(const HExpr &r0, int rows, int64_t total_cols, int cols, const HExpr &first,
            const HExpr &count) const {
    const int64_t whole = total_cols / cols, rest = total_cols % cols;
    std::vector<Stmt> s;
    const std::string cb = fmt::format("{}_b{}", col_, rows);
    if (whole > 0)
      s.push_back(HI::For::make(cb, 0, int(whole), HI::ForType::Serial, Halide::DeviceAPI::None,
                                block(r0, var(cb) * cols, rows, cols, first, count)));
    if (rest > 0) s.push_back(block(r0, int(whole * cols), rows, int(rest), first, count));
    return HI::Block::make(s);
  }

  // `body(first, count)` for each chunk of the nodes [first, first + count), in order.
  static Stmt chunks(const std::string &name, const HExpr &first, const HExpr &count,
                     const std::function<Stmt(const HExpr &, const HExpr &)> &body) {
    const std::string c = name + "_chunk", at = name + "_chunk_first", n = name + "_chunk_nodes";
    Stmt s = body(var(at), var(n));
    s = HI::LetStmt::make(n, Halide::min(kChunk, count - var(c) * kChunk), s);
    s = HI::LetStmt::make(at, first + var(c) * kChunk, s);
    return HI::For::make(c, 0, (count + (kChunk - 1)) / kChunk, HI::ForType::Serial, Halide::DeviceAPI::None,
                         s);
  }

  static constexpr int kChunk = 128;

 private:
  const TensorAccess &access_;
  const ilir::TensorDecl &g_;
  std::string row_, col_;
  HExpr a_, b_;
};

// Rows per register block: with two vectors of columns, 12 accumulators of the 16 vector registers
// of AVX2 (the broadcast and the two column vectors take three more).
constexpr int kBlockRows = 6;

}  // namespace

Stmt lower_reduction(const TensorAccess &access, const ilir::Reduction &r, const HExpr &first,
                     const HExpr &count, int lanes, int threads) {
  const ilir::Program &p = access.program();
  const ilir::TensorDecl &g = p.get(r.tensor);
  GROVE_CHECK(g.kind == ilir::TensorKind::Gradient, "reduction into {}, not a gradient", r.tensor);
  GROVE_CHECK(r.indices.size() == 1 || r.indices.size() == 2, "reduction into {} of rank {}", r.tensor,
              r.indices.size());
  const std::optional<int64_t> rows = constant(access.size(g.shape[0])),
                               cols = constant(access.size(g.shape.back()));
  // A matrix's gradient that is an outer product per node, with constant sizes: register blocks of
  // kBlockRows rows × two vectors, the rows' bands split among the threads.
  if (r.indices.size() == 2 && rows && cols) {
    if (std::optional<Factors> f = factor(r.value, r.indices[0], r.indices[1])) {
      OuterProducts op(access, g, *f, r.indices[0], r.indices[1]);
      const int cb = 2 * lanes;
      const int64_t bands = *rows / kBlockRows, rest = *rows % kBlockRows;
      std::vector<Stmt> s;
      if (bands > 0) {
        // Each part (a thread's) takes a range of bands through every chunk of the nodes.
        const int parts = int(std::min<int64_t>(bands, std::max(threads, 1)));
        const std::string part = r.tensor + "_part", band = r.tensor + "_band";
        HExpr lo = int(bands) * var(part) / parts, hi = int(bands) * (var(part) + 1) / parts;
        Stmt body = OuterProducts::chunks(r.tensor, first, count, [&](const HExpr &at, const HExpr &n) {
          return HI::For::make(band, lo, hi - lo, HI::ForType::Serial, Halide::DeviceAPI::None,
                               op.band(var(band) * kBlockRows, kBlockRows, *cols, cb, at, n));
        });
        s.push_back(dispatch_for(part, 0, parts, HI::ForType::Parallel, threads, body));
      }
      if (rest > 0)
        s.push_back(OuterProducts::chunks(r.tensor, first, count, [&](const HExpr &at, const HExpr &n) {
          return op.band(int(bands * kBlockRows), int(rest), *cols, cb, at, n);
        }));
      return HI::Block::make(s);
    }
  }
  // Otherwise one row at a time: the row's nodes summed into a stack accumulator, vectorized along
  // the last index.
  ilir::Program local = p;
  const std::string acc = "acc_" + r.tensor;
  const std::string &inner = r.indices.back();
  local.tensors.push_back({acc, ilir::TensorKind::Temp, {g.shape.back()}});
  TensorAccess a(local, access.sizes(), TempStorage::PerNode);
  const ilir::TensorDecl &acc_t = local.get(acc);
  ilir::Expr acc_here =
      ilir::Load::make(acc, ilir::Var::node(), {ilir::Var::make(inner, ilir::VarKind::Index)});
  Stmt zero = lower_compute(a, ilir::Compute{acc, {inner}, ilir::Expr(0.0f)}, lanes);
  Stmt add = lower_compute(a, ilir::Compute{acc, {inner}, acc_here + r.value}, lanes);
  Stmt nodes = HI::For::make("n", first, count, HI::ForType::Serial, Halide::DeviceAPI::None, add);
  std::vector<HExpr> at;
  for (const std::string &i : r.indices) at.push_back(var(i));
  HExpr total = a.load(g, HExpr(), at) + a.load(acc_t, var("n"), {var(inner)});
  Stmt store = vectorized_for(inner, a.size(g.shape.back()), a.store(g, HExpr(), at, total), lanes);
  Stmt row = HI::Block::make({zero, nodes, store});
  row = HI::Allocate::make(names::temp(acc), Halide::Float(32), local_memory(a.numel(acc_t)),
                           {a.numel(acc_t)}, HI::const_true(), row);
  if (r.indices.size() == 1) return row;
  return dispatch_for(r.indices[0], 0, a.size(g.shape[0]), HI::ForType::Parallel, threads, row);
}

}  // namespace grove::lowering::internal
