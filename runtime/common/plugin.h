/* plugin.h - the parts of libmpictr that need heavy libraries, loaded on
 * first use.
 *
 * The plugins: "pull" (runtime/pull/: libarchive, libsquashfs, jansson,
 * libcrypto, libcurl; only `mpictr pull` and an IMAGE to pull load it), "pmix"
 * (pmi/pmix_server.c, pmi/upstream.c: libpmix and with it hwloc, libevent,
 * munge and udev), "squash" (sif/squash.c: libsquashfuse, libfuse3 and five
 * decompressors) and "seccomp" (runtime/container/seccomp.c: libseccomp,
 * loaded by a --fakeroot rank). Only the processes that serve PMIx or mount an
 * image load them, and those that read a squashfs image before mounting it
 * (--dry-run; outside join mode on a node with HCAs or with a profile's host
 * MPI, for the verbs decision and the MPI ABI check: imgread.c). A Slurm task
 * that joins its node's container (srun ... mpictr IMAGE CMD, one mpictr per
 * task) maps neither, which halves the start-up cost of every task
 * (docs/bench-slurm.md).
 *
 * The host side (sif/squash_stub.c, pmi/pmix_stub.c) keeps the functions of
 * squash.h and pmi.h and forwards each call to the plugin's table. A plugin
 * links its own copy of the pure helpers (runtime/common/util.c,
 * runtime/common/error.c built with MPICTR_PLUGIN_BUILD), and its log messages
 * go through the host's sink. Nothing is exported from a plugin but
 * mpictr_plugin_init.
 */
#ifndef MPICTR_PLUGIN_H
#define MPICTR_PLUGIN_H

#include "common/plugin_host.h"
#include "mpictr.h"

#define MPICTR_PLUGIN_INIT "mpictr_plugin_init"

/* The one symbol a plugin exports: the plugin's table of functions, or
 * NULL when host->abi or host->version is not the plugin's own. */
typedef const void *(*mpictr_plugin_init_fn)(const struct plugin_host *host);

/* Plugin side: define the init function that returns `table`. */
#define MPICTR_PLUGIN_DEFINE(table)                                            \
	MPICTR_PUBLIC const void *mpictr_plugin_init(                          \
	    const struct plugin_host *host);                                   \
	MPICTR_PUBLIC const void *mpictr_plugin_init(                          \
	    const struct plugin_host *host)                                    \
	{                                                                      \
		if (!host || host->abi != MPICTR_PLUGIN_ABI ||                 \
		    strcmp(host->version, MPICTR_VERSION_STRING) != 0)         \
			return NULL;                                           \
		plugin_attach_host(host);                                      \
		return &(table);                                               \
	}

/* Host side: the table of plugin `name` ("pmix", "squash"), loading it on
 * the first call (thread-safe; loaded once per process and never
 * unloaded). The file mpictr-NAME.so is looked for next to the code that
 * calls this (DIR/plugins/ and DIR/../plugins/, DIR being the directory of
 * the mpictr executable or of libmpictr.so: the build tree), then in
 * MPICTR_PLUGINDIR. NULL with *err set when it cannot be loaded. */
const void *plugin_load(const char *name, mpictr_err **err);

#endif
