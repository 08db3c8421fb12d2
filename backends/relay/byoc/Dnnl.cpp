// The dnnl external code generator (Codegen.h): oneDNN (Debian's libdnnl 2.6) for dense layers,
// 2-d convolutions, batched matrix products and the elementwise ops around them.
//
// What it claims (dnnl_target): float32 calls of
//   * nn.dense, nn.conv2d (NCHW data, OIHW weights, NCHW result; any strides, padding, dilation and
//     groups), nn.batch_matmul (either transpose; a batch of 1 broadcasts);
//   * nn.bias_add and add, subtract, multiply, divide when one operand has the result's shape (the
//     other broadcasts into it): oneDNN binary primitives;
//   * nn.relu, clip, tanh, sigmoid, exp, log, sqrt, abs, negative: oneDNN eltwise primitives;
// and, in priority order, the composites dnnl.conv2d_bias_relu, dnnl.conv2d_bias, dnnl.dense_bias_relu
// and dnnl.dense_bias — conv2d/dense, then nn.bias_add or add of a bias broadcast along the channel
// axis, then (optionally) nn.relu — each run as ONE oneDNN primitive (bias fused, relu a post-op),
// as TVM's python/tvm/relay/op/contrib/dnnl.py declares them.
//
// How a partitioned function (Compiler="dnnl") is compiled, once per input shapes (Builder below):
//   1. Walk its body in post order (iteratively), each composite call one node after its arguments.
//   2. A parameter is a plain (row-major) memory whose buffer is the input's, set at each run; a
//      constant is a memory over its data.
//   3. Each op call or composite becomes one primitive, created for the concrete shapes. Convolution
//      sources, weights and results, and constant dense weights, use format_tag::any: oneDNN picks
//      its preferred (often blocked) layout. A constant weight is reordered into it now, once — the
//      constants are handed over at initialization —; a run-time tensor gets a reorder step.
//   4. Intermediate results stay in memories the kernel owns, in the layout their producer chose; a
//      consumer that needs another layout gets a reorder step first (reshaping a plain memory is a
//      view of the same buffer).
//   5. A primitive whose result is an output writes it in plain layout, straight into the result
//      NDArray; an output that is an input, a constant, or a repeated result is copied by a last
//      reorder step.
// run() points the input and output memories at the run's buffers and executes the steps in order
// on one stream. Anything else in the body (another op, a tuple inside it, control flow), and what
// oneDNN itself refuses, is an unsupported result naming it (Kernel.h's one "cannot"): the dnnl
// code generator never falls back by itself, and the VM reports the reason as a UserError. What the
// caller got wrong (a function of another code generator, inputs of the wrong shape at run time) is
// a UserError.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backends/relay/byoc/Codegen.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

using dnnl::memory;

// What the builder cannot compile (an op, a layout, a shape, a dtype it has no primitive for),
// thrown inside it and returned by compile() as KernelResult::unsupported.
class NotCompilable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void cannot(fmt::format_string<Args...> format, Args &&...args) {
  throw NotCompilable(fmt::format(format, std::forward<Args>(args)...));
}

// ---------------------------------------------------------------------------------------------
// Shapes and attributes of the ops dnnl compiles (TVM's semantics, as frontend/relay/ops/NN.cpp)
// ---------------------------------------------------------------------------------------------

int64_t product(const Shape &s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// What oneDNN's convolution can do: NCHW data, OIHW weights, an NCHW float32 result.
std::string conv2d_unsupported(const Conv2DAttrs &attrs) {
  const std::string &data_layout = attrs.data_layout, &kernel_layout = attrs.kernel_layout;
  const std::string &out_layout = attrs.out_layout, &out_dtype = attrs.out_dtype;
  if (data_layout != "NCHW") return fmt::format("data_layout \"{}\" (dnnl takes NCHW)", data_layout);
  if (kernel_layout != "OIHW") return fmt::format("kernel_layout \"{}\" (dnnl takes OIHW)", kernel_layout);
  if (!out_layout.empty() && out_layout != "NCHW")
    return fmt::format("out_layout \"{}\" (dnnl gives NCHW)", out_layout);
  if (!out_dtype.empty() && out_dtype != "float32")
    return fmt::format("out_dtype \"{}\" (dnnl computes float32)", out_dtype);
  return "";
}

struct Conv2D {
  int64_t n, c, h, w, o, i, kh, kw, groups, oh, ow;
  std::array<int64_t, 2> stride, dilation;
  Pad pad;
};

Conv2D conv2d_geometry(const Shape &data, const Shape &weight, const Conv2DAttrs &attrs) {
  if (data.size() != 4 || weight.size() != 4)
    throw OpError(fmt::format("conv2d takes 4-d data and weights, found {} and {}", shape_to_string(data),
                              shape_to_string(weight)));
  Conv2D g{};
  g.n = data[0], g.c = data[1], g.h = data[2], g.w = data[3];
  g.o = weight[0], g.i = weight[1], g.kh = weight[2], g.kw = weight[3];
  g.groups = attrs.groups;
  g.stride = attrs.strides;
  g.dilation = attrs.dilation;
  g.pad = attrs.padding;
  if (g.groups <= 0 || g.c != g.i * g.groups || g.o % g.groups != 0)
    throw OpError(fmt::format("the data {} and weight {} do not fit groups={}", shape_to_string(data),
                              shape_to_string(weight), g.groups));
  g.oh = (g.h + g.pad.top + g.pad.bottom - ((g.kh - 1) * g.dilation[0] + 1)) / g.stride[0] + 1;
  g.ow = (g.w + g.pad.left + g.pad.right - ((g.kw - 1) * g.dilation[1] + 1)) / g.stride[1] + 1;
  if (g.oh <= 0 || g.ow <= 0)
    throw OpError(fmt::format("the window does not fit the data {}", shape_to_string(data)));
  return g;
}

struct BatchMatmul {
  int64_t bx, by, batch, m, n, k;
  bool ta, tb;
};

BatchMatmul batch_matmul_geometry(const Shape &x, const Shape &y, const Attrs &attrs) {
  BatchMatmul g{};
  const BatchMatmulAttrs a = batch_matmul_attrs(attrs);
  g.ta = a.transpose_a;
  g.tb = a.transpose_b;
  g.bx = x[0], g.by = y[0];
  g.m = g.ta ? x[2] : x[1];
  g.k = g.ta ? x[1] : x[2];
  g.n = g.tb ? y[1] : y[2];
  if ((g.tb ? y[2] : y[1]) != g.k || (g.bx != g.by && g.bx != 1 && g.by != 1))
    throw OpError(
        fmt::format("batch_matmul of {} and {} does not fit", shape_to_string(x), shape_to_string(y)));
  g.batch = std::max(g.bx, g.by);
  return g;
}

// Whether a bias of shape `bias`, added by `bias_call` (nn.bias_add or add) to a result of shape
// `out`, varies along `axis` only: nn.bias_add along that axis, or an add whose bias (aligned to
// the right) is 1 everywhere but there. A `?` counts as the matching size.
bool bias_along(const Call &bias_call, const Shape &bias, const Shape &out, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(out.size());
  auto same = [](int64_t a, int64_t b) { return a == b || !known(a) || !known(b); };
  if (bias_call.op.as<Op>()->name == "nn.bias_add") {
    int64_t a = bias_add_attrs(bias_call.attrs).axis;
    if (a < 0) a += rank;
    return a == axis && bias.size() == 1 && same(bias[0], out[axis]);
  }
  if (bias.size() > out.size()) return false;
  bool covered = false;
  for (size_t d = 1; d <= bias.size(); ++d) {
    const int64_t pos = rank - static_cast<int64_t>(d), b = bias[bias.size() - d];
    if (pos == axis) {
      covered = same(b, out[axis]);
      if (!covered) return false;
    } else if (b != 1) {
      return false;
    }
  }
  return covered || out[axis] == 1;
}

// ---------------------------------------------------------------------------------------------
// What dnnl claims: op predicates and the pattern table
// ---------------------------------------------------------------------------------------------

const TensorType *f32_type(const Expr &e) {
  const auto *t = e.defined() ? e->checked_type.as<TensorType>() : nullptr;
  return t && t->dtype == DType::Float32 ? t : nullptr;
}

// Every argument and the result float32 tensors (of the given ranks, when given).
bool all_f32(const Call &call, std::vector<size_t> ranks = {}) {
  if (!call.checked_type.as<TensorType>() || call.checked_type.as<TensorType>()->dtype != DType::Float32)
    return false;
  for (size_t i = 0; i < call.args.size(); ++i) {
    const TensorType *t = f32_type(call.args[i]);
    if (!t || (i < ranks.size() && t->shape.size() != ranks[i])) return false;
  }
  return true;
}

// A predicate that answers false where reading the attributes fails.
template <typename F>
SupportPredicate guarded(F f) {
  return [f](const Call &call) {
    try {
      return f(call);
    } catch (const OpError &) {
      return false;
    }
  };
}

bool dense_supported(const Call &call) {
  return all_f32(call) && f32_type(call.args[1])->shape.size() == 2 &&
         !f32_type(call.args[0])->shape.empty() && dense_attrs(call.attrs).out_dtype.empty();
}

bool conv2d_supported(const Call &call) {
  return conv2d_unsupported(conv2d_attrs(call.attrs)).empty() && all_f32(call, {4, 4});
}

bool batch_matmul_supported(const Call &call) {
  const std::string out_dtype = batch_matmul_attrs(call.attrs).out_dtype;
  return all_f32(call, {3, 3}) && (out_dtype.empty() || out_dtype == "float32");
}

// One operand of the result's shape, the other broadcast into it (oneDNN broadcasts src1 only;
// commutative ops may swap).
bool binary_supported(const Call &call, bool commutative) {
  if (!all_f32(call)) return false;
  const Shape &out = call.checked_type.as<TensorType>()->shape;
  return f32_type(call.args[0])->shape == out || (commutative && f32_type(call.args[1])->shape == out);
}

bool bias_add_supported(const Call &call) {
  if (!all_f32(call) || f32_type(call.args[1])->shape.size() != 1) return false;
  const Shape &out = call.checked_type.as<TensorType>()->shape;
  int64_t axis = bias_add_attrs(call.attrs).axis;
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  return axis >= 0 && axis < static_cast<int64_t>(out.size());
}

// An eltwise op: its oneDNN algorithm and parameters.
struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0.f, beta = 0.f;
};

std::optional<Eltwise> eltwise_of(const Call &call) {
  const std::string &name = call.op.as<Op>()->name;
  using A = dnnl::algorithm;
  if (name == "nn.relu") return Eltwise{A::eltwise_relu};
  if (name == "tanh") return Eltwise{A::eltwise_tanh};
  if (name == "sigmoid") return Eltwise{A::eltwise_logistic};
  if (name == "exp") return Eltwise{A::eltwise_exp};
  if (name == "log") return Eltwise{A::eltwise_log};
  if (name == "sqrt") return Eltwise{A::eltwise_sqrt};
  if (name == "abs") return Eltwise{A::eltwise_abs};
  if (name == "negative") return Eltwise{A::eltwise_linear, -1.f, 0.f};
  if (name == "clip") {
    const ClipAttrs bounds = clip_attrs(call.attrs);
    return Eltwise{A::eltwise_clip, static_cast<float>(bounds.a_min), static_cast<float>(bounds.a_max)};
  }
  return std::nullopt;
}

const std::map<std::string, dnnl::algorithm> &binary_ops() {
  static const std::map<std::string, dnnl::algorithm> ops{{"add", dnnl::algorithm::binary_add},
                                                          {"subtract", dnnl::algorithm::binary_sub},
                                                          {"multiply", dnnl::algorithm::binary_mul},
                                                          {"divide", dnnl::algorithm::binary_div}};
  return ops;
}

bool commutative(const std::string &op) { return op == "add" || op == "multiply"; }

// A composite's chain: the anchor (nn.dense or nn.conv2d), the bias call (nn.bias_add or add) with
// its bias operand, and whether nn.relu ends it.
struct FusedChain {
  const Call *anchor = nullptr;
  Expr anchor_expr;
  const Call *bias = nullptr;
  Expr bias_operand;
  bool relu = false;
};

const Call *call_of_op(const Expr &e, std::initializer_list<const char *> names) {
  const auto *call = e.as<Call>();
  const auto *o = call ? call->op.as<Op>() : nullptr;
  if (!o) return nullptr;
  for (const char *n : names)
    if (o->name == n) return call;
  return nullptr;
}

// The chain ending at `root`, or nullopt when `root` is not anchor [-> bias] [-> relu].
std::optional<FusedChain> fused_chain(const Expr &root) {
  FusedChain chain;
  Expr e = root;
  if (const Call *relu = call_of_op(e, {"nn.relu"})) {
    chain.relu = true;
    e = relu->args[0];
  }
  if (const Call *bias = call_of_op(e, {"nn.bias_add", "add"})) {
    chain.bias = bias;
    // add is commutative: the anchor may be either operand.
    const bool swapped =
        !call_of_op(bias->args[0], {"nn.dense", "nn.conv2d"}) && bias->op.as<Op>()->name == "add";
    e = bias->args[swapped ? 1 : 0];
    chain.bias_operand = bias->args[swapped ? 0 : 1];
  }
  chain.anchor = call_of_op(e, {"nn.dense", "nn.conv2d"});
  chain.anchor_expr = e;
  if (!chain.anchor) return std::nullopt;
  return chain;
}

// The pattern table's check: a typed match whose anchor dnnl supports and whose bias varies along
// the anchor result's channel axis only (the last for dense, 1 for conv2d).
bool fusable(const DFPatternMatch &match) {
  std::optional<FusedChain> chain = fused_chain(match.root);
  if (!chain) return false;
  const bool conv = chain->anchor->op.as<Op>()->name == "nn.conv2d";
  if (!(conv ? conv2d_supported(*chain->anchor) : dense_supported(*chain->anchor))) return false;
  if (!chain->bias) return true;
  const TensorType *bias = f32_type(chain->bias_operand);
  const TensorType *out = f32_type(chain->anchor_expr);
  if (!bias || !out || !all_f32(*chain->bias)) return false;
  // The bias call's result must be the anchor's (add must not broadcast the anchor's result).
  if (chain->bias->checked_type.as<TensorType>()->shape != out->shape) return false;
  const int64_t channel = conv ? 1 : static_cast<int64_t>(out->shape.size()) - 1;
  return bias_along(*chain->bias, bias->shape, out->shape, channel);
}

ExternalTarget dnnl_target() {
  ExternalTarget t;
  t.name = "dnnl";
  t.ops["nn.dense"] = guarded(dense_supported);
  t.ops["nn.conv2d"] = guarded(conv2d_supported);
  t.ops["nn.batch_matmul"] = guarded(batch_matmul_supported);
  t.ops["nn.bias_add"] = guarded(bias_add_supported);
  for (const auto &[name, algorithm] : binary_ops()) {
    const bool swaps = commutative(name);
    t.ops[name] = guarded([swaps](const Call &call) { return binary_supported(call, swaps); });
  }
  for (const char *name : {"nn.relu", "clip", "tanh", "sigmoid", "exp", "log", "sqrt", "abs", "negative"})
    t.ops[name] = guarded([](const Call &call) { return all_f32(call); });

  // TVM's dnnl.py: conv2d before dense, the longer pattern of each first.
  for (const char *anchor : {"conv2d", "dense"})
    for (bool relu : {true, false}) {
      DFPattern a = op(std::string("nn.") + anchor, {wildcard(), wildcard()});
      DFPattern bias = op("nn.bias_add", {a, wildcard()}) | op("add", {a, wildcard()});
      t.patterns.push_back({fmt::format("dnnl.{}_bias{}", anchor, relu ? "_relu" : ""),
                            relu ? op("nn.relu", {bias}) : bias, [](const DFPatternMatch &m) {
                              try {
                                return fusable(m);
                              } catch (const OpError &) {
                                return false;
                              }
                            }});
    }
  return t;
}

// ---------------------------------------------------------------------------------------------
// The kernel: oneDNN primitives executed in order on one stream
// ---------------------------------------------------------------------------------------------

const dnnl::engine &cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
};

// What compiling a partition produced (Builder fills it; DnnlKernel runs it).
struct Program {
  std::vector<Step> steps;
  // Per input, then per output: the memories over that buffer (views included), set at each run.
  std::vector<std::vector<memory>> external;
  std::vector<Shape> in_shapes, out_shapes;
  std::vector<NDArray> constants;  // the bound constants, whose data memories point into
  std::vector<memory> owned;       // memories views alias, kept alive
  std::string names;               // "dense_bias_relu+dense_bias"
};

class DnnlKernel : public Kernel {
 public:
  explicit DnnlKernel(Program program) : program_(std::move(program)), stream_(cpu_engine()) {}

  std::vector<NDArray> run(const std::vector<NDArray> &inputs) override {
    const size_t n_in = program_.in_shapes.size();
    if (inputs.size() != n_in)
      user_error("the dnnl kernel {} takes {} inputs, found {}", program_.names, n_in, inputs.size());
    for (size_t i = 0; i < n_in; ++i) {
      if (inputs[i].dtype() != DType::Float32 || inputs[i].shape() != program_.in_shapes[i])
        user_error("the dnnl kernel {} was compiled for a float32 input {} of shape {}, found {} of shape {}",
                   program_.names, i, shape_to_string(program_.in_shapes[i]), to_string(inputs[i].dtype()),
                   shape_to_string(inputs[i].shape()));
      // Inputs are only read: no primitive writes an input's memory.
      for (const memory &m : program_.external[i])
        m.set_data_handle(const_cast<std::byte *>(inputs[i].raw()));
    }
    std::vector<NDArray> outputs;
    for (size_t j = 0; j < program_.out_shapes.size(); ++j) {
      outputs.emplace_back(DType::Float32, program_.out_shapes[j]);
      for (const memory &m : program_.external[n_in + j]) m.set_data_handle(outputs.back().raw());
    }
    for (Step &step : program_.steps) step.primitive.execute(stream_, step.args);
    stream_.wait();
    return outputs;
  }

  std::string describe() const override {
    return "dnnl: " + (program_.names.empty() ? std::string("(no operator)") : program_.names);
  }

 private:
  Program program_;
  dnnl::stream stream_;
};

// A value of the partition as oneDNN sees it. Its memory's dims are its shape's (a scalar: {1}).
struct Tensor {
  memory mem;
  Shape shape;
  int slot = -1;          // the input or output whose buffer it is (Program::external), or -1
  bool constant = false;  // its contents are known now: a bound constant, or reordered from one
};

memory::dims dims_of(const Shape &shape) {
  return shape.empty() ? memory::dims{1} : memory::dims(shape.begin(), shape.end());
}

memory::desc plain_desc(const memory::dims &dims) {
  memory::dims strides(dims.size());
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= dims[d];
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc any_desc(const memory::dims &dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

std::string where(const Expr &e) { return to_string(e->span); }

// Compiles one partitioned function for concrete input shapes into a Program (steps 1-5 above).
class Builder {
 public:
  Builder(const Function &fn, const std::vector<Shape> &shapes) : fn_(fn) {
    program_.in_shapes = shapes;
    program_.external.resize(shapes.size());
  }

  Program build() {
    // The outputs: the body (under its lets) or its tuple's fields.
    Expr root = fn_.body;
    while (const auto *let = root.as<Let>()) root = let->body;
    if (const auto *tuple = root.as<Tuple>()) {
      outputs_ = tuple->fields;
      root_tuple_ = root.get();
    } else {
      outputs_ = {root};
    }
    for (size_t j = 0; j < outputs_.size(); ++j)
      output_uses_[outputs_[j].get()].push_back(static_cast<int>(j));
    program_.external.resize(program_.in_shapes.size() + outputs_.size());
    for (const Expr &e : post_order()) tensors_[e.get()] = translate(e);
    for (size_t j = 0; j < outputs_.size(); ++j) finish_output(j);
    return std::move(program_);
  }

 private:
  // Step 1: the body's nodes, children first; composite functions are not entered.
  std::vector<Expr> post_order() {
    std::vector<Expr> order;
    std::unordered_set<const ExprNode *> seen;
    std::vector<std::pair<Expr, bool>> stack{{fn_.body, false}};
    while (!stack.empty()) {
      auto [e, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        order.push_back(e);
        continue;
      }
      if (!seen.insert(e.get()).second) continue;
      stack.push_back({e, true});
      std::vector<Expr> children;
      if (const auto *call = e.as<Call>()) {
        children = call->args;
      } else if (const auto *tuple = e.as<Tuple>()) {
        children = tuple->fields;
      } else if (const auto *let = e.as<Let>()) {
        let_values_[let->var.get()] = let->value;
        children = {let->value, let->body};
      }
      for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back({*it, false});
    }
    return order;
  }

  Tensor translate(const Expr &e) {
    if (const auto *var = e.as<Var>()) return variable(e, *var);
    if (const auto *c = e.as<Constant>()) return constant(e, *c);
    if (const auto *let = e.as<Let>()) return tensor(let->body);
    if (e.as<Tuple>() && e.get() == root_tuple_) return {};
    if (const auto *call = e.as<Call>()) {
      if (const auto *o = call->op.as<Op>()) return op_call(e, *call, o->name);
      if (const auto *f = call->op.as<Function>()) return composite(e, *call, *f);
      cannot("dnnl cannot compile a call of {} (at {}): only operators and dnnl composites",
             to_string(call->op->kind), where(e));
    }
    if (e.as<Tuple>())
      cannot("dnnl cannot compile a tuple inside a partition (at {}): only as its result", where(e));
    cannot("dnnl cannot compile {} in a partition (at {})", to_string(e->kind), where(e));
  }

  const Tensor &tensor(const Expr &e) {
    auto it = tensors_.find(e.get());
    GROVE_CHECK(it != tensors_.end(), "dnnl: a node at {} was used before it was compiled", where(e));
    return it->second;
  }

  // Step 2.
  Tensor variable(const Expr &e, const Var &var) {
    if (auto it = let_values_.find(e.get()); it != let_values_.end()) return tensor(it->second);
    for (size_t i = 0; i < fn_.params.size(); ++i) {
      if (!fn_.params[i].same_as(e)) continue;
      if (i >= program_.in_shapes.size())
        user_error("the dnnl function at {} has {} parameters but was compiled for {} inputs", where(e),
                   fn_.params.size(), program_.in_shapes.size());
      const Shape &shape = program_.in_shapes[i];
      return {external(plain_desc(dims_of(shape)), static_cast<int>(i)), shape, static_cast<int>(i)};
    }
    user_error("dnnl: the variable %{} at {} is not bound in the partition", var.name_hint, where(e));
  }

  Tensor constant(const Expr &e, const Constant &c) {
    if (c.data.dtype() != DType::Float32)
      cannot("dnnl compiles float32 tensors only, found a {} constant (at {})", to_string(c.data.dtype()),
             where(e));
    check_nonempty(c.data.shape(), e);
    program_.constants.push_back(c.data);
    memory m(plain_desc(dims_of(c.data.shape())), cpu_engine(), const_cast<std::byte *>(c.data.raw()));
    return {m, c.data.shape(), -1, true};
  }

  static void check_nonempty(const Shape &shape, const Expr &e) {
    for (int64_t d : shape)
      if (d <= 0)
        cannot("dnnl: the empty tensor of shape {} at {} is not supported", shape_to_string(shape), where(e));
  }

  memory external(const memory::desc &desc, int slot) {
    memory m(desc, cpu_engine(), DNNL_MEMORY_NONE);
    program_.external[slot].push_back(m);
    return m;
  }

  // The same buffer seen through `desc` (plain, as many elements).
  Tensor view(const Tensor &t, const memory::desc &desc, Shape shape) {
    if (t.mem.get_desc() == desc) return {t.mem, std::move(shape), t.slot, t.constant};
    program_.owned.push_back(t.mem);
    memory m = t.slot >= 0 ? external(desc, t.slot) : memory(desc, cpu_engine(), t.mem.get_data_handle());
    return {m, std::move(shape), t.slot, t.constant};
  }

  // `t` in the layout `desc`: itself, a reorder done now (a constant), or a reorder step.
  Tensor reordered(const Tensor &t, const memory::desc &desc) {
    if (t.mem.get_desc() == desc) return t;
    memory m(desc, cpu_engine());
    dnnl::reorder reorder(t.mem, m);
    if (t.constant) {
      dnnl::stream stream(cpu_engine());
      reorder.execute(stream, const_cast<memory &>(t.mem), m);
      stream.wait();
      return {m, t.shape, -1, true};
    }
    program_.steps.push_back({reorder, {{DNNL_ARG_FROM, t.mem}, {DNNL_ARG_TO, m}}});
    return {m, t.shape, -1, false};
  }

  // `t` in plain layout, seen with `dims` (as many elements).
  Tensor plain(const Tensor &t, const memory::dims &dims, Shape shape) {
    return view(reordered(t, plain_desc(dims_of(t.shape))), plain_desc(dims), std::move(shape));
  }

  // Step 5: the memory `e`'s primitive writes. When `e` is one output (once) and `desc` is plain, the
  // output's buffer itself.
  memory destination(const Expr &e, const memory::desc &desc) {
    auto it = output_uses_.find(e.get());
    if (it != output_uses_.end() && it->second.size() == 1 && desc == plain_desc(desc.dims()) &&
        !direct_.count(e.get())) {
      direct_.insert(e.get());
      return external(desc, static_cast<int>(program_.in_shapes.size()) + it->second[0]);
    }
    return memory(desc, cpu_engine());
  }

  bool is_output(const Expr &e) const { return output_uses_.count(e.get()) != 0; }

  void finish_output(size_t j) {
    const Expr &e = outputs_[j];
    const Tensor &t = tensor(e);
    if (!t.mem) cannot("dnnl: the partition's result at {} is a nested tuple", where(e));
    program_.out_shapes.push_back(t.shape);
    if (direct_.count(e.get())) return;
    memory out = external(plain_desc(dims_of(t.shape)), static_cast<int>(program_.in_shapes.size() + j));
    // Reorder even a constant or an input at run time: the output buffer is new at each run.
    program_.steps.push_back({dnnl::reorder(t.mem, out), {{DNNL_ARG_FROM, t.mem}, {DNNL_ARG_TO, out}}});
  }

  void add_step(const dnnl::primitive &p, std::unordered_map<int, memory> args, const std::string &name) {
    program_.steps.push_back({p, std::move(args)});
    program_.names += (program_.names.empty() ? "" : "+") + name;
  }

  // Step 3 for op calls; what oneDNN refuses, and an attribute it cannot read, are unsupported,
  // naming the op.
  Tensor op_call(const Expr &e, const Call &call, const std::string &name) {
    try {
      return op_call_unchecked(e, call, name);
    } catch (const dnnl::error &err) {
      cannot("dnnl could not compile {} (at {}): {}", name, where(e), err.what());
    } catch (const OpError &err) {
      cannot("dnnl could not compile {} (at {}): {}", name, where(e), err.what());
    }
  }

  Tensor op_call_unchecked(const Expr &e, const Call &call, const std::string &name) {
    std::vector<Tensor> args;
    for (const Expr &a : call.args) args.push_back(tensor(a));
    if (name == "nn.dense") return dense(e, call, args[0], args[1], nullptr, false, name);
    if (name == "nn.conv2d") return conv2d(e, call, args[0], args[1], nullptr, false, name);
    if (name == "nn.batch_matmul") return batch_matmul(e, call, args[0], args[1]);
    if (name == "nn.bias_add") return bias_add(e, call, args[0], args[1]);
    if (auto b = binary_ops().find(name); b != binary_ops().end())
      return binary(e, b->second, commutative(name), args[0], args[1], name);
    if (std::optional<Eltwise> el = eltwise_of(call)) return eltwise(e, *el, args[0], name);
    cannot("dnnl cannot compile the operator {} (at {})", name, where(e));
  }

  // Step 3 for a composite: its chain as one primitive.
  Tensor composite(const Expr &e, const Call &call, const Function &f) {
    const AttrValue *attr = f.attrs.find(attr::kComposite);
    if (!attr || attr->kind != AttrValue::Kind::String || attr->s.rfind("dnnl.", 0) != 0)
      cannot("dnnl cannot compile a call of a function other than a dnnl composite (at {})", where(e));
    const std::string name = attr->s.substr(5);
    std::optional<FusedChain> chain = fused_chain(f.body);
    if (!chain)
      cannot(
          "dnnl cannot compile the composite {} (at {}): its body is not dense or conv2d, then a bias, "
          "then relu",
          attr->s, where(e));
    // Operands inside the composite: its parameters (the call's arguments) or bound constants.
    auto operand = [&](const Expr &x) -> Tensor {
      for (size_t i = 0; i < f.params.size(); ++i)
        if (f.params[i].same_as(x)) return tensor(call.args.at(i));
      if (const auto *c = x.as<Constant>()) return constant(x, *c);
      cannot("dnnl cannot compile the composite {} (at {}): an operand is neither a parameter nor a constant",
             attr->s, where(e));
    };
    try {
      Tensor data = operand(chain->anchor->args[0]), weight = operand(chain->anchor->args[1]);
      std::optional<Bias> bias;
      if (chain->bias) bias = Bias{chain->bias, operand(chain->bias_operand)};
      const Bias *b = bias ? &*bias : nullptr;
      return chain->anchor->op.as<Op>()->name == "nn.conv2d"
                 ? conv2d(e, *chain->anchor, data, weight, b, chain->relu, name)
                 : dense(e, *chain->anchor, data, weight, b, chain->relu, name);
    } catch (const dnnl::error &err) {
      cannot("dnnl could not compile the composite {} (at {}): {}", attr->s, where(e), err.what());
    } catch (const OpError &err) {
      cannot("dnnl could not compile the composite {} (at {}): {}", attr->s, where(e), err.what());
    }
  }

  using Bias = std::pair<const Call *, Tensor>;

  // The bias of a fused primitive as a 1-d memory of `channels`, after checking it varies along
  // `axis` of the result `out` only.
  Tensor bias_memory(const Bias &bias, const Shape &out, int64_t axis, const Expr &e) {
    const Shape &shape = bias.second.shape;
    if (product(shape, 0, shape.size()) != out[axis] || !bias_along(*bias.first, shape, out, axis))
      cannot("dnnl: the bias of shape {} at {} does not vary along axis {} of the result {} only",
             shape_to_string(shape), where(e), axis, shape_to_string(out));
    return plain(bias.second, {out[axis]}, {out[axis]});
  }

  static dnnl::primitive_attr relu_attr(bool relu) {
    dnnl::primitive_attr attr;
    if (relu) {
      dnnl::post_ops post;
      post.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(post);
    }
    return attr;
  }

  // nn.dense as an inner product: x [M, K] · W [N, K]ᵀ (+ bias) (relu), leading data dims folded into M.
  Tensor dense(const Expr &e, const Call &call, const Tensor &data, const Tensor &weight, const Bias *bias,
               bool relu, const std::string &name) {
    if (!dense_supported_shapes(data.shape, weight.shape) || !dense_attrs(call.attrs).out_dtype.empty())
      cannot("dnnl cannot compile nn.dense of {} and {} (at {})", shape_to_string(data.shape),
             shape_to_string(weight.shape), where(e));
    const int64_t k = data.shape.back(), n = weight.shape[0],
                  m = product(data.shape, 0, data.shape.size() - 1);
    Shape out(data.shape.begin(), data.shape.end() - 1);
    out.push_back(n);
    Tensor src = plain(data, {m, k}, {m, k});
    // A constant weight goes into oneDNN's preferred layout once; a run-time one is read as it is.
    const memory::desc w_desc = weight.constant ? any_desc({n, k}) : plain_desc({n, k});
    std::optional<Tensor> b;
    if (bias) b = bias_memory(*bias, out, static_cast<int64_t>(out.size()) - 1, e);
    const memory::desc dst_desc = plain_desc({m, n});
    dnnl::inner_product_forward::desc d =
        b ? dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, src.mem.get_desc(), w_desc,
                                              b->mem.get_desc(), dst_desc)
          : dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, src.mem.get_desc(), w_desc,
                                              dst_desc);
    dnnl::inner_product_forward::primitive_desc pd(d, relu_attr(relu), cpu_engine());
    Tensor w = reordered(plain(weight, {n, k}, weight.shape), pd.weights_desc());
    memory dst = destination(e, pd.dst_desc());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src.mem}, {DNNL_ARG_WEIGHTS, w.mem}, {DNNL_ARG_DST, dst}};
    if (b) args[DNNL_ARG_BIAS] = b->mem;
    add_step(dnnl::inner_product_forward(pd), std::move(args), name);
    return view({dst, {m, n}, slot_of(e), false}, plain_desc(dims_of(out)), out);
  }

  static bool dense_supported_shapes(const Shape &data, const Shape &weight) {
    return !data.empty() && weight.size() == 2 && data.back() == weight[1];
  }

  int slot_of(const Expr &e) const {
    if (!direct_.count(e.get())) return -1;
    return static_cast<int>(program_.in_shapes.size()) + output_uses_.at(e.get())[0];
  }

  // nn.conv2d as a direct convolution (+ bias) (relu); source, weights and result in oneDNN's layouts
  // (the result plain when it is an output).
  Tensor conv2d(const Expr &e, const Call &call, const Tensor &data, const Tensor &weight, const Bias *bias,
                bool relu, const std::string &name) {
    const Conv2DAttrs attrs = conv2d_attrs(call.attrs);
    if (std::string why = conv2d_unsupported(attrs); !why.empty())
      cannot("dnnl cannot compile nn.conv2d with {} (at {})", why, where(e));
    const Conv2D g = conv2d_geometry(data.shape, weight.shape, attrs);
    const Shape out{g.n, g.o, g.oh, g.ow};
    const memory::dims w_dims = g.groups == 1 ? memory::dims{g.o, g.i, g.kh, g.kw}
                                              : memory::dims{g.groups, g.o / g.groups, g.i, g.kh, g.kw};
    std::optional<Tensor> b;
    if (bias) b = bias_memory(*bias, out, 1, e);
    const memory::desc dst_desc = is_output(e) ? plain_desc(dims_of(out)) : any_desc(dims_of(out));
    // oneDNN counts dilation from 0 (no gap), Relay from 1.
    const memory::dims strides{g.stride[0], g.stride[1]}, dilates{g.dilation[0] - 1, g.dilation[1] - 1};
    const memory::dims pad_l{g.pad.top, g.pad.left}, pad_r{g.pad.bottom, g.pad.right};
    const auto kind = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::desc d =
        b ? dnnl::convolution_forward::desc(kind, alg, any_desc(dims_of(data.shape)), any_desc(w_dims),
                                            b->mem.get_desc(), dst_desc, strides, dilates, pad_l, pad_r)
          : dnnl::convolution_forward::desc(kind, alg, any_desc(dims_of(data.shape)), any_desc(w_dims),
                                            dst_desc, strides, dilates, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(d, relu_attr(relu), cpu_engine());
    Tensor src = reordered(data, pd.src_desc());
    Tensor w = reordered(plain(weight, w_dims, weight.shape), pd.weights_desc());
    memory dst = destination(e, pd.dst_desc());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src.mem}, {DNNL_ARG_WEIGHTS, w.mem}, {DNNL_ARG_DST, dst}};
    if (b) args[DNNL_ARG_BIAS] = b->mem;
    add_step(dnnl::convolution_forward(pd), std::move(args), name);
    return {dst, out, slot_of(e), false};
  }

  // nn.batch_matmul as a matmul; the transposes are strides of the operands' plain memories.
  Tensor batch_matmul(const Expr &e, const Call &call, const Tensor &x, const Tensor &y) {
    if (x.shape.size() != 3 || y.shape.size() != 3)
      cannot("dnnl cannot compile nn.batch_matmul of {} and {} (at {})", shape_to_string(x.shape),
             shape_to_string(y.shape), where(e));
    const BatchMatmul g = batch_matmul_geometry(x.shape, y.shape, call.attrs);
    // a(m, k) and b(k, n) over the stored [B, M, K] / [B, K, M] and [B, N, K] / [B, K, N].
    const memory::desc a_desc(memory::dims{g.bx, g.m, g.k}, memory::data_type::f32,
                              g.ta ? memory::dims{g.m * g.k, 1, g.m} : memory::dims{g.m * g.k, g.k, 1});
    const memory::desc b_desc(memory::dims{g.by, g.k, g.n}, memory::data_type::f32,
                              g.tb ? memory::dims{g.n * g.k, 1, g.k} : memory::dims{g.n * g.k, g.n, 1});
    Tensor a = view(reordered(x, plain_desc(dims_of(x.shape))), a_desc, x.shape);
    Tensor b = view(reordered(y, plain_desc(dims_of(y.shape))), b_desc, y.shape);
    const Shape out{g.batch, g.m, g.n};
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, plain_desc(dims_of(out))),
                                    cpu_engine());
    memory dst = destination(e, pd.dst_desc());
    add_step(dnnl::matmul(pd), {{DNNL_ARG_SRC, a.mem}, {DNNL_ARG_WEIGHTS, b.mem}, {DNNL_ARG_DST, dst}},
             "nn.batch_matmul");
    return {dst, out, slot_of(e), false};
  }

  // nn.bias_add: a binary add whose second operand is the bias seen as [1, .., C, .., 1].
  Tensor bias_add(const Expr &e, const Call &call, const Tensor &data, const Tensor &bias) {
    const Shape &out = data.shape;
    int64_t axis = bias_add_attrs(call.attrs).axis;
    if (axis < 0) axis += static_cast<int64_t>(out.size());
    if (axis < 0 || axis >= static_cast<int64_t>(out.size()) || bias.shape != Shape{out[axis]})
      cannot("dnnl cannot compile nn.bias_add of {} and {} along axis {} (at {})", shape_to_string(out),
             shape_to_string(bias.shape), axis, where(e));
    memory::dims dims(out.size(), 1);
    dims[axis] = out[axis];
    return binary_step(e, dnnl::algorithm::binary_add, data, plain(bias, dims, bias.shape), "nn.bias_add");
  }

  // add, subtract, multiply, divide: src0 has the result's shape; src1 broadcasts (plain, rank aligned).
  Tensor binary(const Expr &e, dnnl::algorithm alg, bool swaps, Tensor lhs, Tensor rhs,
                const std::string &name) {
    if (lhs.shape != rhs.shape && swaps && broadcasts_into(lhs.shape, rhs.shape)) std::swap(lhs, rhs);
    if (!broadcasts_into(rhs.shape, lhs.shape))
      cannot(
          "dnnl cannot compile {} of {} and {} (at {}): the second operand must broadcast into the first{}",
          name, shape_to_string(lhs.shape), shape_to_string(rhs.shape), where(e),
          swaps ? " or the first into the second" : "");
    // An output is written plain: then both operands are too (a binary of mixed layouts runs
    // oneDNN's slow reference implementation).
    if (is_output(e)) lhs = reordered(lhs, plain_desc(dims_of(lhs.shape)));
    if (rhs.shape == lhs.shape) return binary_step(e, alg, lhs, reordered(rhs, lhs.mem.get_desc()), name);
    memory::dims dims(lhs.mem.get_desc().dims().size(), 1);
    std::copy(rhs.shape.begin(), rhs.shape.end(), dims.end() - static_cast<std::ptrdiff_t>(rhs.shape.size()));
    return binary_step(e, alg, lhs, plain(rhs, dims, rhs.shape), name);
  }

  static bool broadcasts_into(const Shape &small, const Shape &big) {
    if (small.size() > big.size()) return false;
    for (size_t d = 1; d <= small.size(); ++d)
      if (small[small.size() - d] != 1 && small[small.size() - d] != big[big.size() - d]) return false;
    return true;
  }

  Tensor binary_step(const Expr &e, dnnl::algorithm alg, const Tensor &src0, const Tensor &src1,
                     const std::string &name) {
    // The result has src0's layout; an output's is plain.
    const Tensor in0 = is_output(e) ? reordered(src0, plain_desc(dims_of(src0.shape))) : src0;
    dnnl::binary::primitive_desc pd(
        dnnl::binary::desc(alg, in0.mem.get_desc(), src1.mem.get_desc(), in0.mem.get_desc()), cpu_engine());
    memory dst = destination(e, pd.dst_desc());
    add_step(dnnl::binary(pd), {{DNNL_ARG_SRC_0, in0.mem}, {DNNL_ARG_SRC_1, src1.mem}, {DNNL_ARG_DST, dst}},
             name);
    return {dst, src0.shape, slot_of(e), false};
  }

  // Unary ops as eltwise primitives, in the source's layout (an output's in plain layout).
  Tensor eltwise(const Expr &e, const Eltwise &el, const Tensor &src, const std::string &name) {
    const Tensor in = is_output(e) ? reordered(src, plain_desc(dims_of(src.shape))) : src;
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, el.algorithm, in.mem.get_desc(),
                                    el.alpha, el.beta),
        cpu_engine());
    memory dst = destination(e, pd.dst_desc());
    add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, in.mem}, {DNNL_ARG_DST, dst}}, name);
    return {dst, src.shape, slot_of(e), false};
  }

  const Function &fn_;
  Program program_;
  std::vector<Expr> outputs_;
  const ExprNode *root_tuple_ = nullptr;
  std::unordered_map<const ExprNode *, std::vector<int>> output_uses_;  // output expression -> its outputs
  std::unordered_set<const ExprNode *> direct_;  // outputs their primitive writes into the result itself
  std::unordered_map<const ExprNode *, Expr> let_values_;
  std::unordered_map<const ExprNode *, Tensor> tensors_;
};

class DnnlKernelCompiler : public KernelCompiler {
 public:
  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                       const std::vector<Shape> &shapes) override {
    const auto *fn = primitive.as<Function>();
    const AttrValue *compiler = fn ? fn->attrs.find(attr::kCompiler) : nullptr;
    if (!compiler || compiler->kind != AttrValue::Kind::String || compiler->s != "dnnl")
      user_error("the dnnl code generator compiles functions with Compiler=\"dnnl\" only (at {})",
                 where(primitive));
    if (dtypes.size() != shapes.size() || shapes.size() != fn->params.size())
      user_error("the dnnl function at {} has {} parameters, compiled for {} inputs", where(primitive),
                 fn->params.size(), shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (dtypes[i] != DType::Float32)
        return KernelResult::unsupported(
            fmt::format("dnnl compiles float32 tensors only, found a {} input {} (at {})",
                        to_string(dtypes[i]), i, where(primitive)));
      for (int64_t d : shapes[i])
        if (d <= 0)
          return KernelResult::unsupported(
              fmt::format("the dnnl code generator needs concrete, non-empty input shapes, found {} (at {})",
                          shape_to_string(shapes[i]), where(primitive)));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    Key key{primitive.get(), shapes};
    if (auto it = cache_.find(key); it != cache_.end()) return KernelResult::compiled(it->second.second);
    std::shared_ptr<DnnlKernel> kernel;
    try {
      kernel = std::make_shared<DnnlKernel>(Builder(*fn, shapes).build());
    } catch (const NotCompilable &why) {
      return KernelResult::unsupported(why.what());
    }
    cache_.emplace(key, std::make_pair(primitive, kernel));
    return KernelResult::compiled(kernel);
  }

  std::string name() const override { return "dnnl"; }

 private:
  using Key = std::pair<const ExprNode *, std::vector<Shape>>;
  std::mutex mutex_;
  // The function is held so that its node (the key) outlives the entry.
  std::map<Key, std::pair<Expr, std::shared_ptr<Kernel>>> cache_;
};

}  // namespace

Codegen dnnl_codegen() {
  return {
      "dnnl", "oneDNN primitives for dense, conv2d, batch_matmul (+bias, +relu fused) and elementwise ops",
      dnnl_target, [] { return std::unique_ptr<KernelCompiler>(std::make_unique<DnnlKernelCompiler>()); }};
}

}  // namespace grove::relay
