#pragma once
// What the grove program says on standard error besides its results: user errors and notes.

#include <string>
#include <vector>

namespace grove::tool {

// `grove: error: MESSAGE` (a message that carries its own "file:line:col: error:" is not prefixed
// twice).
void print_user_error(const std::string &message);

// `grove: note: NOTE` for each note: requested schedule options that could not take effect.
void print_notes(const std::vector<std::string> &notes);

}  // namespace grove::tool
