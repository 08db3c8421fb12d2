#pragma once
// The CUDA emitter's private half: ILIR expressions printed as CUDA C (CudaExpr.cpp), shared by
// the kernel writer (CudaEmitter.cpp).

#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"

namespace grove::cuda::internal {

// Prints one Compute's value for the current node `n` and its index variables. A Sum not in
// `replace` becomes a loop before the value (appended to `prelude`, one statement a line) and is
// read from its accumulator; a Sum in `replace` is read from the named variable (a GEMM term's
// accumulator). Sizes are the plan's constants; a temp is addressed by node like a state.
class ExprPrinter {
 public:
  ExprPrinter(const ilir::Program &program, const std::map<std::string, int64_t> &sizes)
      : program_(program), sizes_(sizes) {}

  std::string print(const ilir::Expr &e, std::vector<std::string> *prelude,
                    const std::map<const ilir::ExprNode *, std::string> &replace = {});

  // The row-major element offset of `indices` in `tensor` (without the node's row).
  std::string offset(const ilir::TensorDecl &tensor, const std::vector<std::string> &indices) const;
  // Where element `indices` of `tensor` at `node` lives: p_W[...], s_h[node * numel + ...].
  std::string address(const ilir::TensorDecl &tensor, const std::string &node,
                      const std::vector<std::string> &indices) const;
  int64_t numel(const ilir::TensorDecl &tensor) const;
  int64_t size(const ilir::Expr &e) const;

 private:
  friend class Printer;
  const ilir::Program &program_;
  const std::map<std::string, int64_t> &sizes_;
};

// Every Load of a tensor in `e` (Sums included).
void collect_loads(const ilir::Expr &e, std::vector<const ilir::Load *> *out);

// A float literal that reads back as the same float ("0.5f", "1.0f", "1e-05f").
std::string float_literal(float value);

}  // namespace grove::cuda::internal
