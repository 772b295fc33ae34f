/* abort.c - rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7) after MPI_Init; the
 * others wait in a barrier that can only end by the job being killed. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 1) {
		fprintf(stderr, "rank 1 aborting with 7\n");
		MPI_Abort(MPI_COMM_WORLD, 7);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	sleep(60);
	MPI_Finalize();
	return 0;
}
