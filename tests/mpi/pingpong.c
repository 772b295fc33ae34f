/* pingpong.c - ping-pong between ranks 0 and 1 for sizes 1 B .. 4 MiB
 * (powers of two), with data checked on every size. Prints one line per
 * size: "size BYTES lat_us X bw_MBps Y". Usage: pingpong [ITERS] [MAXSIZE] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rank, size, iters = argc > 1 ? atoi(argv[1]) : 50;
	long maxsz = argc > 2 ? atol(argv[2]) : 4L << 20;
	unsigned char *buf;
	int bad = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		if (rank == 0)
			fprintf(stderr, "pingpong needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc((size_t)maxsz);
	for (long n = 1; n <= maxsz; n *= 2) {
		int it = n >= (1 << 20) ? (iters + 4) / 5 : iters;
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < it; i++) {
			if (rank == 0) {
				memset(buf, (i + (int)n) & 0xff, (size_t)n);
				MPI_Send(buf, (int)n, MPI_BYTE, 1, 0,
					 MPI_COMM_WORLD);
				MPI_Recv(buf, (int)n, MPI_BYTE, 1, 0,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				if (buf[n - 1] != (unsigned char)~((i + n) &
								   0xff))
					bad++;
			} else if (rank == 1) {
				MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				if (buf[0] != (unsigned char)((i + n) & 0xff))
					bad++;
				memset(buf, ~(i + (int)n) & 0xff, (size_t)n);
				MPI_Send(buf, (int)n, MPI_BYTE, 0, 0,
					 MPI_COMM_WORLD);
			}
		}
		if (rank == 0) {
			double dt = (MPI_Wtime() - t0) / it / 2;
			printf("size %ld lat_us %.2f bw_MBps %.1f\n", n,
			       dt * 1e6, n / dt / 1e6);
			fflush(stdout);
		}
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("pingpong %s\n", bad ? "DATA ERROR" : "ok");
	free(buf);
	MPI_Finalize();
	return bad ? 1 : 0;
}
