// The Relay virtual machine against the reference interpreter: the example programs of models/relay,
// closures, recursion, ADTs and nested matches, refs, if, tuples, 100,000-element lists, `?` shapes
// (one kernel per shape), the bytecode printer, the memory plan's storage reuse, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/relay/halide/HalideKernels.h"
#include "backends/relay/vm/Bytecode.h"
#include "backends/relay/vm/InterpreterKernels.h"
#include "backends/relay/vm/VM.h"
#include "backends/relay/vm/VMCompiler.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"
#include "tests/UserError.h"
#include "tests/relay/ModelFixtures.h"
#include "tests/relay/ValueCompare.h"

namespace grove::relay {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

using testing::same_value;

VirtualMachine make_vm(const Module &m, std::unique_ptr<KernelCompiler> kernels = nullptr,
                       const vm::CompileOptions &options = {}) {
  vm::Executable exe = vm::compile(m, options);
  if (kernels == nullptr) kernels = make_interpreter_kernel_compiler(exe.module);
  return VirtualMachine(std::move(exe), std::move(kernels));
}

// Runs @main on both executors and expects the same value; returns the VM's.
Value expect_same_as_interpreter(const Module &m, const std::vector<Value> &args,
                                 const vm::CompileOptions &options = {}) {
  Value expected = run_main(m, args);
  VirtualMachine machine = make_vm(m, nullptr, options);
  Value actual = machine.run_main(args);
  std::string why;
  EXPECT_TRUE(same_value(actual, expected, &why)) << why;
  return actual;
}

Module parse(const std::string &text) {
  Module m = parse_module(text, "vm.relay");
  infer_types(m);
  return m;
}

Value f32(float v) { return tensor_value(NDArray::scalar(DType::Float32, v)); }
Value i32(int v) { return tensor_value(NDArray::scalar(DType::Int32, v)); }

NDArray filled(Shape shape, float start = 0, float step = 1) {
  NDArray a(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = start + step * static_cast<float>(i);
  return a;
}

using testing::list_value;

// A KernelCompiler that counts compiles and can corrupt outputs (one element dropped), for the
// cache and run-time shape tests.
class CountingCompiler : public KernelCompiler {
 public:
  enum class Corrupt { None, Shape, Count };
  CountingCompiler(std::unique_ptr<KernelCompiler> inner, int *compiles, Corrupt corrupt)
      : inner_(std::move(inner)), compiles_(compiles), corrupt_(corrupt) {}
  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                       const std::vector<Shape> &shapes) override {
    ++*compiles_;
    KernelResult kernel = inner_->compile(primitive, dtypes, shapes);
    if (corrupt_ == Corrupt::None || !kernel.ok()) return kernel;
    return KernelResult::compiled(std::make_shared<Corrupting>(kernel.kernel(), corrupt_));
  }
  std::string name() const override { return "counting"; }

 private:
  struct Corrupting : Kernel {
    Corrupting(std::shared_ptr<Kernel> k, Corrupt c) : inner(std::move(k)), corrupt(c) {}
    std::vector<NDArray> run(const std::vector<NDArray> &inputs) override {
      std::vector<NDArray> out = inner->run(inputs);
      if (corrupt == Corrupt::Count) {
        out.push_back(out[0]);
        return out;
      }
      Shape shape = out[0].shape();
      shape[0] -= 1;
      out[0] = NDArray(out[0].dtype(), shape);
      return out;
    }
    std::string describe() const override { return "corrupting"; }
    std::shared_ptr<Kernel> inner;
    Corrupt corrupt;
  };
  std::unique_ptr<KernelCompiler> inner_;
  int *compiles_;
  Corrupt corrupt_;
};

// ---------------------------------------------------------------------------------------------
// The example programs
// ---------------------------------------------------------------------------------------------

using testing::load_model;
using testing::main_args;

TEST(RelayVM, MlpEqualsInterpreter) {
  auto l = load_model("mlp");
  expect_same_as_interpreter(l.module, main_args(l));
}

TEST(RelayVM, CnnEqualsInterpreter) {
  auto l = load_model("cnn");
  expect_same_as_interpreter(l.module, main_args(l));
}

TEST(RelayVM, LstmEqualsInterpreter) {
  auto l = load_model("lstm");
  expect_same_as_interpreter(l.module, main_args(l, {{"xs", testing::lstm_sequence(l)}}));
}

// Node by node (bit for bit); the batched call of grove's compiled @treelstm is test_vm_recursive.cpp's.
TEST(RelayVM, TreeLstmEqualsInterpreter) {
  auto l = load_model("treelstm");
  size_t count = 0;
  Value trees = testing::treelstm_trees(l, &count);
  ASSERT_EQ(count, 6u);
  Value out =
      expect_same_as_interpreter(l.module, main_args(l, {{"trees", trees}}), {.recursive_functions = false});
  EXPECT_EQ(out->as<ADTValue>()->constructor.as<Constructor>()->name, "Cons");
}

// ---------------------------------------------------------------------------------------------
// Language features
// ---------------------------------------------------------------------------------------------

constexpr char kList[] = R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
)";

TEST(RelayVM, LetBoundRecursiveClosureWithCaptureAndIf) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32], %n: int32) -> Tensor[(3), float32] {
  let %scale = 2f;
  let %f = fn (%y: Tensor[(3), float32], %k: int32) -> Tensor[(3), float32] {
    if (greater(%k, 0)) { %f(multiply(%y, %scale), subtract(%k, 1)) } else { %y }
  };
  %f(%x, %n)
}
)");
  Value out = expect_same_as_interpreter(m, {tensor_value(filled({3}, 1)), i32(3)});
  EXPECT_EQ(tensor_of(out).data<float>()[2], 24.0f);  // 3 * 2^3
}

TEST(RelayVM, GlobalRecursionNestedMatchesAndConstructorAsValue) {
  Module m = parse(std::string(kList) + R"(
def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}
def @twice(%x: float32) -> float32 { multiply(%x, 2f) }
def @pairs(%xs: List[float32]) -> List[float32] {
  match (%xs) {
    Cons(%a, Cons(%b, %rest)) => Cons(add(%a, %b), @pairs(%rest)),
    Cons(%a, Nil) => Cons(%a, Nil),
    Nil => Nil,
  }
}
def @main(%xs: List[float32]) -> (List[float32], List[List[float32]]) {
  let %wrap = fn (%x: float32) -> List[float32] { Cons(%x, Nil) };
  let %nested = @map(%wrap, @map(@twice, %xs));
  let %c = Cons;
  (@pairs(%c(10f, %xs)), @map(fn (%l: List[float32]) -> List[float32] { %c(1f, %l) }, %nested))
}
)");
  Value xs = list_value(m, {f32(1), f32(2), f32(3), f32(4)});
  Value out = expect_same_as_interpreter(m, {xs});
  EXPECT_EQ(value_to_string(out->as<TupleValue>()->fields[0]),
            value_to_string(list_value(m, {f32(11), f32(5), f32(4)})));
}

TEST(RelayVM, TuplePatternsAndProjections) {
  Module m = parse(std::string(kList) + R"(
def @main(%x: Tensor[(4), float32]) -> (Tensor[(2), float32], float32) {
  %0 = split(%x, indices_or_sections=2);
  %1 = (%0.1, Cons(sum(%0.0), Nil));
  match (%1) {
    (%a, Cons(%s, _)) => (%a, %s),
    (_, Nil) => (%0.0, 0f),
  }
}
)");
  Value out = expect_same_as_interpreter(m, {tensor_value(filled({4}, 1))});
  EXPECT_EQ(tensor_of(out->as<TupleValue>()->fields[1]).data<float>()[0], 3.0f);
}

TEST(RelayVM, RefsAreSharedCells) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: float32) -> float32 {
  let %r = ref(%x);
  let %u = ref_write(%r, add(ref_read(%r), 1f));
  let %g = fn () -> () { ref_write(%r, multiply(ref_read(%r), 3f)) };
  let %v = %g();
  ref_read(%r)
}
)");
  Value out = expect_same_as_interpreter(m, {f32(2)});
  EXPECT_EQ(tensor_of(out).data<float>()[0], 9.0f);
}

TEST(RelayVM, HundredThousandElementListRecursionUsesNoCStack) {
  Module m = parse(std::string(kList) + R"(
def @length(%xs: List[int32]) -> int32 {
  match (%xs) {
    Cons(_, %rest) => add(@length(%rest), 1),
    Nil => 0,
  }
}
def @main(%xs: List[int32]) -> int32 { @length(%xs) }
)");
  Value zero = i32(0);
  Value list = adt_value(*m.find_constructor("Nil"), {});
  for (int i = 0; i < 100000; ++i) list = adt_value(*m.find_constructor("Cons"), {zero, list});
  VirtualMachine machine = make_vm(m);
  EXPECT_EQ(tensor_of(machine.run_main({list})).element_as_int(0), 100000);
}

TEST(RelayVM, IncompleteMatchIsFatalWithTheMatchsLocation) {
  Module m = parse(std::string(kList) + R"(
def @main(%xs: List[float32]) -> float32 {
  match? (%xs) {
    Cons(%h, _) => %h,
  }
}
)");
  Value nil = list_value(m, {});
  std::string interp = user_error_of([&] { run_main(m, {nil}); });
  std::string vm = user_error_of([&] { make_vm(m).run_main({nil}); });
  EXPECT_THAT(vm, HasSubstr("no clause of the match at vm.relay:8:3 matches Nil"));
  EXPECT_EQ(vm, interp);
}

TEST(RelayVM, UnknownDimsCompileOneKernelPerShape) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(?), float32]) -> Tensor[(?), float32] {
  %0 = add(%x, %x);
  %1 = sum(%0);
  multiply(%0, %1)
}
)");
  int compiles = 0;
  vm::Executable exe = vm::compile(m);
  ASSERT_EQ(exe.kernels.size(), 3u);  // add; sum; multiply (a reduction ends its group)
  auto counting = std::make_unique<CountingCompiler>(make_interpreter_kernel_compiler(exe.module), &compiles,
                                                     CountingCompiler::Corrupt::None);
  VirtualMachine machine(std::move(exe), std::move(counting));
  for (Shape shape : {Shape{3}, Shape{5}, Shape{3}}) {
    std::vector<Value> args{tensor_value(filled(shape, 1))};
    std::string why;
    EXPECT_TRUE(same_value(machine.run_main(args), run_main(m, args), &why)) << why;
  }
  EXPECT_EQ(compiles, 6);  // three kernels, two shapes; the second (3) is cached
  EXPECT_EQ(machine.stats().kernel_compiles, 6u);
  EXPECT_EQ(machine.stats().kernel_calls, 9u);
}

// A module using the operators of TVM-printed modules on the VM with Halide kernels where they
// lower and the interpreter's otherwise (as `grove relay run` compiles): the same values as the
// interpreter (power through libm: 1e-6 relative). Every group runs on Halide, the one with a float16
// value too (computed in float32, stored as float16, as the interpreter does).
TEST(RelayVM, TvmPrintedOperatorsOnHalideOrTheFallback) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 3, 3), float32], %g: Tensor[(3), float32], %b: Tensor[(3), float32], %i: Tensor[(2), int32]) {
  %0 = cast(cast(cast(%x, dtype="int32"), dtype="float16"), dtype="float32");
  %1 = power(maximum(minimum(copy(%0), 6f), 0.5f), 2f);
  %2 = nn.layer_norm(round(%1), %g, %b, epsilon=1e-05f);
  %3 = nn.pad(%2, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [2, 0]], pad_mode="reflect");
  %4 = nn.global_avg_pool2d(%3);
  %5 = tile(broadcast_to(argmax(%4, axis=[1]), shape=[2, 1, 1]), reps=[1, 3]);
  %6 = one_hot(%i, 1f, 0f, depth=4, axis=-1, dtype="float32");
  %7 = logical_or(logical_and(greater(%x, 1f), less(%x, 4f)), equal(floor(%x), ceil(%x)));
  (%5, %6, %7, %4)
}
)");
  NDArray x = filled({1, 4, 3, 3}, -3.25f, 0.25f), g = filled({3}, 0.5f, 0.5f), b = filled({3}, -1, 1);
  NDArray idx(DType::Int32, {2});
  idx.data<int32_t>()[0] = 3;
  idx.data<int32_t>()[1] = -1;
  const std::vector<Value> args = {tensor_value(x), tensor_value(g), tensor_value(b), tensor_value(idx)};
  vm::Executable exe = vm::compile(m);
  auto kernels = make_fallback_kernel_compiler(make_halide_kernel_compiler(),
                                               make_interpreter_kernel_compiler(exe.module));
  VirtualMachine machine(std::move(exe), std::move(kernels));
  std::string why;
  EXPECT_TRUE(same_value(machine.run_main(args), run_main(m, args), &why, 1e-6)) << why;
}

// A fused group that only reshapes (squeeze, reshape, expand_dims, nn.batch_flatten) runs as a view of its
// argument, no kernel: of a tensor, of a tuple's field (the split's), of a `?` shape (computed when it runs).
// The viewed value (a kernel's output) is kept out of the memory plan, so the multiply's output, of
// the same shape, does not overwrite it while the view is live. A view that does not fit is the
// interpreter's error.
TEST(RelayVM, ReshapesAreViewsWithoutAKernel) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(?, 3), float32]) {
  let %a = add(%x, 1f);
  let %v = reshape(%a, newshape=[3, 2]);
  let %b = multiply(%a, 2f);
  let %c = add(%b, 3f);
  let %s = split(%x, indices_or_sections=2, axis=0);
  (%v, %c, squeeze(expand_dims(%x, axis=0), axis=[0]), reshape(%y, newshape=[-1, 6]), squeeze(%s.1, axis=[0]),
   nn.batch_flatten(expand_dims(%x, axis=1)))
}
)");
  vm::Executable exe = vm::compile(m);
  std::string dump = vm::to_string(exe);
  EXPECT_THAT(dump, HasSubstr("ReshapeTensor $"));
  EXPECT_THAT(dump, HasSubstr("), a view"));
  std::vector<Value> args{tensor_value(filled({2, 3}, 1)), tensor_value(filled({4, 3}, -2))};
  VirtualMachine machine = make_vm(m);
  std::string why;
  EXPECT_TRUE(same_value(machine.run_main(args), run_main(m, args), &why)) << why;
  EXPECT_EQ(machine.stats().reshapes, 5u);
  EXPECT_EQ(machine.stats().kernel_calls, 4u);  // add, multiply, add, split
  args[1] = tensor_value(filled({3, 3}));
  const std::string vm_error = user_error_of([&] { machine.run_main(args); });
  const std::string interp_error = user_error_of([&] { run_main(m, args); });
  EXPECT_THAT(vm_error, HasSubstr("error in reshape: "));
  EXPECT_EQ(vm_error, interp_error);
}

// ---------------------------------------------------------------------------------------------
// Bytecode, memory plan, errors
// ---------------------------------------------------------------------------------------------

TEST(RelayVM, BytecodePrinterGolden) {
  Module m = parse(std::string(kList) + R"(
def @main(%xs: List[float32], %y: float32) -> float32 {
  match (%xs) {
    Cons(%h, _) => if (greater(%h, %y)) { %h } else { negative(%y) },
    Nil => 1f,
  }
}
)");
  EXPECT_EQ(vm::to_string(vm::compile(m)), R"(@main: 0 captured, 2 params, 10 registers, 0 storage
  0: GetTag $3 <- $0
  1: If $3 == 0 else goto 11
  2: GetField $4 <- $0.0
  3: InvokeKernel ($5) <- k0($4, $1)
  4: If $5 else goto 7
  5: Move $6 <- $4
  6: Goto 9
  7: InvokeKernel ($7) <- k1($1)
  8: Move $6 <- $7
  9: Move $2 <- $6
  10: Goto 17
  11: GetTag $8 <- $0
  12: If $8 == 1 else goto 16
  13: LoadConst $9 <- c0
  14: Move $2 <- $9
  15: Goto 17
  16: Fatal $0 "no clause of the match at vm.relay:8:3 matches"
  17: Ret $2
k0: greater
k1: negative
c0: () float32
)");
}

TEST(RelayVM, MemoryPlanReusesStorageOfDeadKernelOutputs) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(8, 8), float32]) -> Tensor[(1, 8), float32] {
  %0 = nn.relu(nn.dense(%x, %w));
  %1 = nn.relu(nn.dense(%0, %w));
  %2 = nn.relu(nn.dense(%1, %w));
  nn.relu(nn.dense(%2, %w))
}
)");
  NDArray w = filled({8, 8}, -0.5f, 1.0f / 64);
  std::vector<Value> args{tensor_value(filled({1, 8}, -1, 0.25f)), tensor_value(w)};
  Value expected = run_main(m, args);
  VirtualMachine machine = make_vm(m);
  const vm::VMFunction &main = machine.executable().functions[machine.executable().globals.at("main")];
  EXPECT_EQ(main.num_storage, 1);  // %0, %1, %2 share one buffer; the result is not planned
  Value out = machine.run_main(args);
  std::string why;
  EXPECT_TRUE(same_value(out, expected, &why)) << why;
  EXPECT_EQ(machine.stats().kernel_calls, 4u);
  EXPECT_EQ(machine.stats().storage_allocations, 1u);
  EXPECT_EQ(machine.stats().storage_reuses, 2u);
  // A second call allocates again (storage belongs to the frame) and still agrees.
  EXPECT_TRUE(same_value(machine.run_main(args), expected, &why)) << why;
  EXPECT_EQ(machine.stats().storage_allocations, 2u);
}

TEST(RelayVM, EqualFusedFunctionsShareOneKernel) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: float32) -> float32 {
  let %a = add(%x, 1f);
  let %b = add(%a, 1f);
  let %c = add(%b, 2f);
  add(%c, 1f)
}
)");
  vm::Executable exe = vm::compile(m);
  ASSERT_EQ(exe.kernels.size(), 2u);  // add(_, 1f) three times, add(_, 2f) once
  EXPECT_EQ(exe.kernels[0].ops, "add");
  int compiles = 0;
  auto counting = std::make_unique<CountingCompiler>(make_interpreter_kernel_compiler(exe.module), &compiles,
                                                     CountingCompiler::Corrupt::None);
  VirtualMachine machine(std::move(exe), std::move(counting));
  EXPECT_EQ(tensor_of(machine.run_main({f32(1)})).data<float>()[0], 6.0f);
  EXPECT_EQ(compiles, 2);
}

// Kernels are keyed by structural hash and equality, not by printed text: functions whose variables
// are named differently and whose attributes are written in another order are one kernel, compiled
// once; a different attribute value is another kernel.
TEST(RelayVM, StructurallyEqualKernelsShareOneCompiledKernel) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  let %f = fn (%p: Tensor[(4), float32], Primitive=1) { clip(%p, a_min=0f, a_max=1f) };
  let %g = fn (%q: Tensor[(4), float32], Primitive=1) { clip(%q, a_max=1f, a_min=0f) };
  let %h = fn (%r: Tensor[(4), float32], Primitive=1) { clip(%r, a_min=0f, a_max=2f) };
  let %a = %f(%x);
  let %b = %g(%a);
  %h(%b)
}
)");
  vm::Executable exe = vm::compile(m);
  ASSERT_EQ(exe.kernels.size(), 2u);  // %f and %g; %h
  int compiles = 0;
  auto counting = std::make_unique<CountingCompiler>(make_interpreter_kernel_compiler(exe.module), &compiles,
                                                     CountingCompiler::Corrupt::None);
  VirtualMachine machine(std::move(exe), std::move(counting));
  NDArray x = filled({4});
  for (int k = 0; k < 4; ++k) x.data<float>()[k] = static_cast<float>(k) - 1.5f;
  const NDArray out = tensor_of(machine.run_main({tensor_value(x)}));
  EXPECT_EQ(out.data<float>()[0], 0.0f);
  EXPECT_EQ(out.data<float>()[3], 1.0f);
  EXPECT_EQ(compiles, 2);
}

// A kernel no compiler is left to take (Halide alone, an operator it does not lower) is the user's
// error at run time, naming the operator and where.
TEST(RelayVM, AKernelNoCompilerTakesIsAUserError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) { erf(%x) }
)");
  VirtualMachine machine(vm::compile(m), make_halide_kernel_compiler());
  EXPECT_THAT(user_error_of([&] { machine.run_main({tensor_value(filled({4}))}); }),
              HasSubstr("the Halide kernel compiler does not support erf"));
}

// A compiler that takes nothing: each compile counted, then an unsupported result or a UserError.
class RefusingCompiler : public KernelCompiler {
 public:
  enum class Refuse { Unsupported, UserMistake };
  RefusingCompiler(Refuse refuse, int *compiles) : refuse_(refuse), compiles_(compiles) {}
  KernelResult compile(const Expr &primitive, const std::vector<DType> &,
                       const std::vector<Shape> &) override {
    ++*compiles_;
    if (refuse_ == Refuse::UserMistake) user_error("a mistake in what the refusing compiler was given");
    return KernelResult::unsupported(fmt::format("the refusing compiler does not support {} (at {})",
                                                 vm::kernel_op_names(primitive), to_string(primitive->span)));
  }
  std::string name() const override { return "refusing"; }

 private:
  Refuse refuse_;
  int *compiles_;
};

const char *kErfProgram = R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) { erf(%x) }
)";

// The fallback takes its second compiler on an unsupported result only: a UserError of the first
// passes through unchanged, the second never asked.
TEST(RelayVM, TheFallbackTakesTheInterpreterOnUnsupportedAndNeverOnAUserError) {
  vm::Executable exe = vm::compile(parse(kErfProgram));
  ASSERT_EQ(exe.kernels.size(), 1u);
  const Expr &primitive = exe.kernels[0].primitive;
  int refused = 0, interpreted = 0;
  auto fallback = [&](RefusingCompiler::Refuse refuse) {
    return make_fallback_kernel_compiler(
        std::make_unique<RefusingCompiler>(refuse, &refused),
        std::make_unique<CountingCompiler>(make_interpreter_kernel_compiler(exe.module), &interpreted,
                                           CountingCompiler::Corrupt::None));
  };
  auto unsupported = fallback(RefusingCompiler::Refuse::Unsupported);
  EXPECT_EQ(unsupported->name(), "refusing, else counting");
  KernelResult result = unsupported->compile(primitive, {DType::Float32}, {{4}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.kernel()->describe(), "interpreter: erf");
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(interpreted, 1);

  auto mistaken = fallback(RefusingCompiler::Refuse::UserMistake);
  EXPECT_EQ(user_error_of([&] { (void)mistaken->compile(primitive, {DType::Float32}, {{4}}); }),
            "a mistake in what the refusing compiler was given");
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(interpreted, 1);
}

// With no compiler left, the VM reports the unsupported result's reason, word for word, as a
// UserError; the failure is not cached (the next run asks again).
TEST(RelayVM, AnUnsupportedKernelWithNoFallbackIsTheReasonAsAUserError) {
  int refused = 0;
  VirtualMachine machine(vm::compile(parse(kErfProgram)),
                         std::make_unique<RefusingCompiler>(RefusingCompiler::Refuse::Unsupported, &refused));
  const std::vector<Value> args{tensor_value(filled({4}))};
  EXPECT_EQ(user_error_of([&] { machine.run_main(args); }),
            "the refusing compiler does not support erf (at vm.relay:2:39)");
  EXPECT_EQ(user_error_of([&] { machine.run_main(args); }),
            "the refusing compiler does not support erf (at vm.relay:2:39)");
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(machine.stats().kernel_compiles, 0u);
}

// A result holds one side: reading the other is a grove bug, not a user's error.
TEST(RelayVM, AKernelResultChecksWhichSideItHolds) {
  KernelResult unsupported = KernelResult::unsupported("no kernel for erf (at x.relay:1:1)");
  EXPECT_FALSE(unsupported.ok());
  EXPECT_TRUE(unsupported.is_unsupported());
  EXPECT_EQ(unsupported.unsupported().reason, "no kernel for erf (at x.relay:1:1)");
  EXPECT_THROW((void)unsupported.kernel(), InternalError);
  EXPECT_EQ(user_error_of([&] { (void)unsupported.kernel_or_user_error(); }),
            "no kernel for erf (at x.relay:1:1)");
  EXPECT_THROW((void)KernelResult::compiled(nullptr), InternalError);

  vm::Executable exe = vm::compile(parse(kErfProgram));
  KernelResult compiled = make_interpreter_kernel_compiler(exe.module)
                              ->compile(exe.kernels[0].primitive, {DType::Float32}, {{4}});
  EXPECT_TRUE(compiled.ok());
  EXPECT_EQ(compiled.kernel_or_user_error().get(), compiled.kernel().get());
  EXPECT_THROW((void)compiled.unsupported(), InternalError);
}

TEST(RelayVM, BadArgumentsSayWhatTheInterpreterSays) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %n: int32) -> Tensor[(2, 3), float32] { %x }
)");
  VirtualMachine machine = make_vm(m);
  std::vector<Value> one{tensor_value(filled({2, 3}))};
  std::string vm = user_error_of([&] { machine.run_main(one); });
  EXPECT_THAT(vm, HasSubstr("@main takes 2 arguments, but 1 was given"));
  EXPECT_EQ(vm, user_error_of([&] { run_main(m, one); }));
  std::vector<Value> wrong{tensor_value(filled({3, 3})), i32(1)};
  vm = user_error_of([&] { machine.run_main(wrong); });
  EXPECT_THAT(vm, HasSubstr("argument %x of @main: expected Tensor[(2, 3), float32], found a tensor of shape "
                            "(3, 3) and dtype float32"));
  EXPECT_EQ(vm, user_error_of([&] { run_main(m, wrong); }));
}

TEST(RelayVM, KernelOutputOfTheWrongShapeIsARunTimeError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  tanh(add(%x, 1f))
}
)");
  int compiles = 0;
  vm::Executable exe = vm::compile(m);
  auto bad = std::make_unique<CountingCompiler>(make_interpreter_kernel_compiler(exe.module), &compiles,
                                                CountingCompiler::Corrupt::Shape);
  VirtualMachine machine(std::move(exe), std::move(bad));
  std::string message = user_error_of([&] { machine.run_main({tensor_value(filled({3}))}); });
  EXPECT_THAT(message,
              HasSubstr("error in the fused kernel add+tanh: output 0 has shape (2,) and dtype float32, "
                        "but the call's type is Tensor[(3), float32]"));
  EXPECT_THAT(message, HasSubstr("vm.relay:"));

  vm::Executable again = vm::compile(m);
  auto extra = std::make_unique<CountingCompiler>(make_interpreter_kernel_compiler(again.module), &compiles,
                                                  CountingCompiler::Corrupt::Count);
  VirtualMachine counting(std::move(again), std::move(extra));
  EXPECT_THAT(user_error_of([&] { counting.run_main({tensor_value(filled({3}))}); }),
              HasSubstr("error in the fused kernel add+tanh: it returned 2 tensors, expected 1"));
}

TEST(RelayVM, ModuleWithoutMainIsAnError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @f(%x: float32) -> float32 { %x }
)");
  EXPECT_EQ(user_error_of([&] { vm::compile(m); }), "the module has no @main function");
}

TEST(RelayVM, PrimitiveFunctionUsedAsAValueIsNotCompiled) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: float32) -> (fn (float32) -> float32, float32) {
  let %k = fn (%p: float32, Primitive=1) -> float32 { negative(%p) };
  (%k, %k(%x))
}
)");
  std::string message = user_error_of([&] { vm::compile(m); });
  EXPECT_THAT(message, HasSubstr("the VM cannot compile the fused (Primitive) function %k used as a value"));
}

TEST(RelayVM, ClosureTheVmDidNotCompileIsAnError) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%f: fn (float32) -> float32, %x: float32) -> float32 { %f(%x) }
)");
  Expr y = Var::make("y", TensorType::scalar(DType::Float32));
  Value foreign = closure_value(Function::make({y}, y));
  VirtualMachine machine = make_vm(m);
  EXPECT_THAT(user_error_of([&] {
                machine.run_main({foreign, f32(1)});
              }),
              HasSubstr("the VM did not compile this function"));
}

TEST(RelayVM, ExternalCompilerFunctionsAreNotCompiled) {
  Module m = parse(R"(#[version = "0.0.5"]
def @main(%x: float32) -> float32 {
  %0 = fn (%y: float32, Compiler="dnnl") -> float32 { %y };
  %0(%x)
}
)");
  std::string message = user_error_of([&] { vm::compile(m); });
  EXPECT_THAT(message, HasSubstr("Compiler=\"dnnl\""));
  EXPECT_THAT(message, HasSubstr("vm.relay:3:"));
}

}  // namespace
}  // namespace grove::relay
