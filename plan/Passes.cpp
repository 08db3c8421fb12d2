#include "plan/Passes.h"

#include "plan/FuseElementwise.h"
#include "plan/FuseProducts.h"
#include "plan/HoistChildTerms.h"
#include "plan/HoistInputs.h"

namespace grove::plan {

std::vector<IlirPass> ilir_passes(const scheduling::Schedule &schedule,
                                  const std::map<std::string, int64_t> &sizes) {
  std::vector<IlirPass> passes;
  if (schedule.fuse)
    passes.push_back(
        {"fuse_elementwise", [&](const ilir::Program &p) { return fuse_elementwise(p, sizes); }});
  // A top-down (backward) program has no hoisted case, and its GEMMs' outputs are read by its
  // reductions: hoisting and epilogue fusion leave it as it is.
  auto bottom_up = [](auto pass) {
    return [pass](const ilir::Program &p) { return p.direction == ilir::Direction::TopDown ? p : pass(p); };
  };
  if (schedule.hoist) {
    passes.push_back({"hoist_inputs", bottom_up(hoist_inputs)});
    passes.push_back({"hoist_child_terms", bottom_up(hoist_child_terms)});
  }
  if (schedule.epilogue && schedule.batch && schedule.specialize)
    passes.push_back({"fuse_products",
                      bottom_up([&](const ilir::Program &p) { return fuse_products(p, sizes, schedule); })});
  return passes;
}

}  // namespace grove::plan
