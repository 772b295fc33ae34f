/* check_devices.c - device discovery against fake sysfs/dev trees built by
 * tests/fixtures/mkfakesys.sh, the --devices overrides, the verbs provider
 * check, the ld cache reader and the `mpictr check` lines. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/devices.h"
#include "host/ldcache.h"
#include "host/verbs.h"
#include "common/error.h"
#include "preflight.h"
#include "testutil.h"
#include "common/util.h"

/* Trees are built once per test case, in the runner process (unchecked
 * fixture), since each takes a second or two to generate. */
static char base[] = "/tmp/mpictr-devtest.XXXXXX";
static char *full, *roce, *hfi1, *cxi, *none, *efa, *noacc, *img_mlx5,
	*img_none;

static char *mktree(const char *name, const char *variants)
{
	char *dir = xasprintf("%s/%s", base, name);
	char *cmd = xasprintf("bash '%s/tests/fixtures/mkfakesys.sh' '%s' %s",
			      test_root(), dir, variants);
	int rc = system(cmd);

	if (rc != 0) {
		fprintf(stderr, "mkfakesys failed: %s\n", cmd);
		abort();
	}
	free(cmd);
	return dir;
}

static void trees_setup(void)
{
	if (!mkdtemp(base))
		abort();
	chmod(base, 0755); /* readable by the uid the access tests drop to */
	full = mktree("full", "mlx5 knem xpmem nvidia amd yama1");
	roce = mktree("roce", "roce umad-readable");
	hfi1 = mktree("hfi1", "hfi1 yama0");
	cxi = mktree("cxi", "cxi");
	none = mktree("none", "none");
	efa = mktree("efa", "efa");
	noacc = mktree("noacc", "roce uverbs-noaccess");
	img_mlx5 = mktree("img_mlx5", "provider-mlx5");
	img_none = mktree("img_none", "none");
}

static void trees_teardown(void)
{
	char *cmd = xasprintf("rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
	free(cmd);
}

static const struct device *find_dev(const struct host_devices *d,
				     const char *path)
{
	for (size_t i = 0; i < d->ndevs; i++)
		if (strcmp(d->devs[i].path, path) == 0)
			return &d->devs[i];
	return NULL;
}

static const struct hca *find_hca(const struct host_devices *d,
				  const char *name)
{
	for (size_t i = 0; i < d->nhcas; i++)
		if (strcmp(d->hcas[i].name, name) == 0)
			return &d->hcas[i];
	return NULL;
}

static const char *find_bind(const struct host_devices *d, const char *dst)
{
	for (size_t i = 0; i < d->nbinds; i++)
		if (strcmp(d->binds[i].dst, dst) == 0)
			return d->binds[i].src;
	return NULL;
}

static bool has_warning(char **w, const char *needle)
{
	for (size_t i = 0; w && w[i]; i++)
		if (strstr(w[i], needle))
			return true;
	return false;
}

static size_t count_kind(const struct host_devices *d, enum device_kind k)
{
	size_t n = 0;
	for (size_t i = 0; i < d->ndevs; i++)
		n += d->devs[i].kind == k;
	return n;
}

static void discover_ok(const char *root, const char *spec, bool gpu,
			struct host_devices *d)
{
	mpictr_err *err = NULL;
	int rc = devices_discover(root, spec, gpu, d, &err);
	ck_assert_msg(rc == 0, "discover %s: %s", root,
		      err ? mpictr_err_message(err) : "");
}

START_TEST(test_kind_names)
{
	ck_assert_str_eq(device_kind_name(DEVICE_IB), "ib");
	ck_assert_str_eq(device_kind_name(DEVICE_OPA), "opa");
	ck_assert_str_eq(device_kind_name(DEVICE_KNEM), "knem");
	ck_assert_str_eq(device_kind_name(DEVICE_XPMEM), "xpmem");
	ck_assert_str_eq(device_kind_name(DEVICE_CXI), "cxi");
	ck_assert_str_eq(device_kind_name(DEVICE_GPU), "gpu");
	ck_assert_str_eq(verbs_provider("hfi1"), "hfi1verbs");
	ck_assert_ptr_null(verbs_provider("cxi"));
}
END_TEST

START_TEST(test_mlx5_default)
{
	struct host_devices d;
	const struct hca *h;
	const struct device *v;
	cleanup_free char *want = NULL;

	discover_ok(full, NULL, false, &d);
	ck_assert_uint_eq(d.nhcas, 3);
	h = find_hca(&d, "mlx5_0");
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->driver, "mlx5");
	ck_assert_int_eq(h->port, 1);
	ck_assert(h->active);
	ck_assert(h->exposed);
	ck_assert_str_eq(h->link_layer, "InfiniBand");
	ck_assert_int_eq(h->numa_node, 0);
	h = find_hca(&d, "mlx5_1");
	ck_assert(h->active && h->exposed);
	ck_assert_int_eq(h->numa_node, 1);
	h = find_hca(&d, "mlx5_2");
	ck_assert(!h->active);
	ck_assert(!h->exposed);

	v = find_dev(&d, "/dev/infiniband/uverbs0");
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(v->kind, DEVICE_IB);
	want = xasprintf("%s/dev/infiniband/uverbs0", full);
	ck_assert_str_eq(v->host_path, want);
	ck_assert(strstr(v->reason, "mlx5_0"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/infiniband/uverbs1"));
	/* mlx5_2's only port is DOWN: not exposed by plain discovery */
	ck_assert_ptr_null(find_dev(&d, "/dev/infiniband/uverbs2"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/infiniband/rdma_cm"));
	ck_assert_int_eq(find_dev(&d, "/dev/knem")->kind, DEVICE_KNEM);
	ck_assert_int_eq(find_dev(&d, "/dev/xpmem")->kind, DEVICE_XPMEM);
	/* GPUs only with --gpu */
	ck_assert_uint_eq(count_kind(&d, DEVICE_GPU), 0);
	ck_assert_ptr_null(find_bind(&d, "/.singularity.d/libs/libcuda.so.1"));
	ck_assert_ptr_null(d.lib_dirs);
	/* the fake sysfs the verbs library reads is bound in */
	ck_assert_ptr_nonnull(find_bind(&d, "/sys/class/infiniband"));
	ck_assert_ptr_nonnull(find_bind(&d, "/sys/class/infiniband_verbs"));
	ck_assert_ptr_nonnull(find_bind(&d, "/sys/devices/pci0000:3a"));
	ck_assert_int_eq(d.ptrace_scope, 1);
	ck_assert(has_warning(d.warnings, "ptrace_scope is 1"));
	host_devices_free(&d);
}
END_TEST

START_TEST(test_gpu)
{
	struct host_devices d;
	const char *src;

	discover_ok(full, NULL, true, &d);
	ck_assert_int_eq(find_dev(&d, "/dev/nvidia0")->kind, DEVICE_GPU);
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/nvidia1"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/nvidiactl"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/nvidia-uvm"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/nvidia-uvm-tools"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/nvidia-caps"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/kfd"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/dri"));
	/* driver libraries from the ld cache, the toolkit's not */
	src = find_bind(&d, "/.singularity.d/libs/libcuda.so.1");
	ck_assert_ptr_nonnull(src);
	ck_assert(str_has_prefix(src, full));
	ck_assert_ptr_nonnull(
		find_bind(&d, "/.singularity.d/libs/libnvidia-ml.so.1"));
	ck_assert_ptr_nonnull(find_bind(
		&d, "/.singularity.d/libs/libnvidia-ptxjitcompiler.so.1"));
	ck_assert_ptr_null(find_bind(&d, "/.singularity.d/libs/libcudart.so.12"));
	ck_assert_ptr_nonnull(find_bind(&d, "/usr/bin/nvidia-smi"));
	ck_assert_uint_eq(strv_len(d.lib_dirs), 1);
	ck_assert_str_eq(d.lib_dirs[0], DEVICES_GPU_LIB_DIR);
	host_devices_free(&d);

	/* --gpu on a host without GPUs says so */
	discover_ok(roce, NULL, true, &d);
	ck_assert_uint_eq(count_kind(&d, DEVICE_GPU), 0);
	ck_assert(has_warning(d.warnings, "no GPU device"));
	host_devices_free(&d);
}
END_TEST

static void expect_spec_error(const char *spec, const char *needle)
{
	struct host_devices d;
	mpictr_err *err = NULL;

	ck_assert_int_eq(devices_discover(full, spec, false, &d, &err), -1);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(mpictr_err_message(err), needle),
		      "spec '%s': '%s' lacks '%s'", spec,
		      mpictr_err_message(err), needle);
	mpictr_err_free(err);
}

START_TEST(test_overrides)
{
	struct host_devices d;

	discover_ok(full, "none", false, &d);
	ck_assert_uint_eq(d.ndevs, 0);
	ck_assert_uint_eq(d.nbinds, 0);
	host_devices_free(&d);

	discover_ok(full, "none", true, &d);
	ck_assert_uint_eq(d.ndevs, 0);
	ck_assert(has_warning(d.warnings, "--devices=none"));
	host_devices_free(&d);

	discover_ok(full, "all", false, &d);
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/infiniband/uverbs2"));
	ck_assert(strstr(find_dev(&d, "/dev/infiniband/uverbs2")->reason,
			 "--devices=all"));
	ck_assert(find_hca(&d, "mlx5_2")->exposed);
	ck_assert_uint_eq(count_kind(&d, DEVICE_GPU), 0);
	host_devices_free(&d);

	discover_ok(full, "knem,/dev/infiniband/uverbs1", false, &d);
	ck_assert_uint_eq(d.ndevs, 2);
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/knem"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/infiniband/uverbs1"));
	ck_assert(!find_hca(&d, "mlx5_0")->exposed);
	ck_assert(find_hca(&d, "mlx5_1")->exposed);
	host_devices_free(&d);

	/* naming gpu exposes the nodes, but libraries need --gpu */
	discover_ok(full, "gpu", false, &d);
	ck_assert_uint_gt(count_kind(&d, DEVICE_GPU), 5);
	ck_assert_uint_eq(count_kind(&d, DEVICE_IB), 0);
	ck_assert_ptr_null(find_bind(&d, "/.singularity.d/libs/libcuda.so.1"));
	host_devices_free(&d);

	expect_spec_error("bogus", "unknown kind 'bogus'");
	expect_spec_error("ib,,knem", "empty list element");
	expect_spec_error("/etc/passwd", "not a path under /dev");
	expect_spec_error("/dev/infiniband/uverbs9", "not a device found");
}
END_TEST

START_TEST(test_sysroot_errors)
{
	struct host_devices d;
	mpictr_err *err = NULL;

	ck_assert_int_eq(devices_discover("relative/dir", NULL, false, &d, &err),
			 -1);
	ck_assert(strstr(mpictr_err_message(err), "not an absolute path"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(
		devices_discover("/nonexistent/mpictr", NULL, false, &d, &err),
		-1);
	ck_assert(strstr(mpictr_err_message(err), "'/nonexistent/mpictr'"));
	mpictr_err_free(err);
}
END_TEST

START_TEST(test_umad_readable)
{
	struct host_devices d;
	const struct hca *h;

	discover_ok(roce, NULL, false, &d);
	ck_assert_uint_eq(d.nhcas, 1);
	h = find_hca(&d, "mlx5_0");
	ck_assert_str_eq(h->link_layer, "Ethernet");
	ck_assert(h->active && h->exposed);
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/infiniband/umad0"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/infiniband/issm0"));
	ck_assert_ptr_nonnull(find_dev(&d, "/dev/infiniband/uverbs0"));
	host_devices_free(&d);
}
END_TEST

/* Unreadable nodes: as root every file is readable, so the check runs in a
 * child that drops to nobody first. Bits of the exit status say what
 * failed. */
START_TEST(test_access_rules)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct host_devices d;
		int bad = 0;

		if (geteuid() == 0 &&
		    (setresgid(65534, 65534, 65534) < 0 ||
		     setresuid(65534, 65534, 65534) < 0))
			_exit(100);
		if (devices_discover(full, NULL, false, &d, NULL) < 0)
			_exit(101);
		if (find_dev(&d, "/dev/infiniband/umad0") ||
		    find_dev(&d, "/dev/infiniband/issm0"))
			bad |= 1;
		if (!find_dev(&d, "/dev/infiniband/uverbs0"))
			bad |= 2;
		if (has_warning(d.warnings, "umad"))
			bad |= 4; /* unreadable umad is normal: no warning */
		host_devices_free(&d);
		if (devices_discover(noacc, NULL, false, &d, NULL) < 0)
			_exit(102);
		if (find_dev(&d, "/dev/infiniband/uverbs0"))
			bad |= 8;
		if (!has_warning(d.warnings,
				 "device '/dev/infiniband/uverbs0' is not "
				 "accessible"))
			bad |= 16;
		if (find_hca(&d, "mlx5_0")->exposed)
			bad |= 32;
		host_devices_free(&d);
		/* a root-owned 0755 directory like /dev/dri is usable */
		if (devices_discover(full, "gpu", false, &d, NULL) < 0)
			_exit(103);
		if (!find_dev(&d, "/dev/dri") || !find_dev(&d, "/dev/nvidia-caps"))
			bad |= 64;
		host_devices_free(&d);
		_exit(bad);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

START_TEST(test_hfi1)
{
	struct host_devices d;
	const struct hca *h;

	discover_ok(hfi1, NULL, false, &d);
	ck_assert_uint_eq(d.nhcas, 1);
	h = find_hca(&d, "hfi1_0");
	ck_assert_str_eq(h->driver, "hfi1");
	ck_assert(h->active && h->exposed);
	ck_assert_int_eq(find_dev(&d, "/dev/hfi1_0")->kind, DEVICE_OPA);
	ck_assert_int_eq(find_dev(&d, "/dev/infiniband/uverbs0")->kind,
			 DEVICE_OPA);
	ck_assert_int_eq(d.ptrace_scope, 0);
	ck_assert(!has_warning(d.warnings, "ptrace_scope"));
	host_devices_free(&d);
}
END_TEST

START_TEST(test_cxi_efa_none)
{
	struct host_devices d;

	discover_ok(cxi, NULL, false, &d);
	ck_assert_uint_eq(d.nhcas, 1);
	ck_assert_str_eq(d.hcas[0].name, "cxi0");
	ck_assert_str_eq(d.hcas[0].driver, "cxi");
	ck_assert(d.hcas[0].exposed);
	ck_assert_uint_eq(d.ndevs, 1);
	ck_assert_int_eq(find_dev(&d, "/dev/cxi0")->kind, DEVICE_CXI);
	ck_assert_ptr_nonnull(find_bind(&d, "/sys/class/cxi"));
	host_devices_free(&d);

	discover_ok(efa, NULL, false, &d);
	ck_assert_uint_eq(d.nhcas, 1);
	ck_assert_str_eq(d.hcas[0].driver, "efa");
	ck_assert_str_eq(d.hcas[0].link_layer, "Unknown");
	ck_assert(d.hcas[0].exposed);
	host_devices_free(&d);

	discover_ok(none, NULL, true, &d);
	ck_assert_uint_eq(d.nhcas, 0);
	ck_assert_uint_eq(d.ndevs, 0);
	ck_assert_uint_eq(d.nbinds, 0);
	ck_assert_int_eq(d.ptrace_scope, -1);
	ck_assert(!has_warning(d.warnings, "RLIMIT_MEMLOCK"));
	host_devices_free(&d);
}
END_TEST

START_TEST(test_memlock)
{
	struct rlimit rl;
	struct host_devices d;

	ck_assert_int_eq(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	rl.rlim_cur = 64 * 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	discover_ok(full, NULL, false, &d);
	ck_assert(has_warning(d.warnings, "RLIMIT_MEMLOCK is 64 KiB"));
	host_devices_free(&d);
	/* no RDMA device exposed: no warning */
	discover_ok(full, "knem", false, &d);
	ck_assert(!has_warning(d.warnings, "RLIMIT_MEMLOCK"));
	host_devices_free(&d);
	if (rl.rlim_max == RLIM_INFINITY) {
		rl.rlim_cur = RLIM_INFINITY;
		ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
		discover_ok(full, NULL, false, &d);
		ck_assert(!has_warning(d.warnings, "RLIMIT_MEMLOCK"));
		host_devices_free(&d);
	}
}
END_TEST

static void free_binds(struct devices_bind *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(b[i].src);
		free(b[i].dst);
	}
	free(b);
}

START_TEST(test_verbs_check)
{
	struct host_devices d;
	char **w = NULL;
	struct devices_bind *b = NULL;
	size_t nb = 0;
	mpictr_err *err = NULL;
	cleanup_free char *want = NULL;

	discover_ok(full, NULL, false, &d);
	/* the image has the provider: nothing to say */
	ck_assert_int_eq(verbs_check(&d, full, img_mlx5, false, &w, &b,
					     &nb, &err),
			 0);
	ck_assert_ptr_null(w);
	ck_assert_uint_eq(nb, 0);

	/* it has none: one line for mlx5 (two exposed HCAs, one driver) */
	ck_assert_int_eq(verbs_check(&d, full, img_none, false, &w, &b,
					     &nb, &err),
			 0);
	ck_assert_uint_eq(strv_len(w), 1);
	ck_assert(strstr(w[0], "driver mlx5"));
	ck_assert(strstr(w[0], "--inject-verbs"));
	ck_assert(strstr(w[0], "/etc/libibverbs.d/mlx5.driver"));
	strv_free(w);
	w = NULL;

	/* --inject-verbs: the host's driver file and provider instead */
	ck_assert_int_eq(verbs_check(&d, full, img_none, true, &w, &b,
					     &nb, &err),
			 0);
	ck_assert_ptr_null(w);
	ck_assert_uint_eq(nb, 2);
	want = xasprintf("%s/etc/libibverbs.d/mlx5.driver", full);
	ck_assert_str_eq(b[0].src, want);
	ck_assert_str_eq(b[0].dst, "/etc/libibverbs.d/mlx5.driver");
	ck_assert_str_eq(b[1].dst, "/usr/lib/x86_64-linux-gnu/libibverbs/"
				   "libmlx5-rdmav34.so");
	ck_assert(str_has_prefix(b[1].src, full));
	ck_assert_int_eq(access(b[1].src, R_OK), 0);
	free_binds(b, nb);
	b = NULL;
	nb = 0;

	ck_assert_int_eq(verbs_check(&d, full, "/nonexistent/img", false,
					     &w, &b, &nb, &err),
			 -1);
	ck_assert(strstr(mpictr_err_message(err), "'/nonexistent/img'"));
	mpictr_err_free(err);
	err = NULL;
	host_devices_free(&d);

	/* hfi1 against an image with only mlx5 */
	discover_ok(hfi1, NULL, false, &d);
	ck_assert_int_eq(verbs_check(&d, hfi1, img_mlx5, false, &w, &b,
					     &nb, &err),
			 0);
	ck_assert_uint_eq(strv_len(w), 1);
	ck_assert(strstr(w[0], "hfi1_0 uses driver hfi1"));
	ck_assert(strstr(w[0], "hfi1verbs.driver"));
	strv_free(w);
	w = NULL;
	/* the host's provider has ABI rdmav34, the image's others rdmav25 */
	{
		cleanup_free char *dir = xasprintf(
			"%s/img_old/usr/lib/x86_64-linux-gnu/libibverbs", base);
		cleanup_free char *cmd =
			xasprintf("mkdir -p '%s' && touch "
				  "'%s/libmlx4-rdmav25.so'",
				  dir, dir);
		cleanup_free char *img = xasprintf("%s/img_old", base);
		ck_assert_int_eq(system(cmd), 0);
		ck_assert_int_eq(verbs_check(&d, hfi1, img, true, &w,
						     &b, &nb, &err),
				 0);
		ck_assert_uint_eq(nb, 0);
		ck_assert_uint_eq(strv_len(w), 1);
		ck_assert(strstr(w[0], "ABI rdmav25"));
		strv_free(w);
	}
	host_devices_free(&d);
}
END_TEST

/* The ld cache reader against ldconfig's own listing of the same file. */
START_TEST(test_ldcache)
{
	cleanup_free char *cache = xasprintf("%s/etc/ld.so.cache", full);
	cleanup_free char *cmd =
		xasprintf("/sbin/ldconfig -p -C '%s'", cache);
	cleanup_strv char **keys = NULL, **vals = NULL, **want = NULL;
	mpictr_err *err = NULL;
	FILE *p;
	char line[4096];
	size_t nwant = 0;
	bool cuda = false;

	ck_assert_int_eq(ldcache_read(cache, &keys, &vals, &err), 0);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		char *k = line + strspn(line, " \t");
		char *sp = strchr(k, ' ');
		bool dup = false;
		if (!sp || !strstr(line, "(libc6,x86-64"))
			continue;
		*sp = '\0';
		for (size_t i = 0; want && want[i]; i++)
			if (strcmp(want[i], k) == 0)
				dup = true;
		if (!dup) {
			strv_push(&want, k);
			nwant++;
		}
	}
	ck_assert_int_eq(pclose(p), 0);
	ck_assert_uint_gt(nwant, 10);
	ck_assert_uint_eq(strv_len(keys), nwant);
	for (size_t i = 0; keys[i]; i++) {
		bool found = false;
		for (size_t j = 0; want[j] && !found; j++)
			found = strcmp(want[j], keys[i]) == 0;
		ck_assert_msg(found, "'%s' not in ldconfig -p", keys[i]);
		if (strcmp(keys[i], "libcuda.so.1") == 0) {
			ck_assert(str_has_prefix(vals[i], full));
			cuda = true;
		}
	}
	ck_assert(cuda);
	strv_free(keys);
	strv_free(vals);
	ck_assert_int_eq(ldcache_read("/nonexistent", &keys, &vals,
					      &err),
			 -1);
	ck_assert_ptr_null(keys);
	mpictr_err_free(err);
}
END_TEST

static bool lines_ok(const char *report)
{
	cleanup_free char *copy = xstrdup(report);
	char *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (str_has_prefix(l, "ok: "))
			continue;
		if (str_has_prefix(l, "problem: ") && strstr(l, "(fix: "))
			continue;
		return false;
	}
	return true;
}

START_TEST(test_check_report)
{
	cleanup_free char *helper =
		xasprintf("%s/build/libexec/mpictr-ucx-query", test_root());
	struct strbuf sb = STRBUF_INIT;
	mpictr_err *err = NULL;
	int blocking = 0;

	ck_assert_int_eq(check_devices_report(full, helper, &sb, &blocking,
					      &err),
			 0);
	ck_assert_msg(lines_ok(sb.buf), "bad line in:\n%s", sb.buf);
	ck_assert_msg(strstr(sb.buf, "ok: UCX sees") &&
			      strstr(sb.buf, " posix/memory"),
		      "%s", sb.buf);
	ck_assert(strstr(sb.buf, "mlx5_0:1 mlx5 InfiniBand ACTIVE numa 0"));
	ck_assert(strstr(sb.buf, "mlx5_2:1 mlx5 InfiniBand DOWN numa 1"));
	ck_assert(strstr(sb.buf, "problem: Yama ptrace_scope is 1"));
	ck_assert(strstr(sb.buf, "RLIMIT_MEMLOCK"));
	ck_assert_int_eq(blocking, 0);
	sb_free(&sb);

	ck_assert_int_eq(check_devices_report(none, NULL, &sb, &blocking, &err),
			 0);
	ck_assert_msg(lines_ok(sb.buf), "bad line in:\n%s", sb.buf);
	ck_assert(!strstr(sb.buf, "UCX"));
	ck_assert(strstr(sb.buf, "ok: sysfs: no RDMA device"));
	ck_assert(strstr(sb.buf, "ok: Yama ptrace_scope not present"));
	sb_free(&sb);

	ck_assert_int_eq(check_devices_report(noacc, "/nonexistent/helper", &sb,
					      &blocking, &err),
			 0);
	ck_assert_msg(lines_ok(sb.buf), "bad line in:\n%s", sb.buf);
	ck_assert(strstr(sb.buf, "problem: UCX device query failed"));
	if (geteuid() != 0)
		ck_assert(strstr(sb.buf, "problem: device "
					 "'/dev/infiniband/uverbs0'"));
	sb_free(&sb);
}
END_TEST

Suite *suite_devices(void);
Suite *suite_devices(void)
{
	Suite *s = suite_create("devices");
	TCase *tc = tcase_create("discovery");

	tcase_add_unchecked_fixture(tc, trees_setup, trees_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_kind_names);
	tcase_add_test(tc, test_mlx5_default);
	tcase_add_test(tc, test_gpu);
	tcase_add_test(tc, test_overrides);
	tcase_add_test(tc, test_sysroot_errors);
	tcase_add_test(tc, test_umad_readable);
	tcase_add_test(tc, test_access_rules);
	tcase_add_test(tc, test_hfi1);
	tcase_add_test(tc, test_cxi_efa_none);
	tcase_add_test(tc, test_memlock);
	tcase_add_test(tc, test_verbs_check);
	tcase_add_test(tc, test_ldcache);
	tcase_add_test(tc, test_check_report);
	suite_add_tcase(s, tc);
	return s;
}
