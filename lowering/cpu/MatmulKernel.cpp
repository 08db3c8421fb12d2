#include "lowering/cpu/MatmulKernel.h"

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "lowering/cpu/ExprLowering.h"
#include "lowering/cpu/LoopSplitting.h"

namespace grove::lowering::internal {

int matmul_row_blocks(const plan::Matmul &matmul) { return int(matmul.rows / matmul.row_block); }

namespace {

// One block of `width` columns from `first_col` on, for every row of the current row block.
Stmt column_block(const TensorAccess &access, const ilir::Compute &op, const plan::Matmul &matmul, int width,
                  const HExpr &first_col) {
  const ilir::TensorDecl &t = access.program().get(op.tensor);
  const std::string &i = op.indices[0], &j = op.indices[1];
  const int rows = matmul.row_block;
  const HI::ForType vectorized = width > 1 ? HI::ForType::Vectorized : HI::ForType::Serial;
  HExpr lane = var("lane"), io = var("row_block");
  HExpr jv = first_col + lane;

  std::vector<Stmt> body;
  std::map<const ilir::ExprNode *, HExpr> results;
  std::vector<std::string> accs;
  for (size_t m = 0; m < matmul.terms.size(); m++) {
    const plan::WeightTerm &term = matmul.terms[m];
    accs.push_back(fmt::format("macc{}_{}", m, width));
    for (int r = 0; r < rows; r++)
      body.push_back(HI::For::make("lane", 0, width, vectorized, Halide::DeviceAPI::None,
                                   store(accs[m], 0.0f, r * width + lane, false)));
    // x is loaded once per k and lane block and feeds `rows` FMAs.
    HExpr x = HI::substitute(j, jv, ExprLowering(access, nullptr, nullptr).lower(term.x));
    const ilir::TensorDecl &a = access.program().get(term.param);
    std::vector<Stmt> fmas;
    for (int r = 0; r < rows; r++) {
      HExpr row = io * rows + (r + int(term.row_offset));
      HExpr w = access.load(a, HExpr(), {row, var(term.sum->var)});
      HExpr acc = load(Halide::Float(32), accs[m], r * width + lane, false);
      fmas.push_back(store(accs[m], acc + w * HI::Variable::make(x.type(), "x"), r * width + lane, false));
    }
    Stmt lanes = HI::For::make("lane", 0, width, vectorized, Halide::DeviceAPI::None,
                               HI::LetStmt::make("x", x, HI::Block::make(fmas)));
    body.push_back(partitioned_for(term.sum->var, 0, int(term.cols), lanes, HI::ForType::Serial));
    results[term.sum] = load(Halide::Float(32), accs[m], var("row") * width + lane, false);
  }
  for (int r = 0; r < rows; r++) {
    std::map<const ilir::ExprNode *, HExpr> replace;
    for (auto &[sum, value] : results) replace[sum] = HI::substitute("row", r, value);
    HExpr value = ExprLowering(access, nullptr, nullptr, replace).lower(op.value);
    Stmt s = access.store(t, var("n"), {var(i), var(j)}, value);
    s = HI::LetStmt::make(j, jv, HI::LetStmt::make(i, io * rows + r, s));
    body.push_back(HI::For::make("lane", 0, width, vectorized, Halide::DeviceAPI::None, s));
  }
  Stmt s = HI::Block::make(body);
  for (const std::string &acc : accs)
    s = HI::Allocate::make(acc, Halide::Float(32), Halide::MemoryType::Stack, {rows * width},
                           HI::const_true(), s);
  return s;
}

}  // namespace

// The whole blocks of col_block columns, then the rest (cols not a multiple of the block) as one
// narrower block.
Stmt lower_matmul(const TensorAccess &access, const ilir::Compute &op, const plan::Matmul &matmul,
                  const HExpr &row_block) {
  const int width = matmul.col_block, whole = int(matmul.cols / width), rest = int(matmul.cols % width);
  std::vector<Stmt> blocks;
  if (whole > 0)
    blocks.push_back(HI::For::make("col_block", 0, whole, HI::ForType::Serial, Halide::DeviceAPI::None,
                                   column_block(access, op, matmul, width, var("col_block") * width)));
  if (rest > 0) blocks.push_back(column_block(access, op, matmul, rest, whole * width));
  Stmt s = HI::Block::make(blocks);
  if (row_block.defined()) return HI::LetStmt::make("row_block", row_block, s);
  return HI::For::make("row_block", 0, matmul_row_blocks(matmul), HI::ForType::Serial,
                       Halide::DeviceAPI::None, s);
}

}  // namespace grove::lowering::internal
