// Every Relay test program on the VM against the reference interpreter (Differential.h): equal
// values, or the same UserError, with seeded random arguments built from the parameters' types.
//
// Where the programs come from. The test programs stay where their tests read best — inline in the
// tests' C++ as raw string literals (a pass test's before and expected side by side), in
// fuzz/corpus/relay/ and in models/relay/ — and this test reads them there. Moving them to .relay
// files would split every before/expected test across two files, and a registry each test file
// exposes would have to be kept in step by hand; read in place, a program added to any test is
// checked here too, and none is copied:
//   1. every raw string literal R"(...)" of the Relay suites (tests/relay, tests/frontend/relay,
//      tests/backends/relay: *.cpp and *.h) is a candidate; one that parses
//      as a module is a program, alone or else after a prelude — a literal that defines only types
//      (the `kList` the tests prepend);
//   2. every file of fuzz/corpus/relay/ and models/relay/ is a program; a model runs with its
//      fixture's tensors (models/relay/fixtures/), whose `?` dimensions agree with each other.
// Literals that are not programs (expressions, error tests, fmt templates) are skipped and counted
// with their reason. Programs that are not raw literals reach the VM through the helpers of their
// own tests instead: test_interpreter.cpp's `eval` (IR built with make()) calls evaluate_on_both,
// test_type_infer.cpp's `main_type` (programs in plain string literals) check_on_both.
//
// What runs. A program that type-checks runs its @main; without one, each of its monomorphic
// globals runs as @main; one with a `?` in its parameters runs twice, the second time with each `?`
// its own size, so that run-time shape checks fail alike. First with the VM's interpreter kernels —
// bit for bit, or within a relative 1e-5 where grove's compiled recursive functions sum in another
// order — each run in a child process, so that a program that never ends (the printer's `@id` calls
// itself) is stopped and a crash is reported; then, in this process, with Halide's kernels (within a
// relative 1e-5) for the runs with a kernel no earlier run compiled. The counts print, and a floor on
// the runs keeps a broken gatherer from passing with nothing checked.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/TypeInfer.h"
#include "support/Error.h"
#include "tests/relay/Differential.h"
#include "tests/relay/ModelFixtures.h"

namespace grove::relay {
namespace {

namespace fs = std::filesystem;
using testing::Check;
using testing::VMKernels;

const fs::path kRoot = GROVE_SOURCE_DIR;

// The fewest runs each test must check; the gatherer finds more (the counts print: 358 with the
// interpreter's kernels, 134 with Halide's when this was written). A drop below means programs are
// lost: a literal's form the reader no longer recognises, a moved folder.
constexpr int kMinInterpreterKernelRuns = 300;
constexpr int kMinHalideKernelRuns = 100;

std::string read_text(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Literal {
  std::string where;  // file:line
  std::string text;
};

// The raw string literals of a C++ source: R"delim( ... )delim", not preceded by an identifier
// character (u8R"(...)" and the like are not Relay).
std::vector<Literal> raw_literals(const fs::path &path) {
  std::string s = read_text(path);
  std::string name = fs::relative(path, kRoot).string();
  std::vector<Literal> out;
  for (size_t at = s.find("R\""); at != std::string::npos; at = s.find("R\"", at + 2)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(s[at - 1])) || s[at - 1] == '_')) continue;
    size_t open = s.find('(', at + 2);
    if (open == std::string::npos || open - at - 2 > 16) continue;
    std::string close = ")";
    close.append(s, at + 2, open - at - 2).push_back('"');
    size_t end = s.find(close, open);
    if (end == std::string::npos) break;
    int line = 1 + int(std::count(s.begin(), s.begin() + long(at), '\n'));
    out.push_back({fmt::format("{}:{}", name, line), s.substr(open + 1, end - open - 1)});
    at = end;
  }
  return out;
}

std::vector<fs::path> files_in(const fs::path &dir, const std::set<std::string> &extensions) {
  std::vector<fs::path> out;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && extensions.count(entry.path().extension().string()))
      out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<Module> try_parse(const std::string &text, const std::string &name) {
  try {
    return parse_module(text, name);
  } catch (const UserError &) {
    return std::nullopt;
  }
}

struct Program {
  std::string where;
  Module module;                         // parsed, not yet typed
  std::map<std::string, NDArray> given;  // a model's fixture tensors, by parameter name
};

// One run: @entry of a program (its @main, or without one each global), with its random arguments'
// `?` dimensions all 2 or, when `drawn_dims`, each drawn from [1, 3] (so that they may disagree: the
// run-time shape checks and their errors).
struct EntryRun {
  const Program *program;
  std::string entry, where;
  bool drawn_dims = false;

  RandomValueOptions options() const { return {.unknown_dim = drawn_dims ? 0 : 2}; }
};

// Whether a parameter of @entry has a `?` dimension.
bool has_unknown_dims(const Module &m, const std::string &entry) {
  const auto &params = m.find_function(entry)->as<Function>()->params;
  return std::any_of(params.begin(), params.end(),
                     [](const Expr &p) { return to_string(p->checked_type).find('?') != std::string::npos; });
}

// Counts by reason: what ran, what was skipped and why.
struct Tally {
  int run = 0, same_error = 0;         // runs, and those where both raised the same UserError
  std::vector<std::string> elsewhere;  // runs where both raised it at different locations
  std::map<std::string, int> skipped;
  std::vector<std::string> differences;
  void skip(const std::string &why) { ++skipped[why]; }
};

// 1. Read every raw literal of the Relay suites' folders; those that parse as modules defining only types are
//    the preludes.
// 2. Each other literal parses alone, or after the first prelude with which it parses.
// 3. Add the files of fuzz/corpus/relay/ and models/relay/ (with their constants sidecar, and a
//    model's fixture tensors as the arguments they name: its weights' `?` dimensions must agree).
std::vector<Program> gather_programs(Tally &tally) {
  std::vector<Literal> literals;
  for (const char *dir : {"tests/relay", "tests/frontend/relay", "tests/backends/relay"})
    for (const fs::path &path : files_in(kRoot / dir, {".cpp", ".h"}))
      if (path.filename() != "test_vm_differential.cpp")
        for (Literal &l : raw_literals(path)) literals.push_back(std::move(l));

  std::vector<std::string> preludes;
  std::set<std::string> seen;
  for (const Literal &l : literals) {
    std::optional<Module> m = try_parse(l.text, l.where);
    if (m && m->functions().empty() && !m->types().empty() && seen.insert(l.text).second)
      preludes.push_back(l.text);
  }

  std::vector<Program> programs;
  seen.clear();
  for (const Literal &l : literals) {
    if (!seen.insert(l.text).second) {
      tally.skip("the same text as an earlier literal");
      continue;
    }
    std::optional<Module> m = try_parse(l.text, l.where);
    for (size_t i = 0; !m && i < preludes.size(); ++i) m = try_parse(preludes[i] + l.text, l.where);
    if (!m)
      tally.skip("a literal that is not a module (an expression, an error test, a template)");
    else if (m->functions().empty())
      tally.skip("a module without functions (a prelude of types)");
    else
      programs.push_back({l.where, std::move(*m), {}});
  }

  for (const char *dir : {"fuzz/corpus/relay", "models/relay"})
    for (const fs::path &path : files_in(kRoot / dir, {".relay"})) {
      std::string where = fs::relative(path, kRoot).string();
      try {
        programs.push_back({where, parse_relay_file(path.string()), {}});
        fs::path fixture = path.parent_path() / "fixtures" / (path.stem().string() + ".safetensors");
        if (fs::exists(fixture)) programs.back().given = read_safetensors_arrays(fixture.string());
      } catch (const UserError &) {
        tally.skip("a corpus file that does not parse (an error seed)");
      }
    }
  return programs;
}

// A stable seed per program (FNV-1a of its location), so a failure reproduces.
uint64_t seed_of(const std::string &where) {
  uint64_t h = 1469598103934665603ull;
  for (char c : where) h = (h ^ uint64_t(static_cast<unsigned char>(c))) * 1099511628211ull;
  return h;
}

// How long one executor may run one program: the parser's and printer's tests hold programs that
// never end (`def @id(%x: int32) -> int32 { @id(%x) }`), and the slowest real ones take well under.
constexpr int kTimeoutMs = 5000;     // the interpreter's: past it, the program is taken never to end
constexpr int kVmTimeoutMs = 60000;  // the VM's, once the interpreter has finished

// A check's result as the child writes it: Agree, Skip, Differ; Agree with `elsewhere`.
constexpr char kResultLetters[] = "ASD";
constexpr char kElsewhereLetter = 'E';

// Reads what the child writes until it closes the pipe or `deadline` passes; false on the deadline.
bool read_until(int fd, std::chrono::steady_clock::time_point deadline, std::string &out) {
  char buffer[4096];
  while (true) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0) return false;
    int ready = ::poll(&p, 1, int(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return false;
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return true;
    out.append(buffer, size_t(n));
  }
}

// check_on_both in a child process, so that a program that never ends is stopped and a crash is a
// reported difference rather than the end of this test. The child writes 'I' once the interpreter
// is done, then the check's result letter and detail. This process never runs a kernel itself, so
// it holds no Halide threads and forking it is safe.
Check check_in_child(const EntryRun &run, VMKernels kernels) {
  int fds[2];
  if (::pipe(fds) != 0) return {Check::Differ, "pipe() failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      std::string skip;
      std::optional<testing::Prepared> p = testing::prepare(
          run.program->module, run.entry, seed_of(run.where), &skip, run.program->given, run.options());
      Check check{Check::Skip, skip};
      if (p) {
        testing::Outcome interp = testing::run_on_interpreter(*p);
        if (::write(fds[1], "I", 1) != 1) ::_exit(1);
        check = testing::compare(interp, testing::run_on_vm(*p, kernels));
      }
      out = std::string(1, check.elsewhere ? kElsewhereLetter : kResultLetters[check.result]) + check.detail;
    } catch (const std::exception &e) {
      out = fmt::format("{}an exception: {}", kResultLetters[Check::Differ], e.what());
    }
    bool written = ::write(fds[1], out.data(), out.size()) == ssize_t(out.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  std::string got;
  auto start = std::chrono::steady_clock::now();
  bool ended = read_until(fds[0], start + std::chrono::milliseconds(kTimeoutMs), got);
  if (!ended && got == "I") {
    // The interpreter finished, so the program ends: the VM gets ample time (its compilation and a
    // sanitized build on a loaded machine are slow; only a VM that loops forever may fail here).
    ended =
        read_until(fds[0], std::chrono::steady_clock::now() + std::chrono::milliseconds(kVmTimeoutMs), got);
  }
  ::close(fds[0]);
  if (!ended) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!ended && got.empty())
    return {Check::Skip,
            fmt::format("the interpreter runs past {} s (a program that never ends)", kTimeoutMs / 1000)};
  if (!ended)
    return {Check::Differ,
            fmt::format("the interpreter finished, the VM runs past {} s", kVmTimeoutMs / 1000)};
  if (got.size() > 0 && got[0] == 'I') got.erase(0, 1);
  if (WIFSIGNALED(status))
    return {Check::Differ, fmt::format("the check crashed (signal {})", WTERMSIG(status))};
  if (got.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {Check::Differ, fmt::format("the check's process ended with status {}", status)};
  if (got[0] == kElsewhereLetter) return {Check::Agree, got.substr(1), true};
  size_t result = std::string_view(kResultLetters).find(got[0]);
  if (result == std::string_view::npos) return {Check::Differ, "the check's process wrote " + got};
  return {Check::Result(result), got.substr(1)};
}

// The programs, typed, and their runs; gathering's skips in `tally`.
struct Suite {
  std::vector<Program> programs;
  std::vector<EntryRun> runs;
  Tally tally;
};

const Suite &suite() {
  static const Suite *s = [] {
    auto *s = new Suite;
    for (Program &p : gather_programs(s->tally)) {
      try {
        infer_types(p.module);
      } catch (const UserError &) {
        s->tally.skip("a program with a type error (a type-error test)");
        continue;
      }
      s->programs.push_back(std::move(p));
    }
    for (const Program &p : s->programs) {
      std::vector<std::string> entries;
      if (p.module.find_function("main"))
        entries.push_back("main");
      else
        for (const auto &[name, fn] : p.module.functions()) entries.push_back(name);
      for (const std::string &entry : entries) {
        std::string where = entry == "main" ? p.where : p.where + " @" + entry;
        s->runs.push_back({&p, entry, where});
        if (has_unknown_dims(p.module, entry))
          s->runs.push_back({&p, entry, where + " (`?` sizes drawn)", true});
      }
    }
    return s;
  }();
  return *s;
}

void count(Tally &tally, const EntryRun &run, const Check &check) {
  if (check.result == Check::Skip) tally.skip(check.detail);
  if (check.result != Check::Skip) ++tally.run;
  if (check.result == Check::Agree && !check.detail.empty()) ++tally.same_error;
  if (check.elsewhere) tally.elsewhere.push_back(run.where + ":\n  interpreter: " + check.detail);
  if (check.result == Check::Differ) tally.differences.push_back(run.where + ":\n  " + check.detail);
}

// Every run with the interpreter's kernels, each in a child process: one check per run of suite().
const std::vector<Check> &interpreter_kernel_checks() {
  static const std::vector<Check> *checks = [] {
    auto *checks = new std::vector<Check>;
    for (const EntryRun &run : suite().runs) checks->push_back(check_in_child(run, VMKernels::Interpreter));
    return checks;
  }();
  return *checks;
}

void report(const Tally &tally, const char *kernels, int floor) {
  int skipped = 0;
  for (const auto &[why, n] : tally.skipped) skipped += n;
  std::string text = fmt::format(
      "VM ({} kernels) against the interpreter: {} runs ({} raising the same UserError on both), {} "
      "skipped\n",
      kernels, tally.run, tally.same_error, skipped);
  for (const auto &[why, n] : tally.skipped) text += fmt::format("  {:4} skipped: {}\n", n, why);
  for (const std::string &e : tally.elsewhere) text += "  the same error at another location: " + e + "\n";
  std::cout << text;
  EXPECT_GE(tally.run, floor) << "the gatherer found fewer programs than it should";
  for (const std::string &d : tally.differences) ADD_FAILURE() << d;
}

// ---------------------------------------------------------------------------------------------
// Differences found, fixed in the VM
// ---------------------------------------------------------------------------------------------

// @map of a recursive function over an empty list compiled grove's function with the weights anyway:
// weights it rejects failed on the VM where the interpreter, calling nothing, returns Nil.
TEST(RelayVMDifferential, RecursiveMapOverAnEmptyListCompilesNothing) {
  testing::LoadedModel l = testing::load_model("treelstm");
  std::vector<Value> args;
  for (const Expr &p : l.module.find_function("main")->as<Function>()->params)
    args.push_back(p.as<Var>()->name_hint == "trees"
                       ? testing::list_value(l.module, {})
                       : tensor_value(NDArray(DType::Float32,
                                              Shape(p->checked_type.as<TensorType>()->shape.size(), 2))));
  vm::Executable exe = vm::compile(l.module);
  ASSERT_FALSE(exe.external_functions.empty());
  VirtualMachine machine(std::move(exe), make_interpreter_kernel_compiler(l.module));
  EXPECT_EQ(value_to_string(machine.run_main(args)), "Nil");
  EXPECT_EQ(value_to_string(run_main(l.module, args)), "Nil");
  EXPECT_EQ(machine.stats().recursive_compiles, 0u);
}

// Zero-element tensors through kernels whose outputs the memory plan stores: copying an empty output
// into its storage gave memmove a null buffer, undefined behaviour that UBSan reports (found by
// fuzz/fuzz_relay_vm.cpp).
TEST(RelayVMDifferential, ZeroElementTensorsThroughPlannedStorage) {
  Module m = parse_module(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(0, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[1, 2]);
  reshape(%1, newshape=[1, -1])
}
)",
                          "zero.relay");
  infer_types(m);
  vm::Executable exe = vm::compile(m);
  EXPECT_GT(exe.functions[exe.globals.at("main")].num_storage, 0);
  Check check = testing::check_on_both(m, "main", 1, VMKernels::Interpreter);
  EXPECT_EQ(check.result, Check::Agree) << check.detail;
}

// Not a bug, a difference the comparison allows: which of two failing operators a program reports
// depends on the order they run in — the interpreter's left to right, the VM's a fused kernel's
// inputs first (here the reduction's group). Both name the same error (found by fuzz_relay_vm).
TEST(RelayVMDifferential, AFailingOperatorMayBeReportedAtAnotherLocation) {
  Module m = parse_module(R"(#[version = "0.0.5"]
def @main(%x: int32) {
  add(divide(1, %x), sum(divide(2, %x)))
}
)",
                          "order.relay");
  infer_types(m);
  testing::Prepared p{m, {tensor_value(NDArray::scalar(DType::Int32, 0))}};
  testing::Outcome interp = testing::run_on_interpreter(p);
  testing::Outcome vm = testing::run_on_vm(p, VMKernels::Interpreter);
  EXPECT_EQ(interp.error, "order.relay:3:7: error in divide: integer division by zero");
  EXPECT_EQ(vm.error, "order.relay:3:26: error in divide: integer division by zero");
  Check check = testing::compare(interp, vm);
  EXPECT_EQ(check.result, Check::Agree);
  EXPECT_TRUE(check.elsewhere);
}

// ---------------------------------------------------------------------------------------------
// Every test program
// ---------------------------------------------------------------------------------------------

TEST(RelayVMDifferential, EveryTestProgramAgreesWithTheInterpreterKernels) {
  Tally tally = suite().tally;
  for (size_t i = 0; i < suite().runs.size(); ++i)
    count(tally, suite().runs[i], interpreter_kernel_checks()[i]);
  report(tally, "interpreter", kMinInterpreterKernelRuns);
}

// A kernel as the Halide pass tells kernels apart: its operators in order and its parameters'
// dtypes ("nn.dense+add float32 float32 float32"), not their shapes or the attributes, which
// test_halide_kernels.cpp varies op by op.
std::string kernel_key(const vm::KernelInfo &kernel) {
  std::string key = kernel.ops;
  for (const Expr &p : kernel.primitive.as<Function>()->params)
    if (const auto *t = p->checked_type.as<TensorType>()) key += std::string(" ") + to_string(t->dtype);
  return key;
}

// The runs that agreed with the interpreter's kernels, again with Halide's, in this process (Halide's
// thread pool makes forking unsafe; the first check proved that they end). JIT compiling is slow
// (0.1 to 1 s a kernel), and the VM's control flow is checked already, so a run whose kernels were
// all compared in an earlier run is skipped: a pass test's expected program fuses to its before's.
TEST(RelayVMDifferential, EveryTestProgramAgreesWithTheHalideKernels) {
  Tally tally = suite().tally;
  std::set<std::string> compared;
  for (size_t i = 0; i < suite().runs.size(); ++i) {
    const EntryRun &run = suite().runs[i];
    const Check &first = interpreter_kernel_checks()[i];
    if (first.result != Check::Agree) {
      tally.skip(first.result == Check::Skip ? first.detail
                                             : "differs with the interpreter's kernels already");
      continue;
    }
    Check check{Check::Differ, ""};
    try {
      std::string skip;
      std::optional<testing::Prepared> p = testing::prepare(
          run.program->module, run.entry, seed_of(run.where), &skip, run.program->given, run.options());
      bool fresh = false;
      for (const vm::KernelInfo &k : vm::compile(p->module).kernels)
        fresh = compared.insert(kernel_key(k)).second || fresh;
      if (!fresh) {
        tally.skip("every kernel compared in an earlier run (or none)");
        continue;
      }
      check = testing::compare(testing::run_on_interpreter(*p), testing::run_on_vm(*p, VMKernels::Halide));
    } catch (const InternalError &e) {
      check.detail = e.what();
    }
    count(tally, run, check);
  }
  report(tally, "Halide", kMinHalideKernelRuns);
}

}  // namespace
}  // namespace grove::relay
