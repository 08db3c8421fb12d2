/* The command line of the peak microbenchmarks (fma_peak.c, bf16_peak.c): --runs R --iterations N. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the options into *runs and *iterations (left at their defaults when absent); 0 on success,
 * else 2 after a message naming `tool`. */
static int parse_peak_args(const char *tool, int argc, char **argv, int *runs, long *iterations) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--runs") == 0) {
      *runs = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--iterations") == 0) {
      *iterations = atol(argv[i + 1]);
    } else {
      fprintf(stderr, "%s: unknown option '%s'; expected --runs R or --iterations N\n", tool, argv[i]);
      return 2;
    }
  }
  if (*runs <= 0 || *iterations <= 0) {
    fprintf(stderr, "%s: --runs and --iterations must be positive\n", tool);
    return 2;
  }
  return 0;
}
