#pragma once
// The user-facing messages of writing a compiled model's libraries (LibraryWriter.h), shared by
// `grove compile` for the CPU (backends/cpu/Aot.h) and for CUDA (backends/cuda/Aot.h); each back end's
// Messages.h names them too.

namespace grove::aot_messages {

inline constexpr char kAotBadName[] =
    "--name '{}' is not a C identifier: the library's symbols are named after it (letters, digits and _, "
    "not starting with a digit)";
inline constexpr char kAotOutDirNotDir[] = "-o {}: exists and is not a directory";
inline constexpr char kAotOutDir[] = "-o {}: cannot create the output directory: {}";
inline constexpr char kAotTempDir[] = "-o {}: cannot create a temporary directory in it: {}";
inline constexpr char kAotWrite[] = "cannot write {}: {}";
inline constexpr char kAotRead[] = "cannot read {}: {}";
inline constexpr char kAotRename[] = "cannot move {} into place as {}: {}";
inline constexpr char kAotTool[] = "`grove compile` could not build {}: `{}` failed ({}):\n{}";
inline constexpr char kAotNoTool[] = "no such program: install a C toolchain, or name it in ${}";
inline constexpr char kAotWeightsSizes[] =
    "{}: the weights give {} = {}, but the library is compiled with {} = {}";

}  // namespace grove::aot_messages
