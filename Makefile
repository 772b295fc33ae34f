# mpictr - plain, strict Makefile. `make`, `make check`, `make bench`,
# `make fuzz`, `make install PREFIX=... DESTDIR=...`, `make uninstall`,
# `make clean`. DEBUG=1 adds ASan/UBSan; WERROR=1 makes warnings fatal (CI).

VERSION    := 0.1.0
SOVERSION  := 0

PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LIBEXECDIR ?= $(PREFIX)/libexec/mpictr
PLUGINDIR  ?= $(LIBDIR)/mpictr
MANDIR     ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR    ?=

CC         ?= cc
CLANG      ?= clang
PKG_CONFIG ?= pkg-config
B          := build

# Dependencies, each kept to the files that use it.
DEPS_FUSE  := squashfuse_ll fuse3 libdeflate
DEPS_PMIX  := pmix
DEPS_ALL   := libcap $(DEPS_FUSE) $(DEPS_PMIX)
FUSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(DEPS_FUSE))
PMIX_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(DEPS_PMIX))
BASE_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcap)
# libmpictr itself needs only libcap (mount(2), and the new mount API
# through runtime/common/syscalls.h: nothing calls libmount); libpmix and
# libsquashfuse/libfuse3 are linked into the two plugins (runtime/common/plugin.h)
# that the processes serving PMIx or mounting an image load on first use.
DEPS_BASE  := libcap
DEP_LIBS   := $(shell $(PKG_CONFIG) --libs $(DEPS_BASE)) -lpthread
FUSE_LIBS  := $(shell $(PKG_CONFIG) --libs $(DEPS_FUSE))
PMIX_LIBS  := $(shell $(PKG_CONFIG) --libs $(DEPS_PMIX)) -lpthread
# `mpictr pull` (runtime/pull/, the plugin mpictr-pull.so only): tar and
# its compressions, the squashfs writer, JSON that rejects duplicate keys,
# sha256, and the registry's HTTP.
DEPS_PULL  := libarchive libsquashfs1 jansson libcrypto libcurl
PULL_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(DEPS_PULL))
PULL_LIBS  := $(shell $(PKG_CONFIG) --libs $(DEPS_PULL)) -lpthread
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check)
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check)

WARN := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wformat-nonliteral -Wswitch-default \
	-Wimplicit-function-declaration -Wpointer-arith -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif

HARDEN := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIC
ifeq ($(DEBUG),1)
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined
SAN_LDFLAGS := -fsanitize=address,undefined
HARDEN := -fPIC
else
OPT := -O2 -g
SAN_LDFLAGS :=
endif

CPPFLAGS_ALL := -D_GNU_SOURCE -DMPICTR_VERSION_STRING='"$(VERSION)"' \
	-DMPICTR_LIBEXECDIR='"$(LIBEXECDIR)"' -DMPICTR_PLUGINDIR='"$(PLUGINDIR)"' \
	-DMPICTR_SITE_CONF='"$(SYSCONFDIR)/mpictr/mpictr.conf"' -I. -Iruntime
CFLAGS_ALL := -std=gnu11 $(OPT) $(HARDEN) -fvisibility=hidden $(WARN) \
	$(BASE_CFLAGS) $(CFLAGS)
LDFLAGS_ALL := -Wl,-z,relro,-z,now $(SAN_LDFLAGS) $(LDFLAGS)

# The plugins: their own sources, plus a copy of the pure helpers with
# logging routed to the host (error.c built with MPICTR_PLUGIN_BUILD).
PLUGIN_NAMES := pmix squash pull verify verify-pgp seccomp
PLUGIN_SRCS_pmix := pmi/pmix_server.c pmi/pmix_dyn.c pmi/pmix_gate.c pmi/upstream.c \
	pmi/pmix_plugin.c pmi/pmix_register.c
PLUGIN_SRCS_squash := sif/squash.c sif/squash_plugin.c
# --fakeroot's system call filter (runtime/container/seccomp.h): libseccomp
PLUGIN_SRCS_seccomp := runtime/container/seccomp.c
# pull_stub.c is the host side (in libmpictr); the rest is the plugin.
# pull_run.c and cache.c (pure POSIX: a run finds a cached image without
# the plugin) are in libmpictr too.
PULL_HOST_SRCS := runtime/pull/pull_stub.c runtime/pull/pull_run.c runtime/pull/cache.c
PLUGIN_SRCS_pull := $(filter-out $(PULL_HOST_SRCS),$(wildcard runtime/pull/*.c))
# Signatures (docs/signing.md): OpenSSL 3 for DSSE's PEM keys and the
# digests; mpictr-verify-pgp.so adds RNP for OpenPGP keys. Loaded only to
# check or make a signature, the RNP one only for an OpenPGP key.
PLUGIN_SRCS_verify := sif/verify.c sif/vkeys.c sif/sign.c sif/verify_plugin.c \
	sif/vkeys_nopgp.c
PLUGIN_SRCS_verify-pgp := sif/vkeys_pgp.c
PLUGIN_ONLY_SRCS := $(foreach p,$(PLUGIN_NAMES),$(PLUGIN_SRCS_$(p)))
PLUGIN_BASE_OBJS := $(B)/obj-plugin/runtime/common/error.o $(B)/obj/runtime/common/util.o
PLUGIN_EXTRA_pmix := $(B)/obj/pmi/job.o $(B)/obj/pmi/pubstore.o $(B)/obj/pmi/spawnreq.o \
	$(B)/obj/pmi/pmix_peer.o \
	$(B)/obj/runtime/common/proc.o $(B)/obj/runtime/common/syscalls.o
# The superblock check and compressor names (image.c, which reads SIF
# partitions through sif.c): the ones the library uses; the process layer
# for the FUSE workers' fork.
PLUGIN_EXTRA_squash := $(B)/obj/sif/image.o $(B)/obj/sif/sif.o \
	$(B)/obj/runtime/common/proc.o $(B)/obj/runtime/common/syscalls.o
PLUGIN_EXTRA_verify := $(B)/obj/sif/sif.o $(B)/obj/sif/sigobj.o $(B)/obj/sif/vreport.o \
	$(B)/obj/sif/sif_write.o $(B)/obj/sif/image.o $(B)/obj/runtime/common/proc.o \
	$(B)/obj/runtime/common/syscalls.o
PLUGIN_EXTRA_verify-pgp := $(filter-out $(B)/obj/sif/vkeys_nopgp.o,$(PLUGIN_SRCS_verify:%.c=$(B)/obj/%.o)) \
	$(PLUGIN_EXTRA_verify)
VERIFY_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcrypto 2>/dev/null)
PGP_CFLAGS := $(shell $(PKG_CONFIG) --cflags librnp 2>/dev/null)
PLUGIN_LIBS_verify := $(shell $(PKG_CONFIG) --libs libcrypto 2>/dev/null)
PLUGIN_LIBS_verify-pgp := $(PLUGIN_LIBS_verify) $(shell $(PKG_CONFIG) --libs librnp 2>/dev/null)
PLUGIN_EXTRA_pull := $(B)/obj/sif/sif.o $(B)/obj/sif/sif_write.o $(B)/obj/sif/image.o \
	$(B)/obj/runtime/config/imageref.o $(B)/obj/runtime/pull/cache.o \
	$(B)/obj/runtime/common/proc.o $(B)/obj/runtime/common/syscalls.o
PLUGIN_LIBS_pmix := $(PMIX_LIBS)
PLUGIN_LIBS_pull := $(PULL_LIBS)
PLUGIN_LIBS_squash := $(FUSE_LIBS)
PLUGIN_LIBS_seccomp := $(shell $(PKG_CONFIG) --libs libseccomp 2>/dev/null || echo -lseccomp)
PLUGINS := $(PLUGIN_NAMES:%=$(B)/plugins/mpictr-%.so)

# The Slurm SPANK plugin (runtime/spank/): built where Slurm's spank.h is
# installed (Debian: libslurm-dev). It links libmpictr statically, so that
# slurmstepd needs no library path for it; its only exports are the SPANK
# symbols (runtime/spank/spank.map). The slurm_* functions it calls are srun's and
# slurmstepd's own.
SLURM_INCLUDE ?= /usr/include
SPANK_PLUGIN := $(if $(wildcard $(SLURM_INCLUDE)/slurm/spank.h),$(B)/plugins/mpictr-spank.so)

LIB_SRCS := $(sort $(filter-out runtime/main.c $(PLUGIN_ONLY_SRCS),$(wildcard runtime/*.c runtime/common/*.c runtime/config/*.c runtime/sched/*.c runtime/host/*.c runtime/plan/*.c runtime/container/*.c runtime/modes/*.c runtime/pull/*.c sif/*.c pmi/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/obj/%.o)
# The command line: main.c's table of verbs and a file per verb (runtime/cli/),
# on the public API only; never in the library.
CLI_SRCS := runtime/main.c $(sort $(wildcard runtime/cli/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(B)/obj/%.o)
HELPER_SRCS := $(wildcard runtime/helpers/*.c)
HELPERS  := $(HELPER_SRCS:runtime/helpers/%.c=$(B)/libexec/%)

STATIC_LIB := $(B)/libmpictr.a
SHARED_LIB := $(B)/libmpictr.so.$(VERSION)
SONAME     := libmpictr.so.$(SOVERSION)
CLI        := $(B)/mpictr

.PHONY: all lib cli check check-root unit integration bench reliability fuzz install uninstall \
	clean format format-check test-images
all: lib cli $(PLUGINS) $(SPANK_PLUGIN) $(HELPERS) $(B)/mpictr.pc

lib: $(STATIC_LIB) $(SHARED_LIB)
cli: $(CLI)

$(B)/obj/sif/squash.o: EXTRA_CFLAGS := $(FUSE_CFLAGS)
$(B)/obj/pmi/%.o: EXTRA_CFLAGS := $(PMIX_CFLAGS)
$(B)/obj/sif/vkeys.o: EXTRA_CFLAGS := $(VERIFY_CFLAGS)
$(B)/obj/sif/vkeys_pgp.o: EXTRA_CFLAGS := $(PGP_CFLAGS)
$(B)/obj/runtime/pull/%.o: EXTRA_CFLAGS := $(PULL_CFLAGS)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) $(EXTRA_CFLAGS) -MMD -MP -c -o $@ $<

# The installation paths are compiled in (the plugins, the UCX helper, the
# site configuration): the objects that use them are rebuilt whenever they
# change, e.g. by `make install PREFIX=...` after a plain `make`.
PATHS_STAMP := $(B)/paths.stamp
PATHS_VALUE := $(PLUGINDIR):$(LIBEXECDIR):$(SYSCONFDIR)
$(shell mkdir -p $(B) && { [ "$$(cat $(PATHS_STAMP) 2>/dev/null)" = '$(PATHS_VALUE)' ] || printf '%s' '$(PATHS_VALUE)' >$(PATHS_STAMP); })
$(B)/obj/runtime/common/plugin.o $(B)/obj/runtime/preflight.o $(B)/obj/runtime/host/ucx.o \
	$(B)/obj/runtime/config/config.o: $(PATHS_STAMP)

$(B)/obj-plugin/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -DMPICTR_PLUGIN_BUILD $(CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

define plugin_rule
$(B)/plugins/mpictr-$(1).so: $(PLUGIN_SRCS_$(1):%.c=$(B)/obj/%.o) $(PLUGIN_EXTRA_$(1)) $(PLUGIN_BASE_OBJS) runtime/common/plugin.map
	@mkdir -p $$(dir $$@)
	$$(CC) -shared -Wl,--version-script=runtime/common/plugin.map -Wl,-z,defs $$(LDFLAGS_ALL) \
		-o $$@ $$(filter %.o,$$^) $$(PLUGIN_LIBS_$(1))
endef
$(foreach p,$(PLUGIN_NAMES),$(eval $(call plugin_rule,$(p))))

$(B)/obj/runtime/spank/%.o: EXTRA_CFLAGS := -I$(SLURM_INCLUDE) -fvisibility=default
$(B)/plugins/mpictr-spank.so: $(B)/obj/runtime/spank/mpictr_spank.o $(STATIC_LIB) runtime/spank/spank.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--version-script=runtime/spank/spank.map $(LDFLAGS_ALL) -o $@ \
		$(B)/obj/runtime/spank/mpictr_spank.o $(STATIC_LIB) $(DEP_LIBS)

$(STATIC_LIB): $(LIB_OBJS)
	@mkdir -p $(B)
	rm -f $@
	$(AR) rcs $@ $^

# libmpictr.so exports the public API only (no libc symbol: the PMIx
# guard reaches libpmix through libpmix's own relocation slots).
$(SHARED_LIB): $(LIB_OBJS) runtime/libmpictr.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=runtime/libmpictr.map \
		-Wl,-z,defs $(LDFLAGS_ALL) -o $@ $(LIB_OBJS) $(DEP_LIBS)
	ln -sf libmpictr.so.$(VERSION) $(B)/$(SONAME)
	ln -sf $(SONAME) $(B)/libmpictr.so

$(CLI): $(CLI_OBJS) $(STATIC_LIB)
	$(CC) -pie $(LDFLAGS_ALL) -o $@ $(CLI_OBJS) $(STATIC_LIB) $(DEP_LIBS)

# Short-lived helper programs (e.g. the UCX query): never linked into the
# library, so libucs' signal handlers and printing stay out of embedders.
HELPER_PKGS_mpictr-ucx-query := ucx-uct ucx-ucs

$(B)/libexec/%: runtime/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -pie -o $@ $< $(LDFLAGS_ALL) \
		$(shell $(PKG_CONFIG) --cflags --libs $(HELPER_PKGS_$*) 2>/dev/null)

# Written again at install time, so a PREFIX given to `make install` is
# the one the installed file names.
define write_pc
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
		'Name: mpictr' 'Description: rootless container engine for MPI jobs' \
		'Version: $(VERSION)' 'Libs: -L$${libdir} -lmpictr' \
		'Requires.private: $(DEPS_BASE)' 'Libs.private: -lpthread' \
		'Cflags: -I$${includedir}' > $(1)
endef
$(B)/mpictr.pc: Makefile
	@mkdir -p $(B)
	$(call write_pc,$@)

# ---- tests ----------------------------------------------------------------
UNIT_SRCS := $(sort $(wildcard tests/unit/check_*.c))
UNIT_NAMES := $(UNIT_SRCS:tests/unit/check_%.c=%)
TEST_HELPER_SRCS := $(wildcard tests/helpers/*.c)
TEST_HELPERS := $(TEST_HELPER_SRCS:tests/helpers/%.c=$(B)/tests/%) $(B)/tests/escape-probe \
	$(B)/tests/fakeroot-probe

$(B)/tests/suites.h: $(UNIT_SRCS) Makefile
	@mkdir -p $(dir $@)
	for n in $(UNIT_NAMES); do echo "SUITE($$n)"; done > $@

# The PMIx gate lives in the pmix plugin but needs no libpmix: its object
# is linked in for its unit tests; so are the pull plugin's pure parts
# (credentials, the OCI model: jansson only).
UNIT_PLUGIN_OBJS := $(B)/obj/pmi/pmix_gate.o $(B)/obj/runtime/pull/auth.o \
	$(B)/obj/runtime/pull/oci.o
$(B)/tests/check_unit: tests/unit/main.c $(UNIT_SRCS) $(B)/tests/suites.h $(STATIC_LIB) \
		$(UNIT_PLUGIN_OBJS)
	$(CC) $(CPPFLAGS_ALL) -I$(B)/tests -Itests/unit $(CFLAGS_ALL) $(CHECK_CFLAGS) \
		-o $@ tests/unit/main.c $(UNIT_SRCS) $(UNIT_PLUGIN_OBJS) \
		$(LDFLAGS_ALL) $(STATIC_LIB) $(DEP_LIBS) $(CHECK_LIBS) \
		$(shell $(PKG_CONFIG) --libs jansson libcrypto)

$(B)/tests/%: tests/helpers/%.c $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< \
		$(LDFLAGS_ALL) $(STATIC_LIB) $(DEP_LIBS)

# The isolation probe runs inside the (busybox-only) test image: static,
# and no libmpictr.
$(B)/tests/escape-probe: tests/probes/escape.c
	@mkdir -p $(dir $@)
	$(CC) -static -O2 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -o $@ $<
$(B)/tests/fakeroot-probe: tests/probes/fakeroot.c
	@mkdir -p $(dir $@)
	$(CC) -static -O2 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -o $@ $<

# The unit tests load the plugins and run the helpers (the UCX query).
unit: $(B)/tests/check_unit $(PLUGINS) $(HELPERS)
	MPICTR_TEST_ROOT=$(CURDIR) $(B)/tests/check_unit

# TESTS="tests/integration/00-cli.sh ...": only those (default: all).
integration: all $(TEST_HELPERS)
	MPICTR_TEST_ROOT=$(CURDIR) tests/run-integration.sh $(TESTS)

# The layers: includes point down only, by the table in
# docs/architecture.md (tests/tools/layers.sh), and no circles between the
# files of runtime/, sif/, pmi/ (circles.py, ctags).
.PHONY: check-layers check-docmap check-names check-voice check-forks check-tools fuzz-run
check-layers:
	tests/tools/layers.sh
	python3 tests/tools/circles.py
# Every source file is named in docs/architecture.md's module map.
check-docmap:
	tests/tools/docmap.sh
# Every file a comment or a doc names exists.
check-names:
	python3 tests/tools/names.py
# The docs speak for the project: not who measured, no machine's paths.
check-voice:
	tests/tools/voice.sh
# Every fork goes through proc.c, but the one docs/architecture.md names.
check-forks:
	tests/tools/forks.sh
# Each of these checks fails on a planted fault (tests/tools/selftest.sh).
check-tools:
	tests/tools/selftest.sh

export LSAN_OPTIONS = suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
check: check-layers check-docmap check-names check-voice check-forks check-tools all $(B)/tests/check_unit $(TEST_HELPERS)
	MPICTR_TEST_ROOT=$(CURDIR) $(B)/tests/check_unit
	MPICTR_TEST_ROOT=$(CURDIR) tests/run-integration.sh

# Tests that need root (two test users against each other); .ci/run runs
# them after `make check`.
check-root: all $(TEST_HELPERS)
	MPICTR_TEST_ROOT=$(CURDIR) tests/integration-root/run.sh

# Test images (tests/images/build.sh): tiny and mpi, rootfs + squashfs +
# SIF in build/images/; does nothing when its inputs did not change.
test-images: $(CLI)
	tests/images/build.sh $(B)/images all

# Fault injection, soak and load (tests/reliability/; long: not in check).
reliability: all $(TEST_HELPERS)
	MPICTR_TEST_ROOT=$(CURDIR) tests/reliability/run.sh

bench: all $(TEST_HELPERS)
	MPICTR_TEST_ROOT=$(CURDIR) tests/bench/run.sh

# ---- fuzzing (libFuzzer + ASan/UBSan, clang) --------------------------------
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS := $(FUZZ_SRCS:tests/fuzz/%.c=$(B)/fuzz/%)
# pmi/pmi1_wire.c is pure (no PMIx), so the PMI-1 fuzz target can use it.
# The pure parsers of untrusted input and what they need; no namespaces,
# FUSE or PMIx in the fuzzers.
FUZZ_LIB_SRCS := runtime/common/error.c runtime/common/util.c runtime/config/config.c runtime/config/bindspec.c \
	runtime/host/ldcache.c runtime/common/proc.c runtime/common/syscalls.c \
	runtime/sched/slurm.c runtime/host/launcher.c pmi/pmi1_wire.c \
	$(filter-out sif/squash% $(PLUGIN_SRCS_verify) $(PLUGIN_SRCS_verify-pgp),$(wildcard sif/*.c)) \
	runtime/common/plugin.c $(wildcard runtime/config/siteconf.c)
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11 $(CPPFLAGS_ALL) $(BASE_CFLAGS) $(PMIX_CFLAGS)
# Targets may name the few sources they need (launch.c needs pmi/).
FUZZ_SRCS_fuzz_siteconf := runtime/config/siteconf.c runtime/config/config.c runtime/config/bindspec.c \
	runtime/host/mpiinject.c runtime/host/imgread.c sif/squash_stub.c runtime/common/plugin.c \
	runtime/common/error.c runtime/common/util.c runtime/common/syscalls.c runtime/common/proc.c \
	runtime/host/ldcache.c
FUZZ_SRCS_fuzz_envfile := runtime/common/error.c runtime/common/util.c
FUZZ_SRCS_fuzz_elf := runtime/host/mpiinject.c runtime/host/imgread.c runtime/host/ldcache.c \
	sif/squash_stub.c runtime/common/plugin.c runtime/common/error.c runtime/common/util.c \
	runtime/common/syscalls.c runtime/common/proc.c
FUZZ_SRCS_fuzz_bind := runtime/config/bindspec.c runtime/common/error.c runtime/common/util.c
FUZZ_SRCS_fuzz_ldcache := runtime/host/ldcache.c runtime/common/error.c runtime/common/util.c
# The squash plugin's image reader, linked with libsquashfuse (not
# instrumented) as the plugin is; the directory image reader alone.
FUZZ_SRCS_fuzz_squash := sif/squash.c sif/image.c sif/sif.c runtime/common/error.c \
	runtime/common/util.c runtime/common/proc.c runtime/common/syscalls.c
FUZZ_CFLAGS_fuzz_squash := $(FUSE_CFLAGS)
FUZZ_LIBS_fuzz_squash := $(FUSE_LIBS)
FUZZ_SRCS_fuzz_pmixhello := pmi/pmix_peer.c runtime/common/error.c runtime/common/util.c
FUZZ_SRCS_fuzz_imgread := runtime/host/imgread.c sif/squash_stub.c runtime/common/plugin.c \
	runtime/common/error.c runtime/common/util.c runtime/common/syscalls.c runtime/common/proc.c
FUZZ_SRCS_fuzz_imageref := runtime/config/imageref.c runtime/common/error.c runtime/common/util.c
$(B)/fuzz/fuzz_imageref: $(FUZZ_SRCS_fuzz_imageref)
FUZZ_SRCS_fuzz_ociconfig := runtime/config/ociconfig.c runtime/common/error.c runtime/common/util.c
# The pull plugin's archive reader, layer merge and squashfs writer, with
# the libraries the plugin links (not instrumented).
FUZZ_SRCS_fuzz_pull := runtime/pull/store.c runtime/pull/merge.c runtime/pull/tree.c \
	runtime/pull/sqfs.c runtime/pull/oci.c runtime/pull/cache.c runtime/common/error.c \
	runtime/common/util.c runtime/common/proc.c runtime/common/syscalls.c
FUZZ_CFLAGS_fuzz_pull := $(PULL_CFLAGS)
FUZZ_LIBS_fuzz_pull := $(PULL_LIBS)
$(B)/fuzz/fuzz_pull: $(FUZZ_SRCS_fuzz_pull)
# The OCI model (media types, layer check, platform pick) over manifests
# and indexes.
FUZZ_SRCS_fuzz_oci_manifest := runtime/pull/oci.c runtime/pull/cache.c runtime/common/error.c \
	runtime/common/util.c runtime/common/proc.c runtime/common/syscalls.c
FUZZ_CFLAGS_fuzz_oci_manifest := $(PULL_CFLAGS)
FUZZ_LIBS_fuzz_oci_manifest := $(PULL_LIBS)
$(B)/fuzz/fuzz_oci_manifest: $(FUZZ_SRCS_fuzz_oci_manifest)
$(B)/fuzz/fuzz_ociconfig: $(FUZZ_SRCS_fuzz_ociconfig)
FUZZ_SRCS_fuzz_regauth := runtime/pull/auth.c runtime/common/error.c runtime/common/util.c
FUZZ_CFLAGS_fuzz_regauth := $(shell $(PKG_CONFIG) --cflags jansson)
FUZZ_LIBS_fuzz_regauth := $(shell $(PKG_CONFIG) --libs jansson)
$(B)/fuzz/fuzz_regauth: $(FUZZ_SRCS_fuzz_regauth)
# The keepers' wire protocol: its parsers and receivers (a socketpair).
FUZZ_SRCS_fuzz_wire := runtime/modes/wire.c runtime/common/error.c runtime/common/util.c
$(B)/fuzz/fuzz_wire: $(FUZZ_SRCS_fuzz_wire)
fuzz: $(FUZZERS)
# Every fuzz target for FUZZ_SECONDS (default 20) on a copy of its seed
# corpus (CI: .ci/run); a crash or leak fails it and leaves crash-* files.
FUZZ_SECONDS ?= 20
fuzz-run: $(FUZZERS)
	@set -e; for f in $(FUZZERS); do \
		t=$${f##*/fuzz_}; c=$$(mktemp -d); \
		cp -r tests/fuzz/corpus/$$t/. $$c/ 2>/dev/null || true; \
		echo "== $$f ($(FUZZ_SECONDS) s, $$(ls $$c | wc -l) seeds)"; \
		rc=0; $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(B)/fuzz/crash-$$t- $$c >$$c.log 2>&1 || rc=$$?; \
		grep -E '^(stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)' $$c.log || true; \
		[ "$$rc" = 0 ] || tail -40 $$c.log; \
		rm -rf $$c $$c.log; [ "$$rc" = 0 ]; \
	done
$(B)/fuzz/fuzz_squash: $(FUZZ_SRCS_fuzz_squash)
$(B)/fuzz/fuzz_imgread: $(FUZZ_SRCS_fuzz_imgread)
$(B)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_check.h $(FUZZ_LIB_SRCS)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_FLAGS) $(FUZZ_CFLAGS_$*) -fsanitize=fuzzer -o $@ $< \
		$(or $(FUZZ_SRCS_$*),$(FUZZ_LIB_SRCS)) \
		$(shell $(PKG_CONFIG) --libs libcap) $(FUZZ_LIBS_$*) -lpthread

# ---- install ----------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(LIBEXECDIR) \
		$(DESTDIR)$(PLUGINDIR)
	install -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/mpictr
	install -m 0644 $(PLUGINS) $(SPANK_PLUGIN) $(DESTDIR)$(PLUGINDIR)/
	install -m 0644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/libmpictr.a
	install -m 0755 $(SHARED_LIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libmpictr.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libmpictr.so
	install -m 0644 runtime/mpictr.h $(DESTDIR)$(INCLUDEDIR)/mpictr.h
	$(call write_pc,$(DESTDIR)$(PKGCONFIGDIR)/mpictr.pc)
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/mpictr.pc
	for h in $(HELPERS); do install -m 0755 $$h $(DESTDIR)$(LIBEXECDIR)/; done
	install -m 0644 docs/mpictr.1 $(DESTDIR)$(MANDIR)/man1/mpictr.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/mpictr $(DESTDIR)$(LIBDIR)/libmpictr.a \
		$(DESTDIR)$(LIBDIR)/libmpictr.so* $(DESTDIR)$(INCLUDEDIR)/mpictr.h \
		$(DESTDIR)$(PKGCONFIGDIR)/mpictr.pc $(DESTDIR)$(MANDIR)/man1/mpictr.1
	rm -rf $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(PLUGINDIR)

clean:
	rm -rf $(B)

FORMAT_SRCS = $(filter-out runtime/helpers/%,$(wildcard runtime/*.[ch] runtime/*/*.[ch] sif/*.[ch] pmi/*.[ch]))
format:
	clang-format --style=file:docs/clang-format -i $(FORMAT_SRCS)
format-check:
	clang-format --style=file:docs/clang-format --dry-run --Werror $(FORMAT_SRCS)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(B)/obj/runtime/spank/mpictr_spank.d \
	$(PLUGIN_ONLY_SRCS:%.c=$(B)/obj/%.d) $(B)/obj-plugin/runtime/common/error.d
