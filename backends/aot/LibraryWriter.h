#pragma once
// What `grove compile` does for every target once a back end has compiled a model: the plumbing of a
// compiled model's libraries (include/grove/grove.h's grove_compiled_model), shared by the CPU's
// (backends/cpu/Aot.h: Halide's objects) and CUDA's (backends/cuda/Aot.h: NVRTC's images). It checks
// the name and the output directory, runs the system's C toolchain ($CC, $OBJCOPY, $AR), writes the
// descriptor's and the entry point's sources and the assembler files that embed blobs (.incbin), links
// lib<name>.so (only the two accessors exported) and lib<name>.a (one relocatable object with only
// <name>_grove_model global), and renames them and <name>.h from a private directory in the output
// directory into place, so that a failure leaves the files already there untouched. No Halide, no CUDA.
//
//   const std::string name = aot::library_name(options.name, program.name);
//   const fs::path out_dir = aot::prepare_out_dir(options.out_dir);
//   aot::LibraryWriter lib(name, out_dir);
//   std::vector<std::string> objects{lib.compile_c("descriptor", source, {"-I" + include},
//                                                  "the model's descriptor")};
//   lib.compile_entry("-I" + include);
//   lib.link_shared(objects, {});
//   lib.link_static(objects);
//   lib.write_header(header);
//   aot::LibraryFiles files = lib.move_into_place();

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "ilir/IR.h"
#include "support/Tensor.h"

namespace grove::aot {

// The library's name (its symbols' prefix): `requested`, else the program's name in lower case; a
// UserError unless it is a C identifier.
std::string library_name(const std::string &requested, const std::string &program_name);

// The output directory (empty: "."), created if missing; a UserError if it is not a directory or
// cannot be made.
std::filesystem::path prepare_out_dir(const std::string &out_dir);

// A C string literal of `text`, as adjacent literals of about 100 characters, one per line: quotes,
// backslashes, question marks (trigraphs) and every byte outside printable ASCII escaped, the latter
// as three octal digits so that a following digit cannot extend the escape.
std::string c_string_literal(const std::string &text);

// $variable, else `fallback`.
std::string tool(const char *variable, const char *fallback);

// Runs `program args...` through the shell (so that $CC may carry options, "ccache gcc"), its output
// captured for the error message, which names what was being built and the variable naming the tool.
void run_tool(const std::string &program, const char *variable, const std::vector<std::string> &args,
              const std::string &what);

void write_file(const std::filesystem::path &path, const std::string &bytes);
std::string read_file(const std::string &path);

// A UserError if `weights` (from `where`) bind a size variable of `program` to other than `sizes`
// gives it: the library is compiled at those sizes.
void check_weights_fit(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                       const Weights &weights, const std::string &where);

// An assembler section `section` (a directive's operands: ".rodata", or a name and flags) holding
// `file` (found through the assembler's include path), 64-byte aligned, as the hidden global `symbol`.
std::string incbin_assembly(const std::string &section, const std::string &symbol, const std::string &file);

// The header's pieces: the parameters as " *   name [shape]" lines, the sizes as "v=1,w=2", the
// sentence on the weights, and what follows the comment (the guard, extern "C" and the descriptor's
// declaration).
std::string header_params(const ModelAbi &abi);
std::string header_sizes(const ModelAbi &abi);
const char *header_weights(bool embedded);
std::string header_declarations(const std::string &name);

struct LibraryFiles {
  std::string shared_library, static_library, header;  // the paths written
};

// The private directory in the output directory (removed with what is left in it when this goes)
// and the libraries built there.
class LibraryWriter {
 public:
  LibraryWriter(std::string name, std::filesystem::path out_dir);
  ~LibraryWriter();
  LibraryWriter(const LibraryWriter &) = delete;
  LibraryWriter &operator=(const LibraryWriter &) = delete;

  std::filesystem::path operator/(const std::string &file) const { return temp_ / file; }
  const std::filesystem::path &temp() const { return temp_; }
  const std::string &cc() const { return cc_; }

  // Writes <stem>.c and compiles it (-O2 -fPIC `flags` -c) to <stem>.o, whose path it returns.
  std::string compile_c(const std::string &stem, const std::string &source,
                        const std::vector<std::string> &flags, const std::string &what);
  // Writes <stem>.s and assembles it to <stem>.o (the temporary directory on its include path).
  std::string assemble(const std::string &stem, const std::string &source, const std::string &what);
  // entry.o: the shared library's grove_compiled_model_entry, kept out of the static library so that
  // two models linked into one program do not both define it.
  void compile_entry(const std::vector<std::string> &flags);
  // lib<name>.so from `objects` and entry.o, exporting only the two accessors, then `libraries`.
  void link_shared(const std::vector<std::string> &objects, const std::vector<std::string> &libraries);
  // lib<name>.a: `objects` as one relocatable object, every symbol but <name>_grove_model made local.
  void link_static(const std::vector<std::string> &objects);
  void write_header(const std::string &text);
  // Renames the three files into the output directory.
  LibraryFiles move_into_place();

 private:
  std::string name_, so_name_, a_name_, h_name_;
  std::filesystem::path out_dir_, temp_;
  std::string cc_;
};

}  // namespace grove::aot
