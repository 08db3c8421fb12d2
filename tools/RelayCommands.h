#pragma once
// `grove relay ...`: the Relay layer on the command line — check (types), opt (passes), equal
// (structural equality), run (the reference interpreter or the VM), dump (the VM's bytecode) and ops
// (the op table).

#include <string>
#include <vector>

namespace grove::tool {

struct RelayCheckCommand {
  std::string file;
};

struct RelayOptCommand {
  std::string file, passes, out;
  int fuse_max_depth = 256;
  bool types = false;    // print `/* ty=... */` comments
  bool explain = false;  // say on stderr which globals grove compiles recursively, and why not the others
};

struct RelayEqualCommand {
  std::string a, b;
};

struct RelayRunCommand {
  std::string file, out, executor = "interp";
  std::vector<std::string> args;  // NAME=FILE.npy, or NAME=@FILE (a value in Relay's syntax)
  std::string trees, vocab;       // PTB trees for @main's List[Tree[int32]] / List[Rose[int32]] parameter
};

int relay_check(const RelayCheckCommand &c);
int relay_opt(const RelayOptCommand &c);
int relay_equal(const RelayEqualCommand &c);
struct RelayDumpCommand {
  std::string file, stage = "vm";
};

int relay_run(const RelayRunCommand &c);
int relay_dump(const RelayDumpCommand &c);
int relay_ops();

}  // namespace grove::tool
