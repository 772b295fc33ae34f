/* spawn.c - dynamic processes (MPI_Comm_spawn and friends), one program in
 * several roles chosen by argv[1]. Every line it prints starts with the
 * role; the tests grep them.
 *
 *   spawn parent N     spawn N children ("child"), merge the
 *                      intercommunicator, check an allreduce over it
 *   spawn multiple     MPI_Comm_spawn_multiple: 1 "child" + 2 "child"
 *   spawn abort        spawn 1 "child-abort": it calls MPI_Abort(9)
 *   spawn kill         spawn 1 "child-kill": it SIGKILLs itself
 *   spawn nofin        spawn 1 "child-nofin": it exits 0 without
 *                      MPI_Finalize
 *   spawn universe N   print MPI_UNIVERSE_SIZE, try to spawn N children
 *                      (none for 0) with MPI_ERRORS_RETURN and say what
 *                      happened. Open MPI 4.1.4 hangs after a failed
 *                      spawn from more than one rank, under mpirun too:
 *                      fail spawns from one rank only
 *   spawn ports        spawn 2 "server" (open a port, publish it, accept
 *                      twice on it), then twice 2 "client" (look the name
 *                      up, connect); each pair of groups allreduces over
 *                      its intercommunicator
 *
 * Every process prints its user namespace (/proc/self/ns/user).
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SERVICE "mpictr-spawn-test"

static char userns[64], self[4096];

static void read_userns(void)
{
	ssize_t r = readlink("/proc/self/ns/user", userns, sizeof(userns) - 1);

	userns[r > 0 ? r : 0] = '\0';
	r = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[r > 0 ? r : 0] = '\0';
}

static int universe(void)
{
	int flag = 0, *usize = NULL;

	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
	return flag && usize ? *usize : -1;
}

/* Merge inter (parents low) and check sum(1) == size. */
static int merged_allreduce(const char *role, MPI_Comm inter, int high)
{
	MPI_Comm merged;
	int rank, size, one = 1, sum = 0;

	MPI_Intercomm_merge(inter, high, &merged);
	MPI_Comm_rank(merged, &rank);
	MPI_Comm_size(merged, &size);
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
	printf("%s merged %d/%d allreduce %d %s userns %s\n", role, rank, size,
	       sum, sum == size ? "ok" : "WRONG", userns);
	fflush(stdout);
	MPI_Comm_free(&merged);
	return sum == size ? 0 : 1;
}

static int run_child(const char *role, MPI_Comm parent)
{
	int rc;

	if (parent == MPI_COMM_NULL) {
		printf("%s has no parent\n", role);
		return 1;
	}
	if (strcmp(role, "child-abort") == 0) {
		fprintf(stderr, "child aborting with 9\n");
		MPI_Abort(MPI_COMM_WORLD, 9);
	}
	if (strcmp(role, "child-nofin") == 0) {
		printf("child-nofin leaving without MPI_Finalize\n");
		fflush(stdout);
		_exit(0);
	}
	if (strcmp(role, "child-kill") == 0) {
		printf("child-kill killing itself\n");
		fflush(stdout);
		raise(SIGKILL);
	}
	rc = merged_allreduce("child", parent, 1);
	MPI_Comm_disconnect(&parent);
	return rc;
}

static int spawn_n(const char *childrole, int n, MPI_Comm *inter)
{
	char *args[] = {(char *)childrole, NULL};
	int errs[64];

	return MPI_Comm_spawn(self, args, n, MPI_INFO_NULL, 0,
			      MPI_COMM_WORLD, inter, errs);
}

static int run_multiple(void)
{
	char *cmds[2] = {self, self};
	char *a0[] = {"child", NULL}, *a1[] = {"child", NULL};
	char **args[2] = {a0, a1};
	int n[2] = {1, 2}, errs[3], rc;
	MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
	MPI_Comm inter;

	MPI_Comm_spawn_multiple(2, cmds, args, n, infos, 0, MPI_COMM_WORLD,
				&inter, errs);
	rc = merged_allreduce("parent", inter, 0);
	MPI_Comm_disconnect(&inter);
	return rc;
}

static int run_universe(int n)
{
	MPI_Comm inter;
	int rc, rank;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (rank == 0)
		printf("universe size %d\n", universe());
	fflush(stdout);
	if (n == 0)
		return 0;
	rc = spawn_n("child", n, &inter);
	if (rc != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int len, cls;

		MPI_Error_class(rc, &cls);
		MPI_Error_string(cls, msg, &len);
		if (rank == 0)
			printf("universe spawn of %d failed: %s\n", n, msg);
		return 0;
	}
	rc = merged_allreduce("parent", inter, 0);
	MPI_Comm_disconnect(&inter);
	return rc;
}

/* A server group: open a port, publish it, accept; a client group: look
 * it up and connect. The parent of both tells the clients to start only
 * once the server has published. */
/* Intercommunicator allreduce with the parent: both sides learn the other
 * is done. */
static int tell_parent(MPI_Comm parent)
{
	int one = 1, sum = 0;

	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, parent);
	return sum;
}

/* server: open a port, publish it, tell the parent, accept; client: look
 * the name up, connect. Then both allreduce over the merged
 * intercommunicator and tell the parent. */
static int run_peer(MPI_Comm parent, int server)
{
	char port[MPI_MAX_PORT_NAME] = "";
	const char *role = server ? "server" : "client";
	MPI_Comm inter;
	int rank, rc = 0;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0 && server) {
		MPI_Open_port(MPI_INFO_NULL, port);
		MPI_Publish_name(SERVICE, MPI_INFO_NULL, port);
	} else if (rank == 0) {
		MPI_Lookup_name(SERVICE, MPI_INFO_NULL, port);
		printf("client found the port\n");
	}
	if (server)
		MPI_Barrier(parent); /* published: the parent starts clients */
	/* the server accepts two client groups, one after the other, on
	 * the same port */
	for (int i = 0; i < (server ? 2 : 1); i++) {
		if (server)
			MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
					&inter);
		else
			MPI_Comm_connect(port, MPI_INFO_NULL, 0,
					 MPI_COMM_WORLD, &inter);
		rc |= merged_allreduce(role, inter, !server);
		MPI_Comm_free(&inter);
	}
	if (rank == 0 && server) {
		MPI_Unpublish_name(SERVICE, MPI_INFO_NULL, port);
		MPI_Close_port(port);
	}
	tell_parent(parent);
	MPI_Comm_disconnect(&parent);
	return rc;
}

static int run_ports(void)
{
	MPI_Comm servers, clients;
	int s, c = 0;

	spawn_n("server", 2, &servers);
	MPI_Barrier(servers);
	for (int i = 0; i < 2; i++) {
		spawn_n("client", 2, &clients);
		c += tell_parent(clients);
		MPI_Comm_disconnect(&clients);
	}
	s = tell_parent(servers);
	printf("parent ports done: %d servers %d clients\n", s, c);
	MPI_Comm_disconnect(&servers);
	return 0;
}

int main(int argc, char **argv)
{
	const char *role = argc > 1 ? argv[1] : "parent";
	MPI_Comm parent, inter;
	int rc = 0, rank;

	MPI_Init(&argc, &argv);
	read_userns();
	MPI_Comm_get_parent(&parent);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (strncmp(role, "child", 5) == 0) {
		rc = run_child(role, parent);
	} else if (strcmp(role, "server") == 0 ||
		   strcmp(role, "client") == 0) {
		rc = run_peer(parent, strcmp(role, "server") == 0);
	} else if (strcmp(role, "multiple") == 0) {
		rc = run_multiple();
	} else if (strcmp(role, "universe") == 0) {
		rc = run_universe(argc > 2 ? atoi(argv[2]) : 1);
	} else if (strcmp(role, "ports") == 0) {
		rc = run_ports();
	} else {
		const char *child = strcmp(role, "abort") == 0	? "child-abort"
				    : strcmp(role, "kill") == 0	? "child-kill"
				    : strcmp(role, "nofin") == 0 ? "child-nofin"
								 : "child";
		int n = argc > 2 ? atoi(argv[2]) : 1;

		spawn_n(child, n, &inter);
		rc = merged_allreduce("parent", inter, 0);
		MPI_Comm_disconnect(&inter);
	}
	MPI_Finalize();
	return rc;
}
