#include "backends/cpu/Abi.h"

#include <climits>

#include "backends/cpu/Messages.h"
#include "ilir/Error.h"
#include "ilir/IRVisitor.h"
#include "lowering/HostTarget.h"

namespace grove::cpu {

namespace msg = cpu_messages;

namespace {

// The number of rows of the table that leaves index with their token (the vocabulary size), or -1.
int64_t vocab_size(const ilir::Program &p, const std::map<std::string, int64_t> &sizes) {
  int64_t rows = -1;
  for (const ilir::Compute &op : p.leaf.body)
    ilir::for_each_node(op.value, [&](const ilir::Expr &e) {
      const auto *load = e.as<ilir::Load>();
      if (!load || load->indices.empty()) return;
      const auto *call = load->indices[0].as<ilir::StructCall>();
      if (call && call->fn == ilir::StructFn::Token) {
        int64_t r = ilir::eval_size(p.get(load->tensor).shape[0], sizes);
        rows = rows < 0 ? r : std::min(rows, r);
      }
    });
  return rows;
}

std::vector<int64_t> shape_of(const ilir::TensorDecl &t, const std::map<std::string, int64_t> &sizes) {
  std::vector<int64_t> shape;
  for (const ilir::Expr &d : t.shape) shape.push_back(ilir::eval_size(d, sizes));
  return shape;
}

}  // namespace

// The entry function's arguments are matched to what they hold here, once, by the names the
// lowering gives them (lowering::names); the runtime then goes by ArgKind alone.
ModelAbi make_abi(const ilir::Program &program, const lowering::LoweredModel &lowered,
                  const std::map<std::string, int64_t> &sizes, const scheduling::Schedule &schedule,
                  const std::string &target) {
  namespace names = lowering::names;
  using Kind = ModelAbi::ArgKind;
  ModelAbi abi;
  abi.model = program.name;
  abi.structure = ilir::to_string(program.structure);
  abi.function = lowered.module.functions().back().name;
  abi.target = target;
  abi.schedule = schedule.to_string();
  abi.sizes = sizes;
  if (program.structure == ilir::StructureKind::BinaryTree) {
    abi.min_children = abi.max_children = 2;
  } else {
    abi.min_children = 1;
    abi.max_children = INT32_MAX;
  }
  abi.predecessor_slots =
      ilir::has_predecessor_slots(program.structure) ? ilir::predecessor_slots(program.structure) : 0;
  abi.vocab_size = vocab_size(program, sizes);
  // The lowered program's tensors: its passes may add states (hoisted products).
  for (const ilir::TensorDecl &t : lowered.program.tensors) {
    if (t.kind == ilir::TensorKind::Param) abi.params.push_back({t.name, shape_of(t, sizes)});
    if (t.kind == ilir::TensorKind::State) {
      std::vector<int64_t> shape = shape_of(t, sizes);
      if (t.name == program.output) {
        abi.output = int(abi.states.size());
        abi.output_shape = shape;
      }
      abi.states.push_back({t.name, Tensor::num_elements(shape)});
    }
  }
  abi.packed = lowered.packed;
  auto index_of = [](const auto &list, const std::string &name, auto key) {
    for (size_t i = 0; i < list.size(); i++)
      if (key(list[i]) == name) return int(i);
    return -1;
  };
  const std::map<std::string, Kind> inspector{
      {names::kLevelBegin, Kind::LevelBegin}, {names::kChildBegin, Kind::ChildBegin},
      {names::kChildren, Kind::Children},     {names::kToken, Kind::Token},
      {names::kTeamBegin, Kind::TeamBegin},   {names::kNumLevels, Kind::NumLevels}};
  for (const Halide::Internal::LoweredArgument &a : lowered.args) {
    ModelAbi::Arg arg{Kind::Param, a.name, -1};
    if (auto it = inspector.find(a.name); it != inspector.end()) {
      arg.kind = it->second;
    } else if (int i = index_of(abi.params, a.name, [](auto &p) { return names::param(p.name); }); i >= 0) {
      arg = {Kind::Param, a.name, i};
    } else if (int i = index_of(abi.states, a.name, [](auto &s) { return names::state(s.name); }); i >= 0) {
      arg = {Kind::State, a.name, i};
    } else if (int i = index_of(abi.packed, a.name, [](auto &w) { return w.buffer; }); i >= 0) {
      arg = {Kind::Packed, a.name, i};
    } else {
      GROVE_CHECK(false, "the entry function's argument {} is none the runtime knows", a.name);
    }
    abi.args.push_back(arg);
  }
  GROVE_CHECK(abi.output >= 0, "the output {} is not a state", program.output);
  abi.hoist = schedule.hoist;
  if (schedule.uses_unroll(program.structure)) {
    abi.unroll = schedule.unroll;
    abi.unroll_team = schedule.team_size();
  }
  abi.threads = schedule.threads;
  return abi;
}

Halide::Target parse_target(const std::string &target) {
  if (target == "host") return lowering::host_target();
  if (!Halide::Target::validate_target_string(target)) user_error(msg::kBadTarget, target);
  return Halide::Target(target);
}

LoweredForCpu lower_for_cpu(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                            const CompileOptions &options, bool jit) {
  LoweredForCpu out;
  Halide::Target target = parse_target(options.target);
  if (jit) target = target.with_feature(Halide::Target::JIT);
  out.schedule = scheduling::default_schedule(program, lowering::vector_bytes(target));
  out.schedule.apply(options.schedule, "--schedule");
  lowering::LowerOptions lower_options;
  lower_options.sizes = sizes;
  lower_options.target = target;
  lower_options.schedule = out.schedule;
  out.lowered = lowering::lower(program, lower_options);
  out.abi = make_abi(program, out.lowered, sizes, out.schedule, target.to_string());
  return out;
}

}  // namespace grove::cpu
