/* check_transport.c - the transport environment policy (docs/transport.md)
 * and the UCX query through the real mpictr-ucx-query helper. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/devices.h"
#include "common/error.h"
#include "testutil.h"
#include "plan/transport.h"
#include "host/ucx.h"
#include "common/util.h"

static struct hca hca(const char *name, const char *driver, bool active,
		      int numa)
{
	return (struct hca){
		.name = (char *)name,
		.driver = (char *)driver,
		.port = 1,
		.active = active,
		.link_layer = (char *)"InfiniBand",
		.numa_node = numa,
		.exposed = true,
	};
}

/* Two active mlx5 HCAs on NUMA 0 and 1, a third DOWN on NUMA 1. */
static struct hca two_numa[] = {
	{"mlx5_0", "mlx5", 1, true, "InfiniBand", 0, true},
	{"mlx5_1", "mlx5", 1, true, "InfiniBand", 1, true},
	{"mlx5_2", "mlx5", 1, false, "InfiniBand", 1, false},
};

static const char *const fallback_vars[][2] = {
	{"UCX_POSIX_USE_PROC_LINK", "n"},
	{"UCX_TLS", "^cma"},
	{"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
	{"FI_SHM_DISABLE_CMA", "1"},
	{"PSM2_KASSIST_MODE", "none"},
	{"I_MPI_SHM_CMA", "0"},
	{"MV2_SMP_USE_CMA", "0"},
};

static char **run_policy(struct hca *h, size_t n, struct transport_opts o,
			 char **env, char ***notices)
{
	struct host_devices d = {.hcas = h, .nhcas = n, .ptrace_scope = -1};

	transport_env(&d, &o, &env, notices);
	return env;
}

static const char *netdevs_for(int rank, int nlocal)
{
	static char buf[256];
	char **notices = NULL;
	char **env = run_policy(two_numa, 3,
				(struct transport_opts){.enabled = true,
							.shared_ns = true,
							.local_rank = rank,
							.nlocal = nlocal},
				NULL, &notices);
	const char *v = env_get(env, "UCX_NET_DEVICES");

	snprintf(buf, sizeof(buf), "%s", v ? v : "(unset)");
	ck_assert_ptr_null(notices);
	strv_free(env);
	return buf;
}

START_TEST(test_disabled)
{
	char **env = NULL, **notices = NULL;

	strv_push(&env, "PATH=/bin");
	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = false,
						 .shared_ns = false},
			 env, &notices);
	ck_assert_uint_eq(strv_len(env), 1);
	ck_assert_ptr_null(notices);
	strv_free(env);
}
END_TEST

START_TEST(test_shared_per_numa)
{
	char **env = NULL, **notices = NULL;

	/* 4 local ranks over HCAs on NUMA 0 and 1: two ranks each */
	ck_assert_str_eq(netdevs_for(0, 4), "mlx5_0:1");
	ck_assert_str_eq(netdevs_for(1, 4), "mlx5_0:1");
	ck_assert_str_eq(netdevs_for(2, 4), "mlx5_1:1");
	ck_assert_str_eq(netdevs_for(3, 4), "mlx5_1:1");
	ck_assert_str_eq(netdevs_for(0, 1), "mlx5_0:1");

	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = true,
						 .nlocal = 2},
			 NULL, &notices);
	ck_assert_str_eq(env_get(env, "FI_PROVIDER"), "verbs");
	/* shared namespaces: posix and CMA stay on */
	for (size_t i = 0; i < ARRAY_SIZE(fallback_vars); i++)
		ck_assert_ptr_null(env_get(env, fallback_vars[i][0]));
	ck_assert_uint_eq(strv_len(env), 2);
	ck_assert_ptr_null(notices);
	strv_free(env);

	/* a rank bound to a NUMA node gets that node's HCA; a node without
	 * one gets all of them */
	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = true,
						 .nlocal = 4,
						 .numa_known = true,
						 .numa_node = 1},
			 NULL, &notices);
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_1:1");
	strv_free(env);
	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = true,
						 .nlocal = 4,
						 .numa_known = true,
						 .numa_node = 3},
			 NULL, &notices);
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_0:1,mlx5_1:1");
	strv_free(env);
}
END_TEST

START_TEST(test_one_numa)
{
	struct hca h[] = {hca("mlx5_0", "mlx5", true, 0),
			  hca("mlx5_1", "mlx5", true, 0),
			  hca("mlx5_2", "mlx5", false, 0)};
	char **notices = NULL;
	char **env = run_policy(h, 3,
				(struct transport_opts){.enabled = true,
							.shared_ns = true,
							.local_rank = 3,
							.nlocal = 4},
				NULL, &notices);

	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_0:1,mlx5_1:1");
	strv_free(env);
	/* unexposed (--devices) HCAs are not named */
	h[1].exposed = false;
	env = run_policy(h, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = true},
			 NULL, &notices);
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_0:1");
	strv_free(env);
}
END_TEST

START_TEST(test_unshared_fallbacks)
{
	char **env = NULL, **notices = NULL;

	strv_push(&env, "HOME=/home/u");
	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = false,
						 .nlocal = 2},
			 env, &notices);
	for (size_t i = 0; i < ARRAY_SIZE(fallback_vars); i++) {
		const char *v = env_get(env, fallback_vars[i][0]);
		ck_assert_msg(v && strcmp(v, fallback_vars[i][1]) == 0,
			      "%s is '%s'", fallback_vars[i][0], v);
	}
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_0:1");
	ck_assert_str_eq(env_get(env, "HOME"), "/home/u");
	ck_assert_uint_eq(strv_len(notices), 1);
	ck_assert(strstr(notices[0], "do not share namespaces"));
	ck_assert(strstr(notices[0], "UCX_POSIX_USE_PROC_LINK=n"));
	ck_assert(!strchr(notices[0], '\n'));
	strv_free(notices);
	strv_free(env);
}
END_TEST

/* Every rank on this node: UCX_TLS also keeps tcp out (its lanes slowed
 * small on-node messages ~8x); the other fallbacks are the same. Across
 * nodes (single_node false, above) tcp may be the network: ^cma only. */
START_TEST(test_unshared_single_node)
{
	char **env = NULL, **notices = NULL;

	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = false,
						 .single_node = true,
						 .nlocal = 2},
			 env, &notices);
	ck_assert_str_eq(env_get(env, "UCX_TLS"), "^cma,tcp");
	for (size_t i = 0; i < ARRAY_SIZE(fallback_vars); i++) {
		const char *v = env_get(env, fallback_vars[i][0]);
		if (strcmp(fallback_vars[i][0], "UCX_TLS") == 0)
			continue;
		ck_assert_msg(v && strcmp(v, fallback_vars[i][1]) == 0,
			      "%s is '%s'", fallback_vars[i][0], v);
	}
	ck_assert_uint_eq(strv_len(notices), 1);
	ck_assert(strstr(notices[0], "UCX_TLS=^cma,tcp"));
	strv_free(notices);
	strv_free(env);
	/* shared namespaces: nothing of the fallback, single node or not */
	notices = NULL;
	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = true,
						 .single_node = true,
						 .nlocal = 2},
			 NULL, &notices);
	ck_assert_ptr_null(env_get(env, "UCX_TLS"));
	strv_free(notices);
	strv_free(env);
}
END_TEST

START_TEST(test_user_wins)
{
	char **env = NULL, **notices = NULL;

	strv_push(&env, "UCX_NET_DEVICES=mlx5_9:1");
	strv_push(&env, "UCX_TLS=rc,sm");
	strv_push(&env, "FI_PROVIDER=tcp");
	strv_push(&env, "I_MPI_SHM_CMA=1");
	env = run_policy(two_numa, 3,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = false},
			 env, &notices);
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_9:1");
	ck_assert_str_eq(env_get(env, "UCX_TLS"), "rc,sm");
	ck_assert_str_eq(env_get(env, "FI_PROVIDER"), "tcp");
	ck_assert_str_eq(env_get(env, "I_MPI_SHM_CMA"), "1");
	ck_assert_str_eq(env_get(env, "UCX_POSIX_USE_PROC_LINK"), "n");
	ck_assert_uint_eq(strv_len(env), 4 + 5);
	ck_assert_uint_eq(strv_len(notices), 1);
	ck_assert(strstr(notices[0], "kept as set: UCX_TLS I_MPI_SHM_CMA"));
	strv_free(notices);
	strv_free(env);
}
END_TEST

static const char *fi_for(struct hca *h, size_t n)
{
	static char buf[64];
	char **notices = NULL;
	char **env = run_policy(h, n,
				(struct transport_opts){.enabled = true,
							.shared_ns = true},
				NULL, &notices);
	const char *v = env_get(env, "FI_PROVIDER");

	snprintf(buf, sizeof(buf), "%s", v ? v : "(unset)");
	strv_free(env);
	return buf;
}

START_TEST(test_fi_provider)
{
	struct hca opa[] = {hca("hfi1_0", "hfi1", true, 0)};
	struct hca slingshot[] = {hca("cxi0", "cxi", true, 0),
				  hca("cxi1", "cxi", true, 1)};
	struct hca aws[] = {hca("efa_0", "efa", true, 0)};
	struct hca roce[] = {hca("mlx5_0", "mlx5", true, 0),
			     hca("bnxt_re0", "bnxt_re", true, 0)};
	struct hca mixed[] = {hca("mlx5_0", "mlx5", true, 0),
			      hca("hfi1_0", "hfi1", true, 0)};
	char **notices = NULL, **env;

	ck_assert_str_eq(fi_for(opa, 1), "psm2");
	ck_assert_str_eq(fi_for(slingshot, 2), "cxi");
	ck_assert_str_eq(fi_for(aws, 1), "efa");
	ck_assert_str_eq(fi_for(roce, 2), "verbs");
	ck_assert_str_eq(fi_for(mixed, 2), "(unset)");
	/* the other fabric inactive or not exposed: unambiguous again */
	mixed[1].active = false;
	ck_assert_str_eq(fi_for(mixed, 2), "verbs");
	mixed[1].active = true;
	mixed[0].exposed = false;
	ck_assert_str_eq(fi_for(mixed, 2), "psm2");
	ck_assert_str_eq(fi_for(NULL, 0), "(unset)");

	/* hfi1, cxi, efa are not UCX net devices */
	env = run_policy(opa, 1,
			 (struct transport_opts){.enabled = true,
						 .shared_ns = true},
			 NULL, &notices);
	ck_assert_ptr_null(env_get(env, "UCX_NET_DEVICES"));
	ck_assert_ptr_null(env_get(env, "PSM2_KASSIST_MODE"));
	strv_free(env);
}
END_TEST

START_TEST(test_ucx_names)
{
	char *lines[] = {
		"md=self tl=self dev=memory0 type=self",
		"md=tcp tl=tcp dev=eth0 type=net",
		"md=posix tl=posix dev=memory type=shm",
		"md=mlx5_1 tl=rc_mlx5 dev=mlx5_1:1 type=net",
		"md=mlx5_1 tl=dc_mlx5 dev=mlx5_1:1 type=net",
		"md=mlx5_0 tl=rc_mlx5 dev=mlx5_0:1 type=net",
		"md=mlx5_0 tl=ud_verbs dev=mlx5_0:1 type=net",
		NULL,
	};
	cleanup_free char *nd = ucx_net_devices(lines);
	char *shm_only[] = {lines[0], lines[1], lines[2], NULL};
	cleanup_free char *empty = ucx_net_devices(shm_only);
	cleanup_free char *nothing = ucx_net_devices(NULL);
	char **env, **notices = NULL;

	ck_assert_str_eq(nd, "mlx5_1:1,mlx5_0:1");
	ck_assert_str_eq(nothing, "");
	ck_assert_str_eq(empty, "");

	/* UCX's names win; the NUMA choice still comes from sysfs */
	env = run_policy(two_numa, 3,
			 (struct transport_opts){
				 .enabled = true,
				 .shared_ns = true,
				 .local_rank = 1,
				 .nlocal = 2,
				 .ucx_net_devices_from_ucx = nd},
			 NULL, &notices);
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_1:1");
	strv_free(env);
	/* a port UCX lists but sysfs knows DOWN or not exposed is dropped */
	env = run_policy(two_numa, 3,
			 (struct transport_opts){
				 .enabled = true,
				 .shared_ns = true,
				 .ucx_net_devices_from_ucx =
					 "mlx5_2:1,mlx5_0:1,mlx5_7:1"},
			 NULL, &notices);
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_0:1,mlx5_7:1");
	strv_free(env);
	/* UCX sees no RDMA device: UCX_NET_DEVICES is left alone */
	env = run_policy(two_numa, 3,
			 (struct transport_opts){
				 .enabled = true,
				 .shared_ns = true,
				 .ucx_net_devices_from_ucx = empty},
			 NULL, &notices);
	ck_assert_ptr_null(env_get(env, "UCX_NET_DEVICES"));
	strv_free(env);
}
END_TEST

/* Discovery on a fake tree feeding the policy, end to end. */
START_TEST(test_from_fake_tree)
{
	char dir[] = "/tmp/mpictr-transport.XXXXXX";
	cleanup_free char *cmd = NULL, *rm = NULL;
	struct host_devices d;
	mpictr_err *err = NULL;
	char **env = NULL, **notices = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	cmd = xasprintf("bash '%s/tests/fixtures/mkfakesys.sh' '%s' mlx5",
			test_root(), dir);
	rm = xasprintf("rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(devices_discover(dir, NULL, false, &d, &err), 0);
	transport_env(&d,
		      &(struct transport_opts){.enabled = true,
					       .shared_ns = true,
					       .local_rank = 3,
					       .nlocal = 4},
		      &env, &notices);
	ck_assert_str_eq(env_get(env, "UCX_NET_DEVICES"), "mlx5_1:1");
	ck_assert_str_eq(env_get(env, "FI_PROVIDER"), "verbs");
	strv_free(env);
	host_devices_free(&d);
	ck_assert_int_eq(system(rm), 0);
}
END_TEST

/* Parse `ucx_info -d` into "tl/dev" strings. */
static char **ucx_info_pairs(void)
{
	FILE *p = popen("ucx_info -d 2>/dev/null", "r");
	char line[1024], tl[256] = "";
	char **v = NULL;

	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		char *s;
		line[strcspn(line, "\n")] = '\0';
		if ((s = strstr(line, "Transport: ")))
			snprintf(tl, sizeof(tl), "%s", s + 11);
		else if ((s = strstr(line, "Device: ")))
			strv_push_own(&v, xasprintf("%s/%s", tl, s + 8));
	}
	ck_assert_int_eq(pclose(p), 0);
	return v;
}

START_TEST(test_ucx_query_helper)
{
	cleanup_free char *helper =
		xasprintf("%s/build/libexec/mpictr-ucx-query", test_root());
	cleanup_strv char **lines = NULL, **want = NULL, **got = NULL;
	mpictr_err *err = NULL;
	bool posix = false;

	ck_assert_msg(ucx_query(helper, &lines, &err) == 0, "%s",
		      err ? mpictr_err_message(err) : "");
	ck_assert_ptr_nonnull(lines);
	for (size_t i = 0; lines[i]; i++) {
		cleanup_free char *tl = NULL, *dev = NULL, *type = NULL;
		ucx_fields(lines[i], &tl, &dev, &type);
		ck_assert_msg(tl && dev && type, "bad line '%s'", lines[i]);
		strv_push_own(&got, xasprintf("%s/%s", tl, dev));
		if (strcmp(tl, "posix") == 0 && strcmp(type, "shm") == 0)
			posix = true;
	}
	ck_assert(posix);
	/* the same set as ucx_info -d */
	want = ucx_info_pairs();
	ck_assert_uint_eq(strv_len(got), strv_len(want));
	for (size_t i = 0; want[i]; i++) {
		bool found = false;
		for (size_t j = 0; got[j] && !found; j++)
			found = strcmp(got[j], want[i]) == 0;
		ck_assert_msg(found, "ucx_info -d has '%s', helper does not",
			      want[i]);
	}
}
END_TEST

START_TEST(test_ucx_query_errors)
{
	char **lines = NULL;
	mpictr_err *err = NULL;

	ck_assert_int_eq(ucx_query("/nonexistent/helper", &lines,
					     &err),
			 -1);
	ck_assert(strstr(mpictr_err_message(err), "'/nonexistent/helper'"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(ucx_query("/bin/false", &lines, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "exited with status 1"));
	ck_assert_ptr_null(lines);
	mpictr_err_free(err);
}
END_TEST

Suite *suite_transport(void);
Suite *suite_transport(void)
{
	Suite *s = suite_create("transport");
	TCase *tc = tcase_create("policy");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_disabled);
	tcase_add_test(tc, test_shared_per_numa);
	tcase_add_test(tc, test_one_numa);
	tcase_add_test(tc, test_unshared_fallbacks);
	tcase_add_test(tc, test_unshared_single_node);
	tcase_add_test(tc, test_user_wins);
	tcase_add_test(tc, test_fi_provider);
	tcase_add_test(tc, test_ucx_names);
	tcase_add_test(tc, test_from_fake_tree);
	tcase_add_test(tc, test_ucx_query_helper);
	tcase_add_test(tc, test_ucx_query_errors);
	suite_add_tcase(s, tc);
	return s;
}
