#pragma once
// The messages of the support library (support/), in one place.

namespace grove::support_messages {

inline constexpr char kCannotWrite[] = "cannot write {}: {}";

}  // namespace grove::support_messages
