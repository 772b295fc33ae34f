/* alltoall.c - MPI_Alltoall with checked contents for block sizes 1 B ..
 * 1 MiB per peer. Prints "alltoall BYTES usec X" per size and "alltoall ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size, iters = argc > 1 ? atoi(argv[1]) : 20, bad = 0;
	long maxsz = argc > 2 ? atol(argv[2]) : 1L << 20;
	unsigned char *sb, *rb;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	sb = malloc((size_t)maxsz * size);
	rb = malloc((size_t)maxsz * size);
	for (long n = 1; n <= maxsz; n *= 4) {
		double t0;
		for (int p = 0; p < size; p++)
			for (long i = 0; i < n; i++)
				sb[p * n + i] = (unsigned char)(rank * 31 + p + i);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int it = 0; it < iters; it++)
			MPI_Alltoall(sb, (int)n, MPI_BYTE, rb, (int)n,
				     MPI_BYTE, MPI_COMM_WORLD);
		t0 = (MPI_Wtime() - t0) / iters;
		for (int p = 0; p < size; p++)
			for (long i = 0; i < n; i++)
				if (rb[p * n + i] !=
				    (unsigned char)(p * 31 + rank + i))
					bad++;
		if (rank == 0)
			printf("alltoall %ld usec %.2f\n", n, t0 * 1e6);
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("alltoall %s\n", bad ? "DATA ERROR" : "ok");
	free(sb);
	free(rb);
	MPI_Finalize();
	return bad ? 1 : 0;
}
