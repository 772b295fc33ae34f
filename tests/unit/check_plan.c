/* check_plan.c - plan_build fed with recorded host facts (no file of this
 * machine is read: the image, the paths and the devices below exist only
 * in the facts): mounts and their order, the environment's order, devices,
 * the verbs step, env scripts, the size of /dev/shm, the JSON keys. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "common/error.h"
#include "host/facts.h"
#include "plan/plan.h"
#include "config/siteconf.h"
#include "common/util.h"

#define GIB (1ULL << 30)

/* A recorded path: what host_facts_add_path would have found. */
static void rec(struct host_facts *f, const char *path, int err, bool dir)
{
	struct path_fact *pf;

	f->paths = xrealloc(f->paths, (f->npaths + 1) * sizeof(*f->paths));
	pf = &f->paths[f->npaths++];
	pf->path = xstrdup(path);
	pf->real = err ? NULL : xstrdup(path);
	pf->err = err;
	pf->is_dir = dir;
	pf->is_dev = false;
}

/* A recorded character device (a host device node a user binds). */
static void rec_dev(struct host_facts *f, const char *path)
{
	rec(f, path, 0, false);
	f->paths[f->npaths - 1].is_dev = true;
}

/* Host facts of a node with one active mlx5 HCA whose provider the host
 * has and the image lacks, an image with two env scripts (SIF, never
 * opened: the path does not exist here), 8 GiB for the job. */
static void facts_fixture(struct host_facts *f)
{
	struct host_devices *d = &f->hostdev;

	memset(f, 0, sizeof(*f));
	f->uid = 1000;
	f->gid = 1000;
	f->user = xstrdup("alice");
	f->home = xstrdup("/home/alice");
	f->cwd = xstrdup("/home/alice/work");
	f->page_size = 4096;
	f->job_memory = 8 * GIB;
	f->image.kind = IMAGE_SIF;
	f->image.path = xstrdup("/nonexistent/images/app.sif");
	f->image.offset = 4096;
	f->image_verbs_known = true;
	f->env_scripts_known = true;
	strv_push(&f->env_scripts, "/.singularity.d/env/01-base.sh");
	strv_push(&f->env_scripts, "/.singularity.d/env/90-environment.sh");
	f->image_verbs.lib_dir =
	    xstrdup("/usr/lib/x86_64-linux-gnu/libibverbs");
	strv_push(&f->host_verbs.drivers, "mlx5.driver");
	strv_push(&f->host_verbs.libs,
		  "/usr/lib64/libibverbs/libmlx5-rdmav34.so");
	d->ptrace_scope = 0;
	d->devs = xcalloc(1, sizeof(*d->devs));
	d->ndevs = 1;
	d->devs[0] = (struct device){
	    .host_path = xstrdup("/dev/infiniband/uverbs0"),
	    .path = xstrdup("/dev/infiniband/uverbs0"),
	    .kind = DEVICE_IB,
	    .reason = xstrdup("mlx5_0 port 1 active"),
	};
	d->hcas = xcalloc(1, sizeof(*d->hcas));
	d->nhcas = 1;
	d->hcas[0] = (struct hca){.name = xstrdup("mlx5_0"),
				  .driver = xstrdup("mlx5"),
				  .port = 1,
				  .active = true,
				  .link_layer = xstrdup("InfiniBand"),
				  .numa_node = 0,
				  .exposed = true};
	rec(f, "/dev/infiniband/uverbs0", 0, false);
	rec(f, "/dev/shm", 0, true);
	rec(f, "/etc/hosts", 0, false);
	rec(f, "/etc/resolv.conf", ENOENT, false);
	rec(f, "/tmp", 0, true);
	rec(f, "/home/alice", 0, true);
	rec(f, "/home/alice/work", 0, true);
	rec(f, "/data", 0, true);
	rec(f, "/missing", ENOENT, false);
	rec_dev(f, "/dev/nvidia0");
}

static mpictr_config *config_fixture(const char *const *host_env)
{
	static const char *const cmd[] = {"hello", "--x", NULL};
	mpictr_config *cfg = mpictr_config_new();

	ck_assert_ptr_nonnull(cfg);
	ck_assert_int_eq(
	    mpictr_config_set_host_env(cfg, (char **)host_env, NULL), 0);
	ck_assert_int_eq(
	    mpictr_config_set_image(cfg, "/nonexistent/images/app.sif", NULL),
	    0);
	ck_assert_int_eq(
	    mpictr_config_set_command(cfg, 2, (char *const *)cmd, NULL), 0);
	return cfg;
}

static const char *const plain_env[] = {"HOME=/home/alice", "USER=alice", NULL};

/* Build the plan of cfg from f in mode (the launcher decision aside). */
static int build_mode(mpictr_config *cfg, const struct host_facts *f,
		      enum run_mode mode, struct plan *p, mpictr_err **err)
{
	struct run_decision d;
	int rc;

	run_decide(cfg, &d);
	d.mode = mode;
	rc = plan_build(cfg, &d, f, NULL, p, err);
	run_decision_free(&d);
	return rc;
}

static int build(mpictr_config *cfg, const struct host_facts *f, struct plan *p,
		 mpictr_err **err)
{
	return build_mode(cfg, f, RUN_SINGLE, p, err);
}

static const struct mount_op *op_at(const struct plan *p, const char *target,
				    size_t *index)
{
	for (size_t i = 0; i < p->nops; i++)
		if (strcmp(p->ops[i].target, target) == 0) {
			if (index)
				*index = i;
			return &p->ops[i];
		}
	return NULL;
}

START_TEST(test_plan_mounts)
{
	struct host_facts f;
	struct plan p;
	mpictr_err *err = NULL;
	mpictr_config *cfg = config_fixture(plain_env);
	const struct mount_op *op;
	size_t i_tmp, i_home, i_data, i_dev;

	facts_fixture(&f);
	ck_assert_int_eq(
	    mpictr_config_add_bind(cfg, "/data:/mnt/data:ro", NULL), 0);
	ck_assert_msg(build(cfg, &f, &p, &err) == 0, "%s",
		      mpictr_err_message(err));
	ck_assert_ptr_null(p.facts);
	ck_assert_int_eq(p.ops[0].kind, MOP_IMAGE);
	ck_assert_str_eq(p.ops[0].target, "/");
	ck_assert_str_eq(p.image.path, "/nonexistent/images/app.sif");
	ck_assert_uint_eq(p.uid, 1000);
	ck_assert_str_eq(p.home, "/home/alice");
	ck_assert_str_eq(p.user, "alice");
	ck_assert_str_eq(p.cwd, "/home/alice/work");
	/* /etc/resolv.conf is missing and optional: left out */
	ck_assert_ptr_nonnull(op_at(&p, "/etc/hosts", NULL));
	ck_assert_ptr_null(op_at(&p, "/etc/resolv.conf", NULL));
	/* /dev/shm: 50 % of the recorded 8 GiB */
	op = op_at(&p, "/dev/shm", NULL);
	ck_assert_ptr_nonnull(op);
	ck_assert_int_eq(op->kind, MOP_TMPFS);
	ck_assert_str_eq(op->data, "mode=1777,size=4194304k");
	/* parents before children (the working directory is covered by the
	 * home directory's bind); the user's bind after the automatic */
	ck_assert_ptr_nonnull(op_at(&p, "/tmp", &i_tmp));
	ck_assert_ptr_nonnull(op_at(&p, "/home/alice", &i_home));
	ck_assert_ptr_null(op_at(&p, "/home/alice/work", NULL));
	op = op_at(&p, "/mnt/data", &i_data);
	ck_assert_ptr_nonnull(op);
	ck_assert(op->src_is_dir);
	ck_assert(op->flags & MS_RDONLY);
	ck_assert_int_eq(op->who, BIND_USER);
	ck_assert(i_tmp < i_home && i_home < i_data);
	/* the device: bound, keeps dev, listed with kind and reason */
	op = op_at(&p, "/dev/infiniband/uverbs0", &i_dev);
	ck_assert_ptr_nonnull(op);
	ck_assert_int_eq(op->kind, MOP_DEV);
	ck_assert(!(op->flags & MS_NODEV));
	ck_assert_uint_eq(p.ndevices, 1);
	ck_assert_str_eq(p.devices[0].kind, "ib");
	ck_assert_str_eq(p.devices[0].reason, "mlx5_0 port 1 active");
	ck_assert(i_dev < i_tmp);
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* -B of a host device node: a device bind (keeps dev, nosuid,noexec);
 * of a directory: nodev. */
START_TEST(test_plan_user_device_bind)
{
	struct host_facts f;
	struct plan p;
	mpictr_err *err = NULL;
	mpictr_config *cfg = config_fixture(plain_env);
	const struct mount_op *op;

	facts_fixture(&f);
	ck_assert_int_eq(
	    mpictr_config_add_bind(cfg, "/dev/nvidia0,/data:/dev/data", NULL),
	    0);
	ck_assert_msg(build(cfg, &f, &p, &err) == 0, "%s",
		      mpictr_err_message(err));
	op = op_at(&p, "/dev/nvidia0", NULL);
	ck_assert_ptr_nonnull(op);
	ck_assert_int_eq(op->kind, MOP_DEV);
	ck_assert_int_eq(op->who, BIND_USER);
	ck_assert(!(op->flags & MS_NODEV));
	ck_assert(op->flags & MS_NOSUID);
	ck_assert(op->flags & MS_NOEXEC);
	op = op_at(&p, "/dev/data", NULL);
	ck_assert_ptr_nonnull(op);
	ck_assert_int_eq(op->kind, MOP_BIND);
	ck_assert(op->flags & MS_NODEV);
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

START_TEST(test_plan_shm_site)
{
	static const char site[] = "shm_size = 1g\n";
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(plain_env);

	facts_fixture(&f);
	ck_assert_int_eq(siteconf_parse(&cfg->site, site, strlen(site),
					"site.conf", true, NULL),
			 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(op_at(&p, "/dev/shm", NULL)->data,
			 "mode=1777,size=1048576k");
	plan_free(&p);
	/* a percentage of what the job may use, rounded up to pages */
	siteconf_free(&cfg->site);
	memset(&cfg->site, 0, sizeof(cfg->site));
	ck_assert_int_eq(siteconf_parse(&cfg->site, "shm_size = 10%\n", 15,
					"site.conf", true, NULL),
			 0);
	f.job_memory = 1000 * 4096 + 1;
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(op_at(&p, "/dev/shm", NULL)->data,
			 "mode=1777,size=400k");
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

START_TEST(test_plan_env_order)
{
	static const char *const host[] = {"HOME=/home/alice",
					   "FOO=host",
					   "PATH=/host/bin",
					   "LD_PRELOAD=/host/lib.so",
					   "MPICTR_ENV_BAR=prefix",
					   "MPICTR_ENV_BAZ=prefix",
					   "MPICTR_DEBUG=1",
					   "PMI_FD=3",
					   "LIST=a",
					   NULL};
	static const char site[] = "env = FOO=site\n"
				   "[profile p]\n"
				   "env_prepend = LIST=b\n";
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(host);
	char **env;

	facts_fixture(&f);
	ck_assert_int_eq(siteconf_parse(&cfg->site, site, strlen(site),
					"site.conf", true, NULL),
			 0);
	ck_assert_int_eq(mpictr_config_add_profile(cfg, "p", NULL), 0);
	ck_assert_int_eq(mpictr_config_set_env(cfg, "BAR", "user", NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	/* 1: filtered; 2: PATH reset, site over host, profile prepends */
	ck_assert_int_lt(env_find(p.env, "LD_PRELOAD"), 0);
	ck_assert_int_lt(env_find(p.env, "MPICTR_DEBUG"), 0);
	ck_assert_str_eq(env_get(p.env, "PATH"), CONTAINER_DEFAULT_PATH);
	ck_assert_str_eq(env_get(p.env, "FOO"), "site");
	ck_assert_str_eq(env_get(p.env, "LIST"), "b:a");
	/* single mode: an outer launcher's PMI variables are kept */
	ck_assert_str_eq(env_get(p.env, "PMI_FD"), "3");
	/* 3 */
	ck_assert_str_eq(env_get(p.env, "MPICTR_CONTAINER"),
			 "/nonexistent/images/app.sif");
	ck_assert_str_eq(env_get(p.env, "PWD"), "/home/alice/work");
	/* 4: --env wins over MPICTR_ENV_, both kept apart for the wrapper */
	ck_assert_str_eq(env_get(p.env, "BAR"), "user");
	ck_assert_str_eq(env_get(p.env, "BAZ"), "prefix");
	ck_assert_str_eq(env_get(p.user_env, "BAR"), "user");
	ck_assert_str_eq(env_get(p.user_env, "BAZ"), "prefix");
	ck_assert_uint_eq(strv_len(p.user_env), 2);
	/* 5: per rank, host ones first, transport variables after */
	env = plan_rank_env(&p, 0);
	ck_assert_int_lt(env_find(env, "FOO"), env_find(env, "PATH"));
	ck_assert_int_lt(env_find(env, "PATH"),
			 env_find(env, "MPICTR_CONTAINER"));
	strv_free(env);
	/* 6: the binding hints only with --bind-to core, never over a
	 * value already set */
	env = NULL;
	env_binding(&env, "none");
	ck_assert_ptr_null(env);
	env_set(&env, "OMPI_MCA_orte_externally_bound", "0");
	env_binding(&env, "core");
	ck_assert_str_eq(env_get(env, "OMPI_MCA_hwloc_base_binding_policy"),
			 "none");
	ck_assert_str_eq(env_get(env, "OMPI_MCA_orte_externally_bound"), "0");
	strv_free(env);
	plan_free(&p);
	/* launch mode: mpictr serves PMI, an outer launcher's are dropped */
	ck_assert_int_eq(build_mode(cfg, &f, RUN_LAUNCH, &p, NULL), 0);
	ck_assert_ptr_null(env_get(p.env, "PMI_FD"));
	ck_assert_str_eq(env_get(p.env, "FOO"), "site");
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

START_TEST(test_plan_env_scripts_json)
{
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(plain_env);
	cleanup_free char *json = NULL;

	facts_fixture(&f);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert(p.env_scripts_known);
	ck_assert_uint_eq(strv_len(p.env_scripts), 2);
	ck_assert_str_eq(p.env_scripts[0], "/.singularity.d/env/01-base.sh");
	ck_assert_str_eq(p.env_scripts[1],
			 "/.singularity.d/env/90-environment.sh");
	json = plan_to_json(&p);
	ck_assert(strstr(json, "\"env_scripts\": [\"/.singularity.d/env/"
			       "01-base.sh\", \"/.singularity.d/env/"
			       "90-environment.sh\"]"));
	/* every contract key is there, and the added ones */
	for (const char *const *k =
		 (const char *const[]){
		     "\"command\"", "\"mounts\"", "\"env\"", "\"env_scripts\"",
		     "\"devices\"", "\"image\"", "\"cwd\"", "\"uid\"",
		     "\"gid\"", "\"mode\"", "\"launch\"", "\"checks\"", NULL};
	     *k; k++)
		ck_assert_msg(strstr(json, *k), "%s missing", *k);
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

START_TEST(test_plan_verbs)
{
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(plain_env);
	const struct mount_op *drv, *lib;
	cleanup_free char *json = NULL;

	facts_fixture(&f);
	/* without --inject-verbs: a warning naming the driver and the fix */
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert(!p.verbs_in_holder);
	ck_assert_uint_eq(strv_len(p.verbs_warnings), 1);
	ck_assert(strstr(p.verbs_warnings[0], "driver mlx5"));
	ck_assert(strstr(p.verbs_warnings[0], "--inject-verbs"));
	ck_assert_ptr_null(op_at(&p, "/etc/libibverbs.d/mlx5.driver", NULL));
	plan_free(&p);
	/* with it: the host's driver file and provider, read-only, into the
	 * image's provider directory; shown among the mounts and checks */
	ck_assert_int_eq(
	    mpictr_config_set_flag(cfg, MPICTR_FLAG_INJECT_VERBS, 1, NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_ptr_null(p.verbs_warnings);
	drv = op_at(&p, "/etc/libibverbs.d/mlx5.driver", NULL);
	lib =
	    op_at(&p, "/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so",
		  NULL);
	ck_assert_ptr_nonnull(drv);
	ck_assert_ptr_nonnull(lib);
	ck_assert_str_eq(drv->source, "/etc/libibverbs.d/mlx5.driver");
	ck_assert_str_eq(lib->source,
			 "/usr/lib64/libibverbs/libmlx5-rdmav34.so");
	ck_assert(lib->flags & MS_RDONLY);
	ck_assert_str_eq(lib->why, VERBS_WHY);
	json = plan_to_json(&p);
	ck_assert(strstr(json, "\"check\": \"verbs_providers\", \"inject\": "
			       "true, \"decided\": \"plan\""));
	plan_free(&p);
	/* an image that could not be read before mounting: the holder
	 * decides, with the host's providers from the plan */
	f.image_verbs_known = false;
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert(p.verbs_in_holder);
	ck_assert_ptr_null(op_at(&p, "/etc/libibverbs.d/mlx5.driver", NULL));
	ck_assert_str_eq(p.host_verbs.drivers[0], "mlx5.driver");
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

START_TEST(test_plan_fact_errors)
{
	struct host_facts f;
	struct plan p;
	mpictr_err *err = NULL;
	mpictr_config *cfg = config_fixture(plain_env);

	facts_fixture(&f);
	/* a missing bind source, as recorded */
	ck_assert_int_eq(mpictr_config_add_bind(cfg, "/missing:/m", NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, &err), -1);
	ck_assert_msg(strstr(mpictr_err_message(err), "'/missing'"), "%s",
		      mpictr_err_message(err));
	ck_assert_int_eq(mpictr_err_errno(err), ENOENT);
	mpictr_err_free(err);
	err = NULL;
	plan_free(&p);
	mpictr_config_free(cfg);
	/* a path nobody gathered: planning and gathering disagree */
	cfg = config_fixture(plain_env);
	free(f.hostdev.devs[0].host_path);
	f.hostdev.devs[0].host_path = xstrdup("/dev/elsewhere");
	ck_assert_int_eq(build(cfg, &f, &p, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "no host fact"));
	mpictr_err_free(err);
	err = NULL;
	plan_free(&p);
	/* the image's probe failed: its error, as recorded */
	f.image_err = NULL;
	err_set(&f.image_err, ENOENT, "image '/nonexistent/images/app.sif'");
	ck_assert_int_eq(build(cfg, &f, &p, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "app.sif"));
	ck_assert_int_eq(mpictr_err_errno(err), ENOENT);
	mpictr_err_free(err);
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* A profile injecting the host's MPICH 12.3 against the image's MPICH. */
static void mpi_fixture(struct host_facts *f, int image_minor)
{
	f->mpis = xcalloc(1, sizeof(*f->mpis));
	f->nmpis = 1;
	f->mpis[0].path = xstrdup("/host/lib/libmpich.so.12");
	f->mpis[0].lib =
	    (struct mpi_lib){.path = xstrdup("/host/lib/libmpich.so.12"),
			     .soname = xstrdup("libmpich.so.12"),
			     .file = xstrdup("libmpich.so.12.3.0"),
			     .family = MPI_FAMILY_MPICH,
			     .major = 12,
			     .minor = 3};
	rec(f, "/host/lib/libmpich.so.12", 0, false);
	f->image_mpi = xcalloc(1, sizeof(*f->image_mpi));
	f->nimage_mpi = 1;
	f->image_mpi[0] = (struct mpi_lib){
	    .path = xstrdup("/usr/lib/x86_64-linux-gnu/libmpich.so.12"),
	    .soname = xstrdup("libmpich.so.12"),
	    .file = xasprintf("libmpich.so.12.%d.0", image_minor),
	    .family = MPI_FAMILY_MPICH,
	    .major = 12,
	    .minor = image_minor};
	f->image_mpi_known = true;
}

static mpictr_config *mpi_config(const char *abi)
{
	mpictr_config *cfg = config_fixture(plain_env);
	cleanup_free char *site =
	    xasprintf("[profile mpich]\nmpi = /host/lib/libmpich.so.12\n"
		      "mpi_abi = %s\n",
		      abi);

	ck_assert_int_eq(siteconf_parse(&cfg->site, site, strlen(site),
					"site.conf", true, NULL),
			 0);
	ck_assert_int_eq(mpictr_config_add_profile(cfg, "mpich", NULL), 0);
	return cfg;
}

START_TEST(test_plan_mpi_abi)
{
	struct host_facts f;
	struct plan p;
	mpictr_err *err = NULL;
	mpictr_config *cfg = mpi_config("enforce");
	cleanup_free char *json = NULL;

	/* the image's MPICH 12.1: the host's 12.3 may replace it */
	facts_fixture(&f);
	mpi_fixture(&f, 1);
	ck_assert_msg(build(cfg, &f, &p, &err) == 0, "%s",
		      mpictr_err_message(err));
	ck_assert(p.mpi_checked);
	ck_assert_ptr_null(p.mpi_warnings);
	ck_assert_str_eq(
	    op_at(&p, MPIINJECT_DIR "/libmpich.so.12", NULL)->source,
	    "/host/lib/libmpich.so.12");
	ck_assert_ptr_nonnull(op_at(&p, MPIINJECT_DIR "/libmpi.so.12", NULL));
	json = plan_to_json(&p);
	ck_assert(strstr(json, "\"check\": \"mpi_abi\", \"profile\": "
			       "\"mpich\""));
	ck_assert(strstr(json,
			 "\"action\": \"enforce\", \"decided\": "
			 "\"plan\", \"warnings\": [], \"refused\": null"));
	plan_free(&p);
	host_facts_free(&f);
	/* the image's 12.5 is newer: refused, naming the profile (the step's
	 * outcome: the holder reports it, --dry-run shows it) */
	facts_fixture(&f);
	mpi_fixture(&f, 5);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_ptr_nonnull(p.mpi_refusal);
	ck_assert_msg(strstr(mpictr_err_message(p.mpi_refusal),
			     "profile 'mpich': MPI ABI check: host"),
		      "%s", mpictr_err_message(p.mpi_refusal));
	ck_assert(strstr(mpictr_err_message(p.mpi_refusal),
			 "older than the image's"));
	free(json);
	json = plan_to_json(&p);
	ck_assert(strstr(json, "\"refused\": \"profile 'mpich': MPI ABI"));
	plan_free(&p);
	mpictr_config_free(cfg);
	/* mpi_abi = warn: planned, with the warning for the holder to say */
	cfg = mpi_config("warn");
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_uint_eq(strv_len(p.mpi_warnings), 1);
	ck_assert(strstr(p.mpi_warnings[0], "continuing: mpi_abi = warn"));
	plan_free(&p);
	/* the image not read before mounting: the holder checks */
	f.image_mpi_known = false;
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert(!p.mpi_checked);
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* --writable-tmpfs and --overlay: one MOP_OVERLAY op right after the
 * image, sized by writable_tmpfs_size; both at once refused. */
START_TEST(test_plan_overlay)
{
	static const char site[] = "writable_tmpfs_size = 64m\n";
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(plain_env);
	mpictr_err *err = NULL;

	facts_fixture(&f);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_int_ne(p.ops[1].kind, MOP_OVERLAY);
	ck_assert_ptr_null(p.overlay_tmpfs);
	plan_free(&p);
	ck_assert_int_eq(siteconf_parse(&cfg->site, site, strlen(site),
					"site.conf", true, NULL),
			 0);
	ck_assert_int_eq(
	    mpictr_config_set_flag(cfg, MPICTR_FLAG_WRITABLE_TMPFS, 1, NULL),
	    0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_int_eq(p.ops[0].kind, MOP_IMAGE);
	ck_assert_int_eq(p.ops[1].kind, MOP_OVERLAY);
	ck_assert_str_eq(p.ops[1].source, "tmpfs");
	ck_assert_str_eq(p.ops[1].target, "/");
	ck_assert_str_eq(p.overlay_tmpfs, "size=65536k");
	{
		cleanup_free char *o = mop_options(&p.ops[1]);
		ck_assert_str_eq(o, "overlay,rw,nosuid,nodev,size=65536k");
	}
	plan_free(&p);
	/* default: 50% of the job's memory (8 GiB) */
	siteconf_free(&cfg->site);
	memset(&cfg->site, 0, sizeof(cfg->site));
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(p.overlay_tmpfs, "size=4194304k");
	plan_free(&p);
	/* --overlay DIR, relative: against the working directory */
	ck_assert_int_eq(mpictr_config_set_overlay(cfg, "./o2/", NULL), 0);
	ck_assert_int_ne(build(cfg, &f, &p, &err), 0);
	ck_assert(strstr(mpictr_err_message(err), "exclude each other"));
	mpictr_err_free(err);
	ck_assert_int_eq(
	    mpictr_config_set_flag(cfg, MPICTR_FLAG_WRITABLE_TMPFS, 0, NULL),
	    0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(p.overlay_dir, "/home/alice/work/o2");
	ck_assert_str_eq(p.ops[1].data, "upperdir=/home/alice/work/o2/upper,"
					"workdir=/home/alice/work/o2/work");
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* Apptainer's variables and flags: SINGULARITYENV_ < APPTAINERENV_ <
 * MPICTR_ENV_ < --env-file < --env; the prefixed names are not passed;
 * --cleanenv keeps the user and launcher variables only; --home SRC:DST
 * binds SRC at DST and sets HOME; --no-home binds no home. */
START_TEST(test_plan_apptainer_env)
{
	static const char *const host[] = {"HOME=/home/alice",
					   "USER=alice",
					   "FOO=host",
					   "SLURM_JOB_ID=7",
					   "SINGULARITYENV_A=s",
					   "SINGULARITYENV_B=s",
					   "APPTAINERENV_A=a",
					   "APPTAINERENV_C=a",
					   "MPICTR_ENV_C=m",
					   "MPICTR_ENV_D=m",
					   NULL};
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(host);

	facts_fixture(&f);
	cfg->file_env = NULL;
	env_set(&cfg->file_env, "D", "file");
	env_set(&cfg->file_env, "E", "file");
	ck_assert_int_eq(mpictr_config_set_env(cfg, "E", "env", NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(env_get(p.env, "B"), "s");
	ck_assert_str_eq(env_get(p.env, "A"), "a");
	ck_assert_str_eq(env_get(p.env, "C"), "m");
	ck_assert_str_eq(env_get(p.env, "D"), "file");
	ck_assert_str_eq(env_get(p.env, "E"), "env");
	ck_assert_ptr_null(env_get(p.env, "APPTAINERENV_A"));
	ck_assert_ptr_null(env_get(p.env, "SINGULARITYENV_B"));
	ck_assert_str_eq(env_get(p.env, "FOO"), "host");
	ck_assert_str_eq(env_get(p.env, "APPTAINER_CONTAINER"),
			 "/nonexistent/images/app.sif");
	ck_assert_str_eq(env_get(p.env, "SINGULARITY_NAME"), "app.sif");
	ck_assert_ptr_nonnull(op_at(&p, "/home/alice", NULL));
	plan_free(&p);
	ck_assert_int_eq(
	    mpictr_config_set_flag(cfg, MPICTR_FLAG_CLEANENV, 1, NULL), 0);
	ck_assert_int_eq(
	    mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_HOME, 1, NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_ptr_null(env_get(p.env, "FOO"));
	ck_assert_str_eq(env_get(p.env, "SLURM_JOB_ID"), "7");
	ck_assert_str_eq(env_get(p.env, "USER"), "alice");
	ck_assert_str_eq(env_get(p.env, "A"), "a");
	ck_assert_ptr_null(op_at(&p, "/home/alice", NULL));
	plan_free(&p);
	ck_assert_int_eq(mpictr_config_set_home(cfg, "/data:/home/me", NULL),
			 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(op_at(&p, "/home/me", NULL)->source, "/data");
	ck_assert_str_eq(env_get(p.env, "HOME"), "/home/me");
	plan_free(&p);
	ck_assert_int_ne(mpictr_config_set_home(cfg, "/data:rel", NULL), 0);
	ck_assert_int_ne(mpictr_config_set_home(cfg, "/data:/a/../b", NULL), 0);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* The same facts give the same plan: nothing else is read. */
START_TEST(test_plan_deterministic)
{
	struct host_facts f;
	struct plan a, b;
	mpictr_config *cfg = config_fixture(plain_env);
	cleanup_free char *ja = NULL, *jb = NULL;

	facts_fixture(&f);
	ck_assert_int_eq(build(cfg, &f, &a, NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &b, NULL), 0);
	ja = plan_to_json(&a);
	jb = plan_to_json(&b);
	ck_assert_str_eq(ja, jb);
	plan_free(&a);
	plan_free(&b);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* What the modes used to patch after planning is decided in planning, so
 * that --dry-run shows what the ranks get: every rank on this node in
 * launch mode (UCX_TLS=^cma,tcp with --no-share), not in node daemon
 * mode; a join-mode task's local rank and size; the holder's FUSE
 * workers. Fails on the old code (single_node, nlocal and the workers were
 * set by launch.c, join.c and holder.c). */
START_TEST(test_plan_ranks)
{
	mpictr_config *cfg = config_fixture(plain_env);
	struct host_facts f;
	struct run_decision d;
	struct plan p;
	char **env;
	cleanup_free char *json = NULL;

	facts_fixture(&f);
	f.ncpu = 4;
	mpictr_config_set_nranks(cfg, 2, NULL);
	mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_SHARE, 1, NULL);
	ck_assert_int_eq(build_mode(cfg, &f, RUN_LAUNCH, &p, NULL), 0);
	ck_assert(p.single_node && !p.shared_ns);
	ck_assert_int_eq(p.nlocal, 2);
	ck_assert_int_eq(p.fuse_workers, 2);
	env = plan_rank_env(&p, 0);
	ck_assert_str_eq(env_get(env, "UCX_TLS"), "^cma,tcp");
	strv_free(env);
	json = plan_to_json(&p);
	ck_assert_ptr_nonnull(strstr(json, "\"UCX_TLS=^cma,tcp\""));
	ck_assert_ptr_nonnull(strstr(json, "\"fuse_workers\": 2"));
	plan_free(&p);
	ck_assert_int_eq(build_mode(cfg, &f, RUN_NODE_DAEMON, &p, NULL), 0);
	ck_assert(!p.single_node);
	plan_free(&p);
	/* a join-mode task: local rank 1 of 3, its plan and its dry-run */
	mpictr_config_set_nranks(cfg, 0, NULL);
	mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_SHARE, 0, NULL);
	run_decide(cfg, &d);
	d.mode = RUN_JOIN;
	d.peers.local_rank = 1;
	d.peers.local_size = 3;
	f.ncpu = 16;
	ck_assert_int_eq(plan_build(cfg, &d, &f, NULL, &p, NULL), 0);
	ck_assert(!p.single_node);
	ck_assert_int_eq(p.nlocal, 3);
	ck_assert_int_eq(p.local_rank, 1);
	ck_assert_int_eq(p.fuse_workers, 2); /* two in join mode */
	plan_free(&p);
	run_decision_free(&d);
	/* at most one fewer than the CPUs; MPICTR_FUSE_WORKERS wins */
	mpictr_config_set_nranks(cfg, 8, NULL);
	f.ncpu = 2;
	ck_assert_int_eq(build_mode(cfg, &f, RUN_LAUNCH, &p, NULL), 0);
	ck_assert_int_eq(p.fuse_workers, 1);
	plan_free(&p);
	mpictr_config_free(cfg);
	cfg = config_fixture((const char *const[]){
	    "HOME=/home/alice", "MPICTR_FUSE_WORKERS=5", NULL});
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_int_eq(p.fuse_workers, 5);
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* The job's PMI shape is the plan's (launch.c and run.c read it): the
 * ranks (1 without -n), whether our servers serve PMI, the holders, the
 * universe (the cores, or -n when more; --universe-size; the job's size
 * in node daemon mode) and whether it is a limit; --dry-run shows them.
 * The MPI singleton is planned from the decision, cfg left untouched.
 * Fails on the old code (launch.c decided all of it). */
START_TEST(test_plan_pmi_shape)
{
	static const char site[] = "oversubscribe = no\n";
	mpictr_config *cfg = config_fixture(plain_env);
	struct host_facts f;
	struct run_decision d;
	struct plan p;
	cleanup_free char *json = NULL;
	cleanup_free char *json2 = NULL;

	facts_fixture(&f);
	f.ncores = 2;
	/* a single process: one rank, no PMI of ours, no universe */
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_int_eq(p.nranks, 1);
	ck_assert(!p.serves_pmi);
	ck_assert_uint_eq(p.nholders, 1);
	ck_assert_uint_eq(p.universe, 0);
	json = plan_to_json(&p);
	ck_assert_ptr_nonnull(strstr(json, "\"ranks\": 1,\n  \"serves_pmi\": "
					   "false,\n  \"holders\": 1,\n  "
					   "\"universe\": null,\n  "
					   "\"universe_hard\": false"));
	plan_free(&p);
	/* -n 4 on 2 cores: the universe is 4; on 8 cores 8 */
	mpictr_config_set_nranks(cfg, 4, NULL);
	ck_assert_int_eq(build_mode(cfg, &f, RUN_LAUNCH, &p, NULL), 0);
	ck_assert_int_eq(p.nranks, 4);
	ck_assert(p.serves_pmi && !p.universe_hard);
	ck_assert_uint_eq(p.nholders, 1);
	ck_assert_uint_eq(p.universe, 4);
	plan_free(&p);
	f.ncores = 8;
	mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_SHARE, 1, NULL);
	ck_assert_int_eq(build_mode(cfg, &f, RUN_LAUNCH, &p, NULL), 0);
	ck_assert_uint_eq(p.universe, 8);
	ck_assert_uint_eq(p.nholders, 4);
	json2 = plan_to_json(&p);
	ck_assert_ptr_nonnull(strstr(json2, "\"ranks\": 4,"));
	ck_assert_ptr_nonnull(strstr(json2, "\"holders\": 4,"));
	ck_assert_ptr_nonnull(strstr(json2, "\"universe\": 8,"));
	plan_free(&p);
	/* node daemon mode: the job's size unless --universe-size */
	ck_assert_int_eq(build_mode(cfg, &f, RUN_NODE_DAEMON, &p, NULL), 0);
	ck_assert(p.serves_pmi);
	ck_assert_uint_eq(p.universe, 0);
	plan_free(&p);
	mpictr_config_set_universe_size(cfg, 3, NULL);
	mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_OVERSUBSCRIBE, 1, NULL);
	ck_assert_int_eq(build_mode(cfg, &f, RUN_NODE_DAEMON, &p, NULL), 0);
	ck_assert_uint_eq(p.universe, 3);
	ck_assert(p.universe_hard);
	plan_free(&p);
	/* the site's oversubscribe = no makes it a limit too */
	mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_OVERSUBSCRIBE, 0, NULL);
	ck_assert_int_eq(siteconf_parse(&cfg->site, site, strlen(site),
					"site.conf", true, NULL),
			 0);
	ck_assert_int_eq(build_mode(cfg, &f, RUN_LAUNCH, &p, NULL), 0);
	ck_assert(p.universe_hard);
	plan_free(&p);
	/* the singleton: planned as -n 1 from the decision alone */
	mpictr_config_set_nranks(cfg, 0, NULL);
	mpictr_config_set_universe_size(cfg, 0, NULL);
	mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_SHARE, 0, NULL);
	run_decide_ranks(cfg, 1, &d);
	ck_assert_int_eq(d.mode, RUN_LAUNCH);
	ck_assert_int_eq(cfg->nranks, 0);
	ck_assert_int_eq(plan_build(cfg, &d, &f, NULL, &p, NULL), 0);
	ck_assert_int_eq(p.nranks, 1);
	ck_assert(p.serves_pmi);
	ck_assert_uint_eq(p.universe, 8);
	ck_assert_int_eq(p.fuse_workers, 1);
	plan_free(&p);
	run_decision_free(&d);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* The cores are a host fact, gathered where the plan needs them. */
START_TEST(test_facts_cores)
{
	mpictr_config *cfg = config_fixture(plain_env);
	struct host_facts f;

	ck_assert_int_eq(host_facts_gather(cfg, 0, NULL, &f, NULL), 0);
	ck_assert_uint_eq(f.ncores, 0);
	host_facts_free(&f);
	ck_assert_int_eq(
	    host_facts_gather(cfg, HOST_FACTS_CORES, NULL, &f, NULL), 0);
	ck_assert_uint_ge(f.ncores, 1);
	ck_assert_int_le(f.ncores, f.ncpu > 0 ? f.ncpu : 1);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* `run` and the plugin's --container-entrypoint: the words put in front
 * of the user's command (argv_lead): the runscript, or a pulled image's
 * Entrypoint (and its Cmd when there are no arguments). */
START_TEST(test_plan_argv_lead)
{
	static char *const args[] = {"echo", "a", NULL};
	static char *const ep[] = {"/bin/echo", "EP", NULL};
	static char *const cmd[] = {"default-cmd", NULL};
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(plain_env);

	facts_fixture(&f);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.argv_lead, 0);
	plan_free(&p);
	ck_assert_int_eq(mpictr_config_set_runscript(cfg, 2, args, NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(p.argv[0], "/.singularity.d/runscript");
	ck_assert_uint_eq(p.argv_lead, 1);
	plan_free(&p);
	f.oci_known = true;
	f.oci.entrypoint = strv_dup(ep);
	f.oci.cmd = strv_dup(cmd);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_uint_eq(strv_len(p.argv), 4);
	ck_assert_str_eq(p.argv[2], "echo");
	ck_assert_uint_eq(p.argv_lead, 2);
	plan_free(&p);
	ck_assert_int_eq(mpictr_config_set_runscript(cfg, 0, NULL, NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert_str_eq(p.argv[2], "default-cmd");
	ck_assert_uint_eq(p.argv_lead, 3);
	plan_free(&p);
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

/* `mpictr shell`: one interactive shell; -n N > 1 ranks of it refused
 * (launch and node daemon mode), -n 1 and a single process planned. */
START_TEST(test_plan_shell_ranks)
{
	struct host_facts f;
	struct plan p;
	mpictr_config *cfg = config_fixture(plain_env);
	mpictr_err *err = NULL;
	static const enum run_mode refused[] = {RUN_LAUNCH, RUN_NODE_DAEMON};

	facts_fixture(&f);
	ck_assert_int_eq(mpictr_config_set_shell(cfg, NULL, NULL), 0);
	ck_assert_int_eq(build(cfg, &f, &p, NULL), 0);
	ck_assert(p.shell);
	plan_free(&p);
	ck_assert_int_eq(mpictr_config_set_nranks(cfg, 1, NULL), 0);
	ck_assert_int_eq(build_mode(cfg, &f, RUN_LAUNCH, &p, NULL), 0);
	plan_free(&p);
	ck_assert_int_eq(mpictr_config_set_nranks(cfg, 4, NULL), 0);
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		ck_assert_int_eq(build_mode(cfg, &f, refused[i], &p, &err), -1);
		ck_assert(strstr(mpictr_err_message(err),
				 "starts one interactive shell, not -n 4"));
		mpictr_err_free(err);
		err = NULL;
	}
	host_facts_free(&f);
	mpictr_config_free(cfg);
}
END_TEST

Suite *suite_plan(void);
Suite *suite_plan(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("recorded facts");

	tcase_add_test(tc, test_plan_mounts);
	tcase_add_test(tc, test_plan_shm_site);
	tcase_add_test(tc, test_plan_user_device_bind);
	tcase_add_test(tc, test_plan_env_order);
	tcase_add_test(tc, test_plan_env_scripts_json);
	tcase_add_test(tc, test_plan_verbs);
	tcase_add_test(tc, test_plan_fact_errors);
	tcase_add_test(tc, test_plan_mpi_abi);
	tcase_add_test(tc, test_plan_deterministic);
	tcase_add_test(tc, test_plan_overlay);
	tcase_add_test(tc, test_plan_shell_ranks);
	tcase_add_test(tc, test_plan_argv_lead);
	tcase_add_test(tc, test_plan_apptainer_env);
	tcase_add_test(tc, test_plan_ranks);
	tcase_add_test(tc, test_plan_pmi_shape);
	tcase_add_test(tc, test_facts_cores);
	suite_add_tcase(s, tc);
	return s;
}
