#pragma once
// `mpirun -n K grove run ...`: one run spread over K processes, on one machine or many, with Open MPI.
//
//   1. Every rank checks the command line and starts compiling the model. Rank 0 reads the whole
//      input once (tools/Shares.h), checking it as the run will, and cuts it into K shares with
//      about equal node counts at multiples of the batch; it sends the plan (or the input's error)
//      to every rank.
//   2. Rank 0 creates the output's temporary file with its final header; each rank streams its
//      share (tools/StreamRun.h) and writes its rows at their place in the file with MPI-IO, so
//      nothing is gathered in one process and the file is the bytes a single process writes.
//   3. A rank that fails (an input its model cannot take, a write error) tells every other rank,
//      which stop after their current chunk. At the end the ranks agree on the outcome: rank 0
//      renames the file into place only if every rank succeeded, and otherwise removes it and
//      prints the first failing rank's error — the message a single process prints for that input.
//
// Threads: by default each rank gets its share of the machine's cores (cores / ranks on the
// machine, at least 1); --threads sets them.

#include "tools/Commands.h"
#include "tools/Run.h"

namespace grove::tool {

// Whether an MPI launcher started this process: Open MPI's mpirun, or a PMI/PMIx launcher (Slurm's
// srun, MPICH's hydra). Returns the variable that says so, or empty.
std::string mpi_launcher_variable();
inline bool launched_by_mpi() { return !mpi_launcher_variable().empty(); }

// Whether this grove was built with MPI.
bool built_with_mpi();

// The run above; call it only when launched_by_mpi(). Without MPI support it is a UserError that
// says so (each process would otherwise run the whole input and write the same file).
int run_distributed(const RunCommand &c, const RunInput &input);

}  // namespace grove::tool
