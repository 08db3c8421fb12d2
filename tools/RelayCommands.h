#pragma once
// `grove relay ...`: the Relay layer on the command line — check (types), opt (passes), equal
// (structural equality), run (the VM or the reference interpreter), dump (the VM's bytecode, or the
// ILIR of the recursive functions grove compiles), partition (for external code generators), build
// (a partitioned program with its compiled kernels, saved), ops (the op table) and targets (the code
// generators).

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "datasets/Tree.h"
#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"

namespace grove::tool {

struct RelayCheckCommand {
  std::string file;
};

struct RelayOptCommand {
  std::string file, passes, out;
  int fuse_max_depth = 256;
  bool types = false;    // print `/* ty=... */` comments
  bool explain = false;  // say on stderr which globals grove compiles recursively, and why not the others
  std::string meta = "sidecar";  // where non-literal constants go: "sidecar" or "inline" (#[metadata])
};

struct RelayEqualCommand {
  std::string a, b;
};

struct RelayRunCommand {
  std::string file, out, executor = "vm";
  std::vector<std::string> targets;  // external code generators to partition for first (BYOC)
  std::vector<std::string> args;     // NAME=FILE.npy, or NAME=@FILE (a value in Relay's syntax)
  std::string trees, vocab;          // PTB trees for @main's List[Tree[int32]] / List[Rose[int32]] parameter
  int threads = 0;                   // the VM's kernels and recursive functions; 0: all cores
};

struct RelayPartitionCommand {
  std::string file, out;
  std::vector<std::string> targets;  // code generators, in priority order
};

// `grove relay build FILE [--target T,...] --out DIR`: the partitioned program and its compiled
// external functions, saved as a directory that `run DIR` and `bench DIR` load
// (backends/relay/byoc/SavedProgram.h).
struct RelayBuildCommand {
  std::string file, out;
  std::vector<std::string> targets;
};

// `grove relay import MODEL.onnx --out M.relay`: the ONNX model as Relay text and its constants
// sidecar (frontend/onnx/OnnxImporter.h).
struct RelayImportCommand {
  std::string file, out;
};

int relay_build(const RelayBuildCommand &c);
int relay_import(const RelayImportCommand &c);
int relay_check(const RelayCheckCommand &c);
int relay_partition(const RelayPartitionCommand &c);
int relay_targets();
int relay_opt(const RelayOptCommand &c);
int relay_equal(const RelayEqualCommand &c);
struct RelayDumpCommand {
  std::string file, stage = "vm";
  std::vector<std::string> args;  // --stage ilir: NAME=FILE.npy, the shape of a recursive function's weight
};

int relay_run(const RelayRunCommand &c);

// --arg NAME=FILE.npy / NAME=@FILE as a map from name (without `%`) to path; checks the form and
// that no name is given twice.
std::map<std::string, std::string> parse_relay_args(const std::vector<std::string> &args);

// @main's arguments as `grove relay run` binds them (same checks and messages): the --arg files, the
// trees (read, not yet converted) for the one tree-list parameter no --arg gives when `trees` is
// set, and `fill(param)` for any other parameter (an empty Value: missing).
struct MainArgs {
  std::vector<relay::Value> values;  // one per parameter of @main; empty at tree_param
  int tree_param = -1;               // the parameter the trees bind, or -1
  std::vector<Tree> trees;
};
MainArgs bind_main_args(const relay::Module &m, const std::string &file,
                        std::map<std::string, std::string> arg_files, const std::string &trees,
                        const std::string &vocab,
                        const std::function<relay::Value(const relay::Expr &param)> &fill = {});
int relay_dump(const RelayDumpCommand &c);
int relay_ops();

}  // namespace grove::tool
