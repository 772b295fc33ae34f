/* check_pmi.c - the PMI servers: job construction (maps, local peers), the
 * PMI-1 wire parser (valid lines and each malformation), a scripted PMI-1
 * conversation against the real server over the rank socketpairs, the rank
 * environment, the "nobody waits forever" policy and the private tmpdir. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmi/pmi.h"
#include "pmi/pmi1_wire.h"
#include "testutil.h"
#include "common/util.h"

/* ---- job ---- */

START_TEST(test_job_single_node)
{
	struct pmi_job job;
	mpictr_err *err = NULL;
	char host[256];
	char *s;

	ck_assert_int_eq(pmi_job_single_node(4, 1001, 1002, &job, &err), 0);
	ck_assert(str_has_prefix(job.nspace, "mpictr."));
	ck_assert_uint_eq(job.size, 4);
	ck_assert_uint_eq(job.nnodes, 1);
	ck_assert_uint_eq(job.nlocal, 4);
	ck_assert_uint_eq(job.uid, 1001);
	ck_assert_uint_eq(job.gid, 1002);
	gethostname(host, sizeof(host));
	s = pmi_job_node_list(&job);
	ck_assert_str_eq(s, host);
	free(s);
	s = pmi_job_proc_list(&job);
	ck_assert_str_eq(s, "0,1,2,3");
	free(s);
	s = pmi_job_local_peers(&job);
	ck_assert_str_eq(s, "0,1,2,3");
	free(s);
	s = pmi_job_process_mapping(&job);
	ck_assert_str_eq(s, "(vector,(0,1,4))");
	free(s);
	ck_assert_int_eq(pmi_job_local_index(&job, 3), 3);
	ck_assert_int_eq(pmi_job_local_index(&job, 4), -1);
	pmi_job_free(&job);
	ck_assert_ptr_null(job.nspace);
}
END_TEST

START_TEST(test_job_bad_size)
{
	struct pmi_job job;
	mpictr_err *err = NULL;

	ck_assert_int_eq(pmi_job_single_node(0, 0, 0, &job, &err), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "rank count 0 out of range 1..1048576");
	mpictr_err_free(err);
	ck_assert_ptr_null(job.nspace);
}
END_TEST

/* A hand-made multi-node job: rank_node gives the placement, node 1 is
 * "this" node. */
static void fake_job(struct pmi_job *job, const uint32_t *rank_node,
		     uint32_t size, uint32_t nnodes)
{
	memset(job, 0, sizeof(*job));
	job->nspace = xstrdup("ns");
	job->size = size;
	job->nnodes = nnodes;
	job->nodeid = 1;
	job->hostnames = xcalloc(nnodes, sizeof(char *));
	for (uint32_t i = 0; i < nnodes; i++)
		job->hostnames[i] = xasprintf("n%u", i);
	job->rank_node = xcalloc(size, sizeof(uint32_t));
	memcpy(job->rank_node, rank_node, size * sizeof(uint32_t));
	job->local_ranks = xcalloc(size, sizeof(uint32_t));
	for (uint32_t r = 0; r < size; r++)
		if (rank_node[r] == 1)
			job->local_ranks[job->nlocal++] = r;
}

START_TEST(test_job_maps_multi_node)
{
	static const uint32_t block[] = {0, 0, 1, 1, 2};
	static const uint32_t even[] = {0, 0, 1, 1};
	static const uint32_t cyclic[] = {0, 1, 0, 1};
	struct pmi_job job;
	char *s;

	fake_job(&job, block, 5, 3);
	s = pmi_job_process_mapping(&job);
	ck_assert_str_eq(s, "(vector,(0,2,2),(2,1,1))");
	free(s);
	s = pmi_job_node_list(&job);
	ck_assert_str_eq(s, "n0,n1,n2");
	free(s);
	s = pmi_job_proc_list(&job);
	ck_assert_str_eq(s, "0,1;2,3;4");
	free(s);
	s = pmi_job_local_peers(&job);
	ck_assert_str_eq(s, "2,3");
	free(s);
	pmi_job_free(&job);

	fake_job(&job, even, 4, 2);
	s = pmi_job_process_mapping(&job);
	ck_assert_str_eq(s, "(vector,(0,2,2))");
	free(s);
	pmi_job_free(&job);

	/* Round-robin placement has no vector form: MPICH falls back. */
	fake_job(&job, cyclic, 4, 2);
	ck_assert_ptr_null(pmi_job_process_mapping(&job));
	s = pmi_job_proc_list(&job);
	ck_assert_str_eq(s, "0,2;1,3");
	free(s);
	s = pmi_job_local_peers(&job);
	ck_assert_str_eq(s, "1,3");
	free(s);
	pmi_job_free(&job);
}
END_TEST

/* Node daemon mode: every node computes the same global job. */
START_TEST(test_job_node_blocks)
{
	char *hosts[] = {"node1", "node2", "node3", NULL};
	struct pmi_job a, b;
	char *s;

	ck_assert_int_eq(pmi_job_node_blocks("mpictr.7.0", 3, 1, 2, hosts,
					     1001, 1001, &a, NULL),
			 0);
	ck_assert_uint_eq(a.size, 6);
	ck_assert_uint_eq(a.nnodes, 3);
	ck_assert_uint_eq(a.nodeid, 1);
	ck_assert_uint_eq(a.nlocal, 2);
	ck_assert_uint_eq(a.local_ranks[0], 2);
	ck_assert_uint_eq(a.local_ranks[1], 3);
	s = pmi_job_local_peers(&a);
	ck_assert_str_eq(s, "2,3");
	free(s);
	s = pmi_job_proc_list(&a);
	ck_assert_str_eq(s, "0,1;2,3;4,5");
	free(s);
	s = pmi_job_node_list(&a);
	ck_assert_str_eq(s, "node1,node2,node3");
	free(s);
	s = pmi_job_process_mapping(&a);
	ck_assert_str_eq(s, "(vector,(0,3,2))");
	free(s);
	/* Another node: same maps, its own local ranks. */
	ck_assert_int_eq(pmi_job_node_blocks("mpictr.7.0", 3, 2, 2, hosts,
					     1001, 1001, &b, NULL),
			 0);
	ck_assert_str_eq(b.nspace, a.nspace);
	ck_assert_uint_eq(b.local_ranks[0], 4);
	ck_assert_mem_eq(a.rank_node, b.rank_node, 6 * sizeof(uint32_t));
	pmi_job_free(&a);
	pmi_job_free(&b);

	ck_assert_int_eq(pmi_job_node_blocks("x", 3, 3, 2, hosts, 0, 0, &a,
					     NULL),
			 -1);
	ck_assert_int_eq(pmi_job_node_blocks("x", 4, 0, 2, hosts, 0, 0, &a,
					     NULL),
			 -1); /* no host name for node 3 */
	ck_assert_int_eq(pmi_job_node_blocks("x", 2, 0, 0, hosts, 0, 0, &a,
					     NULL),
			 -1);
	ck_assert_int_eq(pmi_job_node_blocks("x", 1 << 11, 0, 1 << 10, hosts,
					     0, 0, &a, NULL),
			 -1);
	ck_assert_ptr_null(a.nspace);
}
END_TEST

/* ---- wire parser ---- */

static int parse(const char *line, struct pmi1_msg *m)
{
	return pmi1_parse(line, strlen(line), m);
}

START_TEST(test_wire_valid)
{
	struct pmi1_msg m;

	ck_assert_int_eq(parse("cmd=init pmi_version=1 pmi_subversion=1\n",
			       &m),
			 PMI1_OK);
	ck_assert_str_eq(m.cmd, "init");
	ck_assert(!m.multi);
	ck_assert_uint_eq(m.npairs, 2);
	ck_assert_str_eq(pmi1_get(&m, "pmi_version"), "1");
	ck_assert_str_eq(pmi1_get(&m, "pmi_subversion"), "1");
	ck_assert_ptr_null(pmi1_get(&m, "cmd"));

	/* Values may hold '=' and punctuation; blanks may repeat. */
	ck_assert_int_eq(parse("cmd=put  kvsname=k key=P0-bc "
			       "value=port#1$host=a:b\n",
			       &m),
			 PMI1_OK);
	ck_assert_str_eq(m.cmd, "put");
	ck_assert_str_eq(pmi1_get(&m, "value"), "port#1$host=a:b");
	ck_assert_str_eq(pmi1_get(&m, "key"), "P0-bc");

	ck_assert_int_eq(parse("cmd=barrier_in", &m), PMI1_OK);
	ck_assert_str_eq(m.cmd, "barrier_in");
	ck_assert_uint_eq(m.npairs, 0);

	ck_assert_int_eq(parse("cmd=put key=a value=\n", &m), PMI1_OK);
	ck_assert_str_eq(pmi1_get(&m, "value"), "");

	ck_assert_int_eq(parse("mcmd=spawn nprocs=2\n", &m), PMI1_OK);
	ck_assert(m.multi);
	ck_assert_str_eq(m.cmd, "spawn");
}
END_TEST

START_TEST(test_wire_limits)
{
	struct pmi1_msg m;
	char line[PMI1_MAXLINE + 2];
	struct strbuf sb = STRBUF_INIT;

	/* 1023 bytes + newline is the longest MPICH sends. */
	memset(line, 'x', sizeof(line));
	memcpy(line, "cmd=get key=", 12);
	line[PMI1_MAXLINE - 1] = '\n';
	ck_assert_int_eq(pmi1_parse(line, PMI1_MAXLINE, &m), PMI1_OK);
	ck_assert_uint_eq(strlen(pmi1_get(&m, "key")), PMI1_MAXLINE - 13);
	line[PMI1_MAXLINE] = '\n';
	ck_assert_int_eq(pmi1_parse(line, PMI1_MAXLINE + 1, &m),
			 PMI1_ERR_TOO_LONG);

	sb_puts(&sb, "cmd=x");
	for (int i = 0; i < PMI1_MAXPAIRS; i++)
		sb_printf(&sb, " k%d=v", i);
	ck_assert_int_eq(parse(sb.buf, &m), PMI1_OK);
	ck_assert_uint_eq(m.npairs, PMI1_MAXPAIRS);
	sb_puts(&sb, " one=more");
	ck_assert_int_eq(parse(sb.buf, &m), PMI1_ERR_TOO_MANY);
	sb_free(&sb);
}
END_TEST

START_TEST(test_wire_malformed)
{
	static const struct {
		const char *line;
		size_t len; /* 0: strlen */
		int want;
	} cases[] = {
		{"", 0, PMI1_ERR_EMPTY},
		{"\n", 0, PMI1_ERR_EMPTY},
		{"    \n", 0, PMI1_ERR_EMPTY},
		{"cmd=init\0x=1\n", 13, PMI1_ERR_BAD_CHAR},
		{"cmd=init\tx=1\n", 0, PMI1_ERR_BAD_CHAR},
		{"cmd=init\r\n", 0, PMI1_ERR_BAD_CHAR},
		{"cmd=init\n\n", 0, PMI1_ERR_BAD_CHAR},
		{"cmd=init \x7f=1", 0, PMI1_ERR_BAD_CHAR},
		{"cmd=init version\n", 0, PMI1_ERR_NO_EQUALS},
		{"cmd\n", 0, PMI1_ERR_NO_EQUALS},
		{"cmd=init =1\n", 0, PMI1_ERR_BAD_KEY},
		{"key=v cmd=init\n", 0, PMI1_ERR_NO_CMD},
		{"command=init\n", 0, PMI1_ERR_NO_CMD},
		{"cmd= key=v\n", 0, PMI1_ERR_EMPTY_CMD},
		{"cmd=get key=a key=b\n", 0, PMI1_ERR_DUP_KEY},
		{"cmd=get cmd=put\n", 0, PMI1_ERR_DUP_KEY},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pmi1_msg m;
		size_t len = cases[i].len ? cases[i].len
					  : strlen(cases[i].line);
		int rc = pmi1_parse(cases[i].line, len, &m);

		ck_assert_msg(rc == cases[i].want, "case %zu: got %d (%s)", i,
			      rc, pmi1_strerror(rc));
		ck_assert_str_ne(pmi1_strerror(rc), "unknown error");
	}
	ck_assert(pmi1_value_ok("(vector,(0,1,4))", 64));
	ck_assert(!pmi1_value_ok("a b", 64));
	ck_assert(!pmi1_value_ok("abcdef", 3));
}
END_TEST

/* ---- the server ---- */

static int abort_pipe[2];

static void record_abort(int code, const char *msg, void *data)
{
	char rec[256];

	snprintf(rec, sizeof(rec), "%d %s\n", code, msg);
	ck_assert_int_ge(write(abort_pipe[1], rec, strlen(rec)), 1);
}

/* The next abort record, or "" when none comes within ms. */
static void next_abort(char *buf, size_t n, int ms)
{
	struct pollfd p = {abort_pipe[0], POLLIN, 0};
	ssize_t r;

	buf[0] = '\0';
	if (poll(&p, 1, ms) != 1)
		return;
	r = read(abort_pipe[0], buf, n - 1);
	buf[r > 0 ? r : 0] = '\0';
}

/* Read one reply line (without '\n'); "" on timeout, "EOF" when closed. */
static void read_line(int fd, char *buf, size_t n, int ms)
{
	size_t len = 0;

	buf[0] = '\0';
	while (len + 1 < n) {
		struct pollfd p = {fd, POLLIN, 0};
		char c;
		ssize_t r;

		if (poll(&p, 1, ms) != 1)
			break;
		r = read(fd, &c, 1);
		if (r <= 0) {
			snprintf(buf, n, "EOF");
			return;
		}
		if (c == '\n')
			break;
		buf[len++] = c;
		buf[len] = '\0';
	}
}

static void say(int fd, const char *line)
{
	ck_assert_int_eq(write_full(fd, line, strlen(line)), 0);
}

struct fixture {
	char base[64];
	struct pmi_job job;
	struct pmi_server *srv;
	int fd[4];
	char **env[4];
};

static void fixture_start(struct fixture *f, uint32_t n)
{
	mpictr_err *err = NULL;

	ck_assert_int_eq(pipe2(abort_pipe, O_CLOEXEC), 0);
	snprintf(f->base, sizeof(f->base), "/tmp/check-pmi.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->base));
	ck_assert_int_eq(pmi_job_single_node(n, geteuid(), getegid(), &f->job,
					     &err),
			 0);
	if (pmi_server_start(&f->job, f->base, record_abort, NULL, &f->srv,
			     &err) < 0)
		ck_abort_msg("start: %s", mpictr_err_message(err));
	for (uint32_t r = 0; r < n; r++) {
		f->env[r] = NULL;
		env_set(&f->env[r], "PMIX_SERVER_URI4", "stale");
		env_set(&f->env[r], "PMIX_MCA_gds", "hash");
		env_set(&f->env[r], "PMI_PORT", "host:1");
		ck_assert_int_eq(pmi_server_rank_env(f->srv, r, &f->env[r],
						     &f->fd[r], &err),
				 0);
	}
}

static void fixture_stop(struct fixture *f, uint32_t n)
{
	pmi_server_stop(f->srv);
	/* Nothing left behind in the base directory. */
	ck_assert_int_eq(dir_entries(f->base), 0);
	ck_assert_int_eq(rmdir(f->base), 0);
	for (uint32_t r = 0; r < n; r++)
		strv_free(f->env[r]);
	pmi_job_free(&f->job);
}

START_TEST(test_server_conversation)
{
	struct fixture f;
	char line[1100], want[256], ab[256];

	fixture_start(&f, 2);
	say(f.fd[0], "cmd=init pmi_version=1 pmi_subversion=1\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=response_to_init rc=0 pmi_version=1 "
			       "pmi_subversion=1");
	say(f.fd[0], "cmd=get_maxes\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=maxes rc=0 kvsname_max=256 "
			       "keylen_max=256 vallen_max=1024");
	say(f.fd[0], "cmd=get_appnum\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=appnum rc=0 appnum=0");
	say(f.fd[0], "cmd=get_my_kvsname\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	snprintf(want, sizeof(want), "cmd=my_kvsname rc=0 kvsname=%s",
		 f.job.nspace);
	ck_assert_str_eq(line, want);
	say(f.fd[0], "cmd=get_universe_size\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=universe_size rc=0 size=2");

	/* put, then a barrier that must wait for rank 1 */
	snprintf(want, sizeof(want),
		 "cmd=put kvsname=%s key=P0-businesscard value=tcp#a=b$1\n",
		 f.job.nspace);
	say(f.fd[0], want);
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=put_result rc=0");
	say(f.fd[0], "cmd=put kvsname=other key=k value=v\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=put_result rc=-1 msg=unknown_kvsname");
	say(f.fd[0], "cmd=barrier_in\n");
	read_line(f.fd[0], line, sizeof(line), 200);
	ck_assert_str_eq(line, ""); /* still waiting */

	/* Two commands in one write are both answered. */
	say(f.fd[1], "cmd=init pmi_version=1 pmi_subversion=1\n"
		     "cmd=barrier_in\n");
	read_line(f.fd[1], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=response_to_init rc=0 pmi_version=1 "
			       "pmi_subversion=1");
	read_line(f.fd[1], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=barrier_out rc=0");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=barrier_out rc=0");

	snprintf(want, sizeof(want),
		 "cmd=get kvsname=%s key=P0-businesscard\n", f.job.nspace);
	say(f.fd[1], want);
	read_line(f.fd[1], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=get_result rc=0 value=tcp#a=b$1");
	snprintf(want, sizeof(want), "cmd=get kvsname=%s key=missing\n",
		 f.job.nspace);
	say(f.fd[1], want);
	read_line(f.fd[1], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=get_result rc=-1 msg=key_not_found");
	snprintf(want, sizeof(want),
		 "cmd=get kvsname=%s key=PMI_process_mapping\n",
		 f.job.nspace);
	say(f.fd[1], want);
	read_line(f.fd[1], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=get_result rc=0 value=(vector,(0,1,2))");

	for (int r = 0; r < 2; r++) {
		say(f.fd[r], "cmd=finalize\n");
		read_line(f.fd[r], line, sizeof(line), 2000);
		ck_assert_str_eq(line, "cmd=finalize_ack rc=0");
		close(f.fd[r]);
		pmi_server_rank_exited(f.srv, (uint32_t)r);
	}
	/* A clean job ends without an abort. */
	next_abort(ab, sizeof(ab), 200);
	ck_assert_str_eq(ab, "");
	fixture_stop(&f, 2);
}
END_TEST

START_TEST(test_server_rank_env)
{
	struct fixture f;
	char num[16];
	struct stat st;

	fixture_start(&f, 2);
	ck_assert_str_eq(env_get(f.env[1], "PMIX_NAMESPACE"), f.job.nspace);
	ck_assert_str_eq(env_get(f.env[1], "PMIX_RANK"), "1");
	ck_assert_str_ne(env_get(f.env[1], "PMIX_SERVER_URI4"), "stale");
	ck_assert(str_has_prefix(env_get(f.env[1], "PMIX_SERVER_URI4"),
				 "pmix-server."));
	ck_assert_str_eq(env_get(f.env[1], "PMIX_MCA_gds"), "hash");
	ck_assert_ptr_null(env_get(f.env[1], "PMI_PORT"));
	snprintf(num, sizeof(num), "%d", f.fd[1]);
	ck_assert_str_eq(env_get(f.env[1], "PMI_FD"), num);
	ck_assert_str_eq(env_get(f.env[1], "PMI_RANK"), "1");
	ck_assert_str_eq(env_get(f.env[1], "PMI_SIZE"), "2");
	ck_assert_str_eq(env_get(f.env[1], "OMPI_MCA_schizo"), "ompi");
	/* The child end is close-on-exec until the child clears it. */
	ck_assert_int_eq(fcntl(f.fd[1], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

	/* The private tmpdir: under the base, 0700, ours. */
	ck_assert(str_has_prefix(pmi_server_tmpdir(f.srv), f.base));
	ck_assert_int_eq(lstat(pmi_server_tmpdir(f.srv), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_str_eq(env_get(f.env[1], "PMIX_SERVER_TMPDIR"),
			 pmi_server_tmpdir(f.srv));

	/* A user's own schizo choice is kept. */
	{
		char **env = NULL;
		int fd;
		mpictr_err *err = NULL;

		env_set(&env, "OMPI_MCA_schizo", "slurm");
		pmi_server_rank_forked(f.srv, 0);
		/* Rank 0 was started: asking again is an error. */
		ck_assert_int_eq(pmi_server_rank_env(f.srv, 0, &env, &fd,
						     &err),
				 -1);
		ck_assert_str_eq(mpictr_err_message(err),
				 "pmi: rank 0 was already started");
		mpictr_err_free(err);
		err = NULL;
		ck_assert_int_eq(pmi_server_rank_env(f.srv, 7, &env, &fd,
						     &err),
				 -1);
		mpictr_err_free(err);
		strv_free(env);
	}
	fixture_stop(&f, 2);
}
END_TEST

START_TEST(test_server_abort)
{
	struct fixture f;
	char line[256], ab[256];

	fixture_start(&f, 2);
	say(f.fd[1], "cmd=init pmi_version=1 pmi_subversion=1\n");
	read_line(f.fd[1], line, sizeof(line), 2000);
	say(f.fd[1], "cmd=abort exitcode=7\n");
	next_abort(ab, sizeof(ab), 2000);
	ck_assert_str_eq(ab, "7 rank 1 called PMI abort\n");
	fixture_stop(&f, 2);
}
END_TEST

/* MPICH's PMI_Spawn_multiple: one "mcmd=spawn ... endcmd" segment per
 * app, one answer after the last: a refusal, and the rank stays served. */
START_TEST(test_server_spawn_refused)
{
	static const char segment[] =
	    "mcmd=spawn\nnprocs=1\nexecname=/bin/x\ntotspawns=2\n"
	    "spawnssofar=%d\nargcnt=1\narg1=a b=c\npreput_num=0\n"
	    "info_num=0\nendcmd\n";
	struct fixture f;
	char line[256], seg[256];

	fixture_start(&f, 1);
	say(f.fd[0], "cmd=init pmi_version=1 pmi_subversion=1\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	snprintf(seg, sizeof(seg), segment, 1);
	say(f.fd[0], seg);
	snprintf(seg, sizeof(seg), segment, 2);
	say(f.fd[0], seg);
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line,
			 "cmd=spawn_result rc=-1 msg=spawn_not_supported");
	say(f.fd[0], "cmd=get_universe_size\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=universe_size rc=0 size=1");
	say(f.fd[0], "cmd=finalize\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	fixture_stop(&f, 1);
}
END_TEST

START_TEST(test_server_malformed_drops_rank)
{
	struct fixture f;
	char line[2048], ab[256];

	fixture_start(&f, 2);
	say(f.fd[0], "cmd=init pmi_version=1 pmi_subversion=1\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	say(f.fd[0], "cmd=get key\n");
	read_line(f.fd[0], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "EOF");
	/* It had initialized and never finalized: the job must end. */
	next_abort(ab, sizeof(ab), 2000);
	ck_assert_str_eq(ab, "1 rank 0 closed its PMI connection without "
			     "finalizing\n");

	/* An over-long line from a rank that never initialized: dropped,
	 * nothing else happens, and the server still serves others. */
	memset(line, 'a', sizeof(line));
	ck_assert_int_eq(write_full(f.fd[1], line, sizeof(line)), 0);
	read_line(f.fd[1], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "EOF");
	fixture_stop(&f, 2);
}
END_TEST

START_TEST(test_server_exit_policy)
{
	struct fixture f;
	char line[256], ab[256];

	/* Rank 0 exits without ever connecting; once rank 1 connects, it
	 * could only wait forever for rank 0: the job ends. */
	fixture_start(&f, 2);
	pmi_server_rank_exited(f.srv, 0);
	next_abort(ab, sizeof(ab), 100);
	ck_assert_str_eq(ab, "");
	say(f.fd[1], "cmd=init pmi_version=1 pmi_subversion=1\n");
	read_line(f.fd[1], line, sizeof(line), 2000);
	next_abort(ab, sizeof(ab), 2000);
	ck_assert_str_eq(ab, "1 rank 0 exited without initializing PMI "
			     "while rank 1 did\n");
	fixture_stop(&f, 2);
}
END_TEST

START_TEST(test_server_exit_in_barrier)
{
	struct fixture f;
	char line[256], ab[256];

	/* Rank 1 finalized, then rank 0 enters a barrier that needs it. */
	fixture_start(&f, 2);
	for (int r = 0; r < 2; r++) {
		say(f.fd[r], "cmd=init pmi_version=1 pmi_subversion=1\n");
		read_line(f.fd[r], line, sizeof(line), 2000);
	}
	say(f.fd[1], "cmd=finalize\n");
	read_line(f.fd[1], line, sizeof(line), 2000);
	ck_assert_str_eq(line, "cmd=finalize_ack rc=0");
	say(f.fd[0], "cmd=barrier_in\n");
	read_line(f.fd[0], line, sizeof(line), 200);
	ck_assert_str_eq(line, "");
	close(f.fd[1]);
	pmi_server_rank_exited(f.srv, 1);
	next_abort(ab, sizeof(ab), 2000);
	ck_assert_str_eq(ab, "1 rank 1 exited while others wait in a PMI "
			     "barrier\n");
	fixture_stop(&f, 2);
}
END_TEST

START_TEST(test_server_bad_tmpdir)
{
	struct pmi_job job;
	struct pmi_server *srv = NULL;
	mpictr_err *err = NULL;

	ck_assert_int_eq(pmi_job_single_node(1, geteuid(), getegid(), &job,
					     &err),
			 0);
	ck_assert_int_eq(pmi_server_start(&job, "/nonexistent/dir",
					  record_abort, NULL, &srv, &err),
			 -1);
	ck_assert_ptr_null(srv);
	ck_assert(str_has_prefix(mpictr_err_message(err),
				 "create private directory in "
				 "'/nonexistent/dir': "));
	mpictr_err_free(err);
	pmi_job_free(&job);
}
END_TEST

Suite *suite_pmi(void);
Suite *suite_pmi(void)
{
	Suite *s = suite_create("pmi");
	TCase *tc = tcase_create("job");

	tcase_add_test(tc, test_job_single_node);
	tcase_add_test(tc, test_job_bad_size);
	tcase_add_test(tc, test_job_maps_multi_node);
	tcase_add_test(tc, test_job_node_blocks);
	suite_add_tcase(s, tc);

	tc = tcase_create("wire");
	tcase_add_test(tc, test_wire_valid);
	tcase_add_test(tc, test_wire_limits);
	tcase_add_test(tc, test_wire_malformed);
	suite_add_tcase(s, tc);

	tc = tcase_create("server");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_server_conversation);
	tcase_add_test(tc, test_server_rank_env);
	tcase_add_test(tc, test_server_abort);
	tcase_add_test(tc, test_server_spawn_refused);
	tcase_add_test(tc, test_server_malformed_drops_rank);
	tcase_add_test(tc, test_server_exit_policy);
	tcase_add_test(tc, test_server_exit_in_barrier);
	tcase_add_test(tc, test_server_bad_tmpdir);
	suite_add_tcase(s, tc);
	return s;
}
