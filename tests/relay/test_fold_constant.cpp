// Placeholder: tests written by the Relay core work in progress.
#include <gtest/gtest.h>
