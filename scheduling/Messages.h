#pragma once
// Every user-facing message of the scheduling layer, in one place.

namespace grove::scheduling_messages {

inline constexpr char kBadItem[] = "{}: schedule item '{}' is not KEY=VALUE";
inline constexpr char kUnknownKey[] = "{}: unknown schedule key '{}' (known: {})";
inline constexpr char kBadBool[] = "{}: schedule key '{}' takes on or off, got '{}'";
inline constexpr char kBadInt[] = "{}: schedule key '{}' takes an integer in [{}, {}], got '{}'";
inline constexpr char kBadChoice[] = "{}: schedule key '{}' takes {}, got '{}'";
inline constexpr char kPanelNotMultiple[] = "{}: schedule panel={} must be a multiple of vector={}";

// Notes on options that were asked for but cannot take effect (Schedule::notes).
inline constexpr char kNoteEpilogue[] =
    "epilogue=on does nothing here: epilogue fusion works on level GEMMs, which need {}";
inline constexpr char kNoteRegion[] =
    "region=on does nothing here: one parallel region for the recursion needs {}";
inline constexpr char kNoteUnrollStructure[] =
    "unroll={} does nothing here: recursive unrolling applies to tree models, not to a {} model";
inline constexpr char kNoteUnrollRegion[] =
    "unroll={} does nothing here: recursive unrolling runs in one parallel region, which needs {}";
inline constexpr char kNoteGemmBlocking[] =
    "{}={} does nothing here: it blocks the level GEMMs, which need {}";
inline constexpr char kNotePrecision[] =
    "precision=bf16 does nothing here: bf16 weights are read by the level GEMMs, which need {}; "
    "everything runs in fp32";
inline constexpr char kNotePersist[] =
    "persist=on does nothing here: weight panels kept per thread across levels need {}";

}  // namespace grove::scheduling_messages
