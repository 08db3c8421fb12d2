#include "plan/FuseColumns.h"

#include <optional>
#include <set>

#include "ilir/Affine.h"
#include "ilir/IRVisitor.h"

namespace grove::plan {

namespace {

// The extent E of a node loop's steps if every one is a plain loop over one index of extent E.
std::optional<int64_t> column_extent(const Stage &loop, const ilir::Program &p, const ilir::Case &c,
                                     const std::map<std::string, int64_t> &sizes) {
  std::optional<int64_t> extent;
  for (const NodeStep &step : loop.steps) {
    const ilir::Compute &op = c.body[size_t(step.compute)];
    const ilir::TensorDecl &t = p.get(op.tensor);
    if (step.matmul || op.indices.size() != 1 || t.shape.size() != 1) return std::nullopt;
    std::optional<int64_t> e = ilir::constant_value(t.shape[0], sizes);
    if (!e || *e < 1 || (extent && *e != *extent)) return std::nullopt;
    extent = e;
  }
  return extent;
}

// Whether every read in `op` (a step over `var` in [0, extent)) of a GEMM result (`rows` of each)
// is at [n, var + c] with c a multiple of `extent` within the rows, and of an earlier step's result
// (`steps`) at [n, var].
bool reads_by_column(const ilir::Compute &op, int64_t extent, const std::map<std::string, int64_t> &gemm_rows,
                     const std::set<std::string> &steps, const std::map<std::string, int64_t> &sizes) {
  const std::string &var = op.indices[0];
  return !ilir::contains(op.value, [&](const ilir::Expr &e) {
    const auto *l = e.as<ilir::Load>();
    if (!l) return false;
    auto rows = gemm_rows.find(l->tensor);
    const bool gemm = rows != gemm_rows.end(), step = steps.count(l->tensor) > 0;
    if (!gemm && !step) return false;
    if (!ilir::is_node_var(l->node) || l->indices.size() != 1) return true;
    std::optional<int64_t> c = ilir::offset_from(l->indices[0], var, sizes);
    if (!c) return true;
    if (step) return *c != 0;
    return *c < 0 || *c % extent != 0 || *c + extent > rows->second;
  });
}

// The column blocks of a GEMM group and the node loop after it, if the loop can run by columns.
std::optional<ColumnSteps> by_columns(const Stage &group, const Stage &loop, const ilir::Program &p,
                                      const ilir::Case &c, const std::map<std::string, int64_t> &sizes,
                                      int team) {
  std::optional<int64_t> extent = column_extent(loop, p, c, sizes);
  if (!extent || group.gemms.empty()) return std::nullopt;
  const int64_t panel = group.gemms.front().panel;
  if (*extent % panel != 0 || *extent / panel < team) return std::nullopt;
  std::map<std::string, int64_t> gemm_rows;
  ColumnSteps columns{panel, *extent / panel, {}, loop.steps};
  for (const Gemm &g : group.gemms) {
    if (g.panel != panel || g.rows % *extent != 0) return std::nullopt;
    gemm_rows[c.body[size_t(g.compute)].tensor] = g.rows;
    std::vector<int64_t> offsets;
    for (int64_t slice = 0; slice < g.rows / *extent; slice++) offsets.push_back(slice * columns.blocks);
    columns.panel_offsets.push_back(std::move(offsets));
  }
  std::set<std::string> steps;
  for (const NodeStep &step : loop.steps) {
    const ilir::Compute &op = c.body[size_t(step.compute)];
    if (!reads_by_column(op, *extent, gemm_rows, steps, sizes)) return std::nullopt;
    steps.insert(op.tensor);
  }
  return columns;
}

}  // namespace

void fuse_columns(std::vector<Stage> &stages, const ilir::Program &p, const ilir::Case &c,
                  const std::map<std::string, int64_t> &sizes, int team) {
  for (size_t i = 0; i + 1 < stages.size(); i++) {
    Stage &group = stages[i];
    const Stage &loop = stages[i + 1];
    if (group.kind != StageKind::GemmGroup || group.columns || loop.kind != StageKind::NodeLoop) continue;
    if (std::optional<ColumnSteps> columns = by_columns(group, loop, p, c, sizes, team)) {
      group.columns = std::move(columns);
      stages.erase(stages.begin() + std::ptrdiff_t(i) + 1);
    }
  }
}

}  // namespace grove::plan
