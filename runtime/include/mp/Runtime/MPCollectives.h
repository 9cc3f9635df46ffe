/*===- MPCollectives.h - compiled steps across MPI ranks ----------*- C -*-===*
 *
 * A data-parallel step (tg-data-parallel, `mp-compile --data-parallel`)
 * averages its gradients with tg.all_reduce, which runs over the
 * process's communicator (MPRuntime.h). An MPI program that links compiled
 * steps sets it once, after MPI_Init and before the first step:
 *
 *   MPI_Init(&argc, &argv);
 *   mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_WORLD), 300.0);
 *   ... every rank runs the step on its own shard of the batch ...
 *   mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_NULL), 0); // before
 *   MPI_Finalize();
 *
 * and links `mp_runtime_mpi` (the MP::mp_runtime_mpi CMake target, or
 * -lmp_runtime_mpi with the MPI library). Every rank must run the same
 * compiled step from the same parameters; the sums are identical on every
 * rank, so the parameters stay identical.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_RUNTIME_MPCOLLECTIVES_H
#define MP_RUNTIME_MPCOLLECTIVES_H

#include "mp/Runtime/MPRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes tg.all_reduce sum over the MPI communicator whose Fortran handle is
 * `comm` (MPI_Comm_c2f; MPI_COMM_NULL's handle returns to one rank). f32 and
 * f64 use MPI_SUM; f16 and bf16 travel as 16-bit words and are added in f32
 * by a user-defined MPI operation. A collective that has not completed
 * after `timeoutSeconds` (0: wait forever) fails with
 * MP_ERROR_COMMUNICATION, and the message names this rank and the bytes
 * it waited for: a rank that died or hangs never leaves the others waiting
 * forever (mprtTakeError then holds the message). The timed-out
 * collective stays active (MPI can neither cancel nor free it), so every
 * later one fails at once and the caller should MPI_Abort; calling this
 * function again first waits for it to complete. Returns
 * MP_ERROR_INVALID_ARGUMENT when MPI is not initialised. */
mpStatus mpUseMpiCommunicator(int32_t comm, double timeoutSeconds);

/* Waits for the MPI request at `request` (an MPI_Request *) for at most
 * `timeoutSeconds` (0: forever), testing without sleeping: a non-blocking
 * collective advances only inside MPI calls. Returns 1 when it completed, 0
 * when the deadline passed or MPI failed (the request is then still
 * active). The host side of a data-parallel run (mp-runner) waits for its
 * own collectives with it too. */
int32_t mpMpiWait(void *request, double timeoutSeconds);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MP_RUNTIME_MPCOLLECTIVES_H */
