/* hello.c - MPI hello: rank, size, checked Allreduce, universe size, the
 * namespaces the rank runs in. Exits non-zero when the sum is wrong. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void ns_id(const char *which, char *buf, size_t n)
{
	char path[64];
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", which);
	r = readlink(path, buf, n - 1);
	buf[r > 0 ? r : 0] = '\0';
}

int main(int argc, char **argv)
{
	int rank, size, len, flag, sum = 0, *usize = NULL;
	char name[MPI_MAX_PROCESSOR_NAME], userns[64], mntns[64];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(name, &len);
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	ns_id("user", userns, sizeof(userns));
	ns_id("mnt", mntns, sizeof(mntns));
	printf("hello rank %d/%d on %s universe %d allreduce %d %s userns %s "
	       "mntns %s uid %d\n",
	       rank, size, name, flag && usize ? *usize : -1, sum,
	       sum == size * (size - 1) / 2 ? "ok" : "WRONG", userns, mntns,
	       (int)getuid());
	fflush(stdout);
	MPI_Finalize();
	return sum == size * (size - 1) / 2 ? 0 : 1;
}
