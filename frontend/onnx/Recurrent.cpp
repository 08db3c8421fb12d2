// ONNX LSTM and GRU as grove's fold over a sequence (backends/relay/recursive/SequenceFunctions.h): each
// direction of the node becomes a global
//   @lstm(%xs: List[Tensor[(B, D)]], %state, %w_ih, %w_hh, %b_ih, %b_hh) {
//     match (%xs) { Cons(%x, %rest) => <one step>; @lstm(%rest, new_state, weights...), Nil => %state }
//   }
// called from @main with the input's steps X[0], ..., X[T-1] (reversed for the reverse direction) as
// a List — the sequence is unrolled into the list when the model is imported, so T must be known; B
// may be `?`. The step is written in the operators grove's recursive compiler translates, so the VM
// runs the whole sequence as one batched grove call when the initial state is zero, and the
// function's own bytecode otherwise. When Y (every step's output) is used — a layer under another,
// as torch exports nn.LSTM(num_layers=2) — the steps are instead unrolled in @main (T calls of the
// step's kernels, which the VM fuses), since a fold returns only its last state.
//   1. Check what grove supports: the default activations, no clip, no peepholes, layout 0, every
//      sequence of full length.
//   2. Per direction: the weights W[d], R[d] and the two halves of B[d] (folded now when they are
//      initializers), the initial state initial_h[d] (and initial_c[d]) or zeros [B, H].
//   3. The fold (or the unrolled steps); Y_h = the directions' last h stacked, Y = every step's.
#include "frontend/onnx/Importer_Internal.h"

namespace grove::onnx_frontend {

using namespace relay;

namespace {

AttrValue ints_attr(const std::vector<int64_t> &v) {
  std::vector<AttrValue> list;
  for (int64_t x : v) list.push_back(AttrValue::of_int(x));
  return AttrValue::of_list(std::move(list));
}

Expr op_call(const char *op, std::vector<Expr> args, Attrs attrs = {}) {
  return Call::make(Op::make(op), std::move(args), std::move(attrs));
}

struct Recurrence {
  const char *kind;  // "LSTM" or "GRU"
  int gates;         // 4 or 3
  int states;        // 2 (h, c) or 1 (h)
  std::vector<std::string> activations;
};

// Step 1, the checks every recurrent node shares; returns hidden_size and the directions.
std::pair<int64_t, std::vector<bool>> check_recurrence(NodeContext &n, const Recurrence &r,
                                                       const OnnxValue &x) {
  const int64_t hidden = n.attr_int("hidden_size", 0);
  if (hidden <= 0) user_error(msg::kMissingAttr, n.where(), "hidden_size (a positive integer)");
  const std::string direction = n.attr_string("direction", "forward");
  std::vector<bool> reversed;  // one per direction: whether it runs from the last step
  if (direction == "forward" || direction == "reverse")
    reversed = {direction == "reverse"};
  else if (direction == "bidirectional")
    reversed = {false, true};
  else
    n.bad_attr("direction", direction, "expected forward, reverse or bidirectional");
  std::vector<std::string> acts = n.attr_strings("activations"), expected;
  for (size_t d = 0; d < reversed.size(); ++d)
    expected.insert(expected.end(), r.activations.begin(), r.activations.end());
  if (!acts.empty() && acts != expected) {
    std::string text, want;
    for (const std::string &a : acts) text += (text.empty() ? "" : ", ") + a;
    for (const std::string &a : expected) want += (want.empty() ? "" : ", ") + a;
    n.bad_attr("activations", "[" + text + "]", "grove reads the default activations [" + want + "]");
  }
  if (n.attr("activation_alpha") || n.attr("activation_beta"))
    n.bad_attr(n.attr("activation_alpha") ? "activation_alpha" : "activation_beta", "given",
               "the default activations take no parameters");
  if (n.attr("clip"))
    n.bad_attr("clip", std::to_string(n.attr_float("clip", 0)), "grove does not clip the gates");
  if (n.attr_int("layout", 0) != 0)
    n.bad_attr("layout", std::to_string(n.attr_int("layout", 0)),
               "grove reads X as [seq_length, batch, input]");
  if (x.rank() != 3)
    user_error(msg::kRank, n.where(), 0, x.rank(), "expected X [seq_length, batch_size, input_size]");
  if (x.shape[0] == kAnyDim) user_error(msg::kDynamicSequence, n.where(), n.node().input(0));
  if (x.shape[2] == kAnyDim)
    user_error(msg::kRank, n.where(), 0, 3, "the input size (dimension 2) must be known");
  if (n.has_input(4)) {
    const NDArray &lens = n.known_input(4, "sequence_lens", ": grove runs sequences of the length X gives");
    for (int64_t i = 0; i < lens.size(); ++i)
      if (lens.element_as_int(i) != x.shape[0])
        n.bad_attr("sequence_lens", std::to_string(lens.element_as_int(i)),
                   fmt::format("grove runs every sequence for the full length {}", x.shape[0]));
  }
  return {hidden, reversed};
}

// Direction d of a [dirs, ...] input: W[d] or R[d] ([G·H, K]), initial_h[d] ([B, H]).
OnnxValue direction_of(NodeContext &n, int input, const char *what, int64_t d, int64_t dirs) {
  const OnnxValue &w = n.input(input, what);
  if (w.rank() != 3 || w.shape[0] != dirs)
    user_error(msg::kRank, n.where(), input, w.rank(),
               fmt::format("expected {} [{}, ...] (one per direction)", what, dirs));
  Attrs attrs = Attrs()
                    .with("begin", ints_attr({d, 0, 0}))
                    .with("end", ints_attr({d + 1, int64_t(1) << 40, int64_t(1) << 40}));
  return n.call("squeeze", {n.call("strided_slice", {w}, attrs)}, Attrs().with("axis", ints_attr({0})));
}

// The bias halves of B[d], or zeros.
std::pair<OnnxValue, OnnxValue> biases(NodeContext &n, int64_t gh, int64_t d, int64_t dirs) {
  if (!n.has_input(3)) {
    OnnxValue zero = constant_value(NDArray(DType::Float32, {gh}));
    return {zero, zero};
  }
  const OnnxValue &b = n.input(3, "B");
  if (b.rank() != 2 || b.shape[0] != dirs || b.shape[1] != 2 * gh)
    user_error(msg::kRank, n.where(), 3, b.rank(), fmt::format("expected B [{}, {}]", dirs, 2 * gh));
  auto half = [&](int64_t begin) {
    Attrs attrs = Attrs()
                      .with("begin", ints_attr({d, begin}))
                      .with("end", ints_attr({d + 1, begin + gh}))
                      .with("strides", ints_attr({1, 1}));
    return n.call("reshape", {n.call("strided_slice", {b}, attrs)},
                  Attrs().with("newshape", ints_attr({gh})));
  };
  return {half(0), half(gh)};
}

OnnxValue initial_state(NodeContext &n, int input, const char *what, int64_t d, int64_t dirs, int64_t batch,
                        int64_t hidden) {
  if (n.has_input(input)) return direction_of(n, input, what, d, dirs);
  if (batch == kAnyDim) user_error(msg::kDynamicZeroState, n.where(), n.node().input(0));
  return constant_value(NDArray(DType::Float32, {batch, hidden}));
}

// The step of an LSTM, ONNX's gate order i, o, f, c: i, o, f = sigmoid, c~ = tanh,
// c' = f * c + i * c~, h' = o * tanh(c').
Expr lstm_step(const Expr &x, const Expr &h, const Expr &c, const std::vector<Expr> &w) {
  Expr gates = op_call("add", {op_call("add", {op_call("nn.dense", {x, w[0]}), w[2]}),
                               op_call("add", {op_call("nn.dense", {h, w[1]}), w[3]})});
  Expr parts =
      op_call("split", {gates},
              Attrs().with("indices_or_sections", AttrValue::of_int(4)).with("axis", AttrValue::of_int(1)));
  Expr i = op_call("sigmoid", {TupleGetItem::make(parts, 0)});
  Expr o = op_call("sigmoid", {TupleGetItem::make(parts, 1)});
  Expr f = op_call("sigmoid", {TupleGetItem::make(parts, 2)});
  Expr g = op_call("tanh", {TupleGetItem::make(parts, 3)});
  Expr c2 = op_call("add", {op_call("multiply", {f, c}), op_call("multiply", {i, g})});
  Expr h2 = op_call("multiply", {o, op_call("tanh", {c2})});
  return Tuple::make({h2, c2});
}

// The step of a GRU with linear_before_reset=1 (PyTorch's), ONNX's gate order z, r, h:
// z = sigmoid(Wz x + Wbz + Rz h + Rbz), r likewise, n = tanh(Wn x + Wbn + r * (Rn h + Rbn)),
// h' = (1 - z) * n + z * h, written n + z * (h - n).
Expr gru_step(const Expr &x, const Expr &h, const std::vector<Expr> &w) {
  Attrs three = Attrs().with("indices_or_sections", AttrValue::of_int(3)).with("axis", AttrValue::of_int(1));
  Expr gx = op_call("split", {op_call("add", {op_call("nn.dense", {x, w[0]}), w[2]})}, three);
  Expr gh = op_call("split", {op_call("add", {op_call("nn.dense", {h, w[1]}), w[3]})}, three);
  Expr z = op_call("sigmoid", {op_call("add", {TupleGetItem::make(gx, 0), TupleGetItem::make(gh, 0)})});
  Expr r = op_call("sigmoid", {op_call("add", {TupleGetItem::make(gx, 1), TupleGetItem::make(gh, 1)})});
  Expr nn = op_call(
      "tanh",
      {op_call("add", {TupleGetItem::make(gx, 2), op_call("multiply", {r, TupleGetItem::make(gh, 2)})})});
  return op_call("add", {nn, op_call("multiply", {z, op_call("subtract", {h, nn})})});
}

// The fold of one direction: the global (step 3) for these sizes, once per node and direction.
Expr fold_global(NodeContext &n, const Recurrence &r, int64_t batch, int64_t d, int64_t hidden) {
  const int64_t gh = r.gates * hidden;
  Importer &imp = n.importer();
  const TypeData &list = imp.list_type();
  const Expr &cons = list.constructors[0], &nil = list.constructors[1];
  Type step_type = TensorType::make({batch, d}, DType::Float32);
  Type state_tensor = TensorType::make({batch, hidden}, DType::Float32);
  Type state_type = r.states == 2 ? TupleType::make({state_tensor, state_tensor}) : state_tensor;
  Expr xs = Var::make("xs", TypeCall::make(list.header, {step_type}));
  Expr state = Var::make("state", state_type);
  std::vector<Expr> weights{Var::make("w_ih", TensorType::make({gh, d}, DType::Float32)),
                            Var::make("w_hh", TensorType::make({gh, hidden}, DType::Float32)),
                            Var::make("b_ih", TensorType::make({gh}, DType::Float32)),
                            Var::make("b_hh", TensorType::make({gh}, DType::Float32))};
  const std::string name = imp.fresh_global(r.states == 2 ? "lstm" : "gru");
  Expr self = GlobalVar::make(name);
  Expr x_var = Var::make("x", step_type), rest = Var::make("rest", TypeCall::make(list.header, {step_type}));
  Expr body_of_step;
  if (r.states == 2) {
    Expr h = Var::make("h", state_tensor), c = Var::make("c", state_tensor);
    std::vector<Expr> args{rest, lstm_step(x_var, h, c, weights)};
    args.insert(args.end(), weights.begin(), weights.end());
    body_of_step = Let::make(h, TupleGetItem::make(state, 0),
                             Let::make(c, TupleGetItem::make(state, 1), Call::make(self, args)));
  } else {
    std::vector<Expr> args{rest, gru_step(x_var, state, weights)};
    args.insert(args.end(), weights.begin(), weights.end());
    body_of_step = Call::make(self, args);
  }
  std::vector<Clause> clauses{
      {PatternNode::constructor_of(cons, {PatternNode::variable(x_var), PatternNode::variable(rest)}),
       body_of_step},
      {PatternNode::constructor_of(nil, {}), state}};
  std::vector<Expr> params{xs, state};
  params.insert(params.end(), weights.begin(), weights.end());
  imp.module().add_function(name, Function::make(params, Match::make(xs, clauses), state_type));
  return self;
}

OnnxValue float_value(Expr e, Shape shape) {
  OnnxValue v;
  v.expr = std::move(e);
  v.dtype = DType::Float32;
  v.shape = std::move(shape);
  return v;
}

Expr stack(const std::vector<Expr> &parts) {
  std::vector<Expr> fields;
  for (const Expr &p : parts)
    fields.push_back(op_call("expand_dims", {p}, Attrs().with("axis", AttrValue::of_int(0))));
  return fields.size() == 1
             ? fields[0]
             : op_call("concatenate", {Tuple::make(fields)}, Attrs().with("axis", AttrValue::of_int(0)));
}

std::vector<OnnxValue> recurrence(NodeContext &n, const Recurrence &r) {
  const OnnxValue &x = n.input(0, "X");
  const auto [hidden, reversed] = check_recurrence(n, r, x);
  const int64_t steps = x.shape[0], batch = x.shape[1], d = x.shape[2], gh = r.gates * hidden;
  const int64_t dirs = int64_t(reversed.size());
  if (n.has_input(7)) n.bad_attr("P", "given", "grove's LSTM has no peepholes");
  if (r.states == 2 && n.attr_int("input_forget", 0) != 0)
    n.bad_attr("input_forget", "1", "grove's LSTM keeps the gates apart");
  if (r.states == 1 && n.attr_int("linear_before_reset", 0) != 1)
    n.bad_attr("linear_before_reset", std::to_string(n.attr_int("linear_before_reset", 0)),
               "grove reads the GRU PyTorch exports (linear_before_reset=1)");
  const bool unrolled = n.output_used(0);  // Y: every step's h

  std::vector<Expr> step_exprs;
  for (int64_t t = 0; t < steps; ++t)
    step_exprs.push_back(n.call("take", {x, constant_value(NDArray::scalar(DType::Int64, double(t)))},
                                Attrs().with("axis", AttrValue::of_int(0)))
                             .expr);
  std::vector<std::vector<Expr>> last(static_cast<size_t>(r.states));  // [state][direction]
  std::vector<std::vector<Expr>> every(static_cast<size_t>(steps),
                                       std::vector<Expr>(static_cast<size_t>(dirs)));  // Y[t][direction]
  for (int64_t dir = 0; dir < dirs; ++dir) {
    // Step 2: this direction's weights, checked against D and H, and initial state.
    OnnxValue w_ih = direction_of(n, 1, "W", dir, dirs), w_hh = direction_of(n, 2, "R", dir, dirs);
    if (w_ih.shape != Shape{gh, d})
      user_error(msg::kRank, n.where(), 1, 3, fmt::format("expected W [{}, {}, {}]", dirs, gh, d));
    if (w_hh.shape != Shape{gh, hidden})
      user_error(msg::kRank, n.where(), 2, 3, fmt::format("expected R [{}, {}, {}]", dirs, gh, hidden));
    auto [b_ih, b_hh] = biases(n, gh, dir, dirs);
    std::vector<OnnxValue> init{initial_state(n, 5, "initial_h", dir, dirs, batch, hidden)};
    if (r.states == 2) init.push_back(initial_state(n, 6, "initial_c", dir, dirs, batch, hidden));
    for (const OnnxValue &s : init)
      if (s.shape != Shape{batch, hidden} && !(s.rank() == 2 && s.shape[1] == hidden))
        user_error(msg::kRank, n.where(), 5, s.rank(),
                   fmt::format("expected an initial state [{}, B, {}]", dirs, hidden));
    std::vector<Expr> weights{w_ih.expr, w_hh.expr, b_ih.expr, b_hh.expr};
    std::vector<int64_t> order(static_cast<size_t>(steps));
    for (int64_t t = 0; t < steps; ++t) order[t] = reversed[dir] ? steps - 1 - t : t;

    // Step 3: the fold, or the steps unrolled when Y is used.
    Expr state = r.states == 2 ? Tuple::make({init[0].expr, init[1].expr}) : init[0].expr;
    if (unrolled) {
      for (int64_t t : order) {
        state = r.states == 2 ? lstm_step(step_exprs[t], TupleGetItem::make(state, 0),
                                          TupleGetItem::make(state, 1), weights)
                              : gru_step(step_exprs[t], state, weights);
        every[t][dir] = r.states == 2 ? TupleGetItem::make(state, 0) : state;
      }
    } else {
      const TypeData &list = n.importer().list_type();
      Expr xs = Call::make(list.constructors[1], {});
      for (auto it = order.rbegin(); it != order.rend(); ++it)
        xs = Call::make(list.constructors[0], {step_exprs[*it], xs});
      Expr self = fold_global(n, r, batch, d, hidden);
      std::vector<Expr> args{xs, state};
      args.insert(args.end(), weights.begin(), weights.end());
      state = Call::make(self, args);
    }
    for (int k = 0; k < r.states; ++k)
      last[k].push_back(r.states == 2 ? TupleGetItem::make(state, k) : state);
  }

  // Y [T, dirs, B, H], Y_h and Y_c [dirs, B, H].
  std::vector<OnnxValue> outputs(1);
  if (unrolled) {
    std::vector<Expr> per_step;
    for (const std::vector<Expr> &at : every) per_step.push_back(stack(at));
    outputs[0] = float_value(stack(per_step), {steps, dirs, batch, hidden});
  }
  for (int k = 0; k < r.states; ++k) outputs.push_back(float_value(stack(last[k]), {dirs, batch, hidden}));
  return outputs;
}

std::vector<OnnxValue> lstm(NodeContext &n) {
  n.accept_attrs({"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
                  "input_forget", "layout"});
  return recurrence(n, {"LSTM", 4, 2, {"Sigmoid", "Tanh", "Tanh"}});
}

std::vector<OnnxValue> gru(NodeContext &n) {
  n.accept_attrs({"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
                  "layout", "linear_before_reset"});
  return recurrence(n, {"GRU", 3, 1, {"Sigmoid", "Tanh"}});
}

}  // namespace

std::vector<OperatorEntry> recurrent_operators() { return {{"GRU", 7, gru}, {"LSTM", 7, lstm}}; }

}  // namespace grove::onnx_frontend
