#pragma once
// Whole-file writes that never leave a truncated file behind.

#include <span>
#include <string>
#include <string_view>

namespace grove {

// Writes `pieces`, one after another, to a temporary file in `path`'s directory, then renames it
// over `path`. If anything fails, the temporary is removed, an existing `path` is left untouched,
// and a UserError names `path` and the reason.
void write_file_atomically(const std::string &path, std::span<const std::string_view> pieces);

}  // namespace grove
