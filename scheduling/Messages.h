#pragma once
// Every user-facing message of the scheduling layer, in one place.

namespace grove::scheduling_messages {

inline constexpr char kBadItem[] = "{}: schedule item '{}' is not KEY=VALUE";
inline constexpr char kUnknownKey[] = "{}: unknown schedule key '{}' (known: {})";
inline constexpr char kBadBool[] = "{}: schedule key '{}' takes on or off, got '{}'";
inline constexpr char kBadInt[] = "{}: schedule key '{}' takes an integer in [{}, {}], got '{}'";
inline constexpr char kPanelNotMultiple[] = "{}: schedule panel={} must be a multiple of vector={}";

}  // namespace grove::scheduling_messages
