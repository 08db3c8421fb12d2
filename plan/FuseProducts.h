#pragma once
// Kernel fusion of GEMM outputs (schedule `epilogue`): a temp that is a level GEMM (`iou = U_iou @ x + b`)
// and whose every element is read exactly once, at the reader's own index plus a constant, by
// elementwise Computes (`c = sigmoid(iou[0:H]) * tanh(iou[2H:3H]) + ...`, `h = sigmoid(iou[H:2H]) *
// tanh(c)`), is substituted into them. Each reader becomes a level GEMM of its own whose terms are
// the rows it reads (`U_iou[j + 2H, k] · x`) and whose epilogue is the reader's whole expression —
// the activations and the cell update run on the accumulators, and no gate tensor is written to
// memory or read back. Nothing is computed twice, since no element is read twice.
//
// Applies only where every reader then runs as a level GEMM (constant sizes, `schedule`'s panel);
// otherwise leaves the temp alone. Assumes a verified Program; guarantees a verified Program
// computing the same values.

#include <map>
#include <string>

#include "ilir/IR.h"
#include "scheduling/Schedule.h"

namespace grove::plan {

ilir::Program fuse_products(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                            const scheduling::Schedule &schedule);

}  // namespace grove::plan
