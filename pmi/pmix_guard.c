/* pmix_guard.c - mpictr's accept(): no connection reaches libpmix unless
 * it is the job user's and starts with a connect message libpmix 4.2 can
 * read safely.
 *
 * libpmix 4.2 creates its TCP listener (127.0.0.1, a port any local user
 * reads in /proc/net/tcp) and starts accepting on its own thread inside
 * PMIx_server_init, before the gate (pmix_gate.c) can take the port over;
 * its connection handler then reads the connect message with blocking
 * reads on its progress thread and trusts the lengths in it. Another user
 * who connected in that window crashed the launcher (a credential length
 * past the message: SIGSEGV) or held PMIx_server_init, and with it the
 * job, for as long as the connection stayed open.
 *
 * libpmix's listener thread calls accept() through its PLT. Once the pmix
 * plugin has loaded libpmix, pmix_guard_install() points libpmix's own
 * relocation slots for accept (its GOT, found from its dynamic section;
 * RELRO pages are made writable for the store and read-only again) at
 * the guard. Nothing is interposed process-wide: libmpictr.so exports no
 * libc symbol, and every other object of an embedding program keeps
 * libc's accept(). While the PMIx server runs (pmix_guard_arm), a
 * connection is handed over only after the kernel said who owns the
 * client's socket (pmix_peer_uid) and the client's first bytes, peeked and
 * not consumed, form a complete message that pmix_hello_check() passes,
 * within PMIX_GUARD_HELLO_MS; otherwise it is closed and libpmix sees
 * ECONNABORTED, on which its listener goes back to select(). So no byte of
 * another user is ever read by libpmix, from the listener's first moment,
 * and libpmix's blocking reads of the connect message never block.
 *
 * Whether the guard took effect is checked before the server starts
 * (pmix_guard_in_effect) and after (pmix_guard_seen): without it the start
 * fails rather than serve PMIx unguarded. */
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pmi/pmix_guard.h"
#include "pmi/pmix_peer.h"
#include "common/proc.h"
#include "common/util.h"

#define GUARD_LOGGED 5

static struct {
	pthread_mutex_t lock;
	bool armed;
	uid_t owner; /* the kernel uid of the job's processes: ours */
	uid_t uid;   /* the ids they were registered with */
	gid_t gid;
	unsigned long refused;
	unsigned long seen; /* accept() calls while armed */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Log (the first GUARD_LOGGED, then only count) why c was closed; uid:
 * its owner, -1 when that is not the reason. */
static void refused(int c, long uid, const char *why)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	int port = 0;
	unsigned long n;

	if (getpeername(c, (struct sockaddr *)&peer, &pl) == 0 &&
	    (peer.ss_family == AF_INET || peer.ss_family == AF_INET6))
		port = pmix_sockaddr_port(&peer);
	pthread_mutex_lock(&G.lock);
	n = ++G.refused;
	pthread_mutex_unlock(&G.lock);
	if (n > GUARD_LOGGED)
		return;
	if (uid >= 0)
		log_warn("pmix: refused a PMIx connection from uid %ld (local "
			 "port %d): %s",
			 uid, port, why);
	else
		log_warn("pmix: refused a PMIx connection from local port %d: "
			 "%s",
			 port, why);
	if (n == GUARD_LOGGED)
		log_warn("pmix: further refused connections are counted, not "
			 "logged");
}

/* Wait (at most PMIX_GUARD_HELLO_MS) until the client's connect message
 * is all there, and check it, without consuming a byte. */
static bool hello_ok(int c, uid_t uid, gid_t gid)
{
	unsigned char buf[PMIX_HELLO_MAX];
	long deadline = mono_ms() + PMIX_GUARD_HELLO_MS;

	for (;;) {
		ssize_t n = recv(c, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		long left = deadline - mono_ms();
		const char *why = NULL;
		size_t need;

		if (n == 0) {
			log_debug("pmix: a connection closed before its "
				  "connect message: dropped");
			return false;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		if (n > 0) {
			enum pmix_hello_rc rc = pmix_hello_check(
			    buf, (size_t)n, uid, gid, &need, &why);

			if (rc == PMIX_HELLO_OK)
				return true;
			if (rc == PMIX_HELLO_BAD) {
				refused(c, -1, why);
				return false;
			}
		}
		if (left <= 0) {
			refused(c, -1,
				"no complete connect message within 1 s");
			return false;
		}
		if (n > 0) {
			/* Part of it: poll() would return at once. */
			struct timespec ts = {0, 2 * 1000 * 1000};
			nanosleep(&ts, NULL);
		} else {
			struct pollfd p = {.fd = c, .events = POLLIN};
			poll(&p, 1, (int)left);
		}
	}
}

static bool admit(int c)
{
	struct sockaddr_storage local;
	socklen_t ll = sizeof(local);
	uid_t owner, uid, peer = 0;
	gid_t gid;

	pthread_mutex_lock(&G.lock);
	owner = G.owner;
	uid = G.uid;
	gid = G.gid;
	pthread_mutex_unlock(&G.lock);
	if (getsockname(c, (struct sockaddr *)&local, &ll) < 0)
		return false;
	/* TCP: the kernel says whose it is. A Unix socket is the gate's, in
	 * the job's 0700 directory. */
	if (local.ss_family == AF_INET || local.ss_family == AF_INET6) {
		if (pmix_peer_uid(c, &peer) < 0) {
			refused(c, -1, "its owner could not be found");
			return false;
		}
		if (peer != owner) {
			char why[128];

			snprintf(why, sizeof(why),
				 "only the job's user (uid %u) may connect to "
				 "its PMIx server (closed at libpmix's accept)",
				 (unsigned)owner);
			refused(c, (long)peer, why);
			return false;
		}
	}
	return hello_ok(c, uid, gid);
}

int pmix_guard_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	bool armed;
	int c = accept4(fd, addr, len, 0);

	if (c < 0)
		return c;
	pthread_mutex_lock(&G.lock);
	armed = G.armed;
	G.seen += armed;
	pthread_mutex_unlock(&G.lock);
	if (!armed || admit(c))
		return c;
	close(c);
	errno = ECONNABORTED;
	return -1;
}

/* ---- libpmix's relocation slots for accept ---------------------------- */

#if defined(__x86_64__)
#define SLOT_JUMP R_X86_64_JUMP_SLOT
#define SLOT_GLOB R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define SLOT_JUMP R_AARCH64_JUMP_SLOT
#define SLOT_GLOB R_AARCH64_GLOB_DAT
#endif

/* One loaded object's view for the walk: its dynamic section's tables. */
struct dynobj {
	uintptr_t base;
	const ElfW(Sym) * sym;
	const char *str;
	const ElfW(Rela) * rel[2]; /* DT_JMPREL, DT_RELA */
	size_t nrel[2];
	uintptr_t relro, relro_end;
};

/* glibc stores the loaded address in d_ptr; other loaders the offset. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) p)
{
	return p >= base ? (uintptr_t)p : base + (uintptr_t)p;
}

static bool dynobj_read(const struct dl_phdr_info *info, struct dynobj *o)
{
	const ElfW(Dyn) *d = NULL;

	memset(o, 0, sizeof(*o));
	o->base = (uintptr_t)info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			d = (const void *)(o->base + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			o->relro = o->base + ph->p_vaddr;
			o->relro_end = o->relro + ph->p_memsz;
		}
	}
	if (!d)
		return false;
	for (; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			o->sym = (const void *)dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			o->str = (const void *)dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		case DT_JMPREL:
			o->rel[0] =
			    (const void *)dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			o->nrel[0] = d->d_un.d_val / sizeof(ElfW(Rela));
			break;
		case DT_RELA:
			o->rel[1] =
			    (const void *)dyn_ptr(o->base, d->d_un.d_ptr);
			break;
		case DT_RELASZ:
			o->nrel[1] = d->d_un.d_val / sizeof(ElfW(Rela));
			break;
		case DT_PLTREL:
			if (d->d_un.d_val != DT_RELA)
				return false;
			break;
		default:
			break;
		}
	}
	return o->sym && o->str;
}

/* Store v in the slot at a (made writable for the store if it lies in the
 * object's RELRO segment, and read-only again after). */
static bool slot_store(const struct dynobj *o, void **a, void *v)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)a & ~(uintptr_t)(pg - 1);
	bool ro = (uintptr_t)a >= o->relro && (uintptr_t)a < o->relro_end;

	if (ro && mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE))
		return false;
	__atomic_store_n(a, v, __ATOMIC_SEQ_CST);
	if (ro)
		mprotect((void *)page, (size_t)pg, PROT_READ);
	return true;
}

struct slot_walk {
	bool store;  /* point the slots at the guard, or only look */
	int slots;   /* accept slots found in libpmix */
	int guarded; /* of those, pointing at the guard */
	int failed;  /* stores that failed */
};

static void object_slots(const struct dynobj *o, struct slot_walk *w)
{
#ifdef SLOT_JUMP
	for (int t = 0; t < 2; t++)
		for (size_t i = 0; o->rel[t] && i < o->nrel[t]; i++) {
			const ElfW(Rela) *r = &o->rel[t][i];
			unsigned long type = ELF64_R_TYPE(r->r_info);
			void **a = (void **)(o->base + r->r_offset);

			if ((type != SLOT_JUMP && type != SLOT_GLOB) ||
			    strcmp(o->str +
				       o->sym[ELF64_R_SYM(r->r_info)].st_name,
				   "accept") != 0)
				continue;
			w->slots++;
			if (w->store && *a != (void *)pmix_guard_accept &&
			    !slot_store(o, a, (void *)pmix_guard_accept))
				w->failed++;
			w->guarded += *a == (void *)pmix_guard_accept;
		}
#else
	(void)o;
	(void)w;
#endif
}

static int libpmix_slots(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = strrchr(info->dlpi_name, '/');
	struct dynobj o;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, "libpmix.so", 10) == 0 && dynobj_read(info, &o))
		object_slots(&o, arg);
	return 0;
}

int pmix_guard_install(void)
{
	struct slot_walk w = {.store = true};

	dl_iterate_phdr(libpmix_slots, &w);
	return w.slots > 0 && w.failed == 0 && w.guarded == w.slots ? 0 : -1;
}

bool pmix_guard_in_effect(void)
{
	struct slot_walk w = {.store = false};

	dl_iterate_phdr(libpmix_slots, &w);
	return w.slots > 0 && w.guarded == w.slots;
}

void pmix_guard_arm(uid_t uid, gid_t gid)
{
	pthread_mutex_lock(&G.lock);
	G.owner = geteuid();
	G.uid = uid;
	G.gid = gid;
	G.refused = G.seen = 0;
	G.armed = true;
	pthread_mutex_unlock(&G.lock);
}

void pmix_guard_disarm(void)
{
	unsigned long n;

	pthread_mutex_lock(&G.lock);
	G.armed = false;
	n = G.refused;
	pthread_mutex_unlock(&G.lock);
	if (n > GUARD_LOGGED)
		log_warn("pmix: %lu PMIx connections were refused before the "
			 "server saw them",
			 n);
}

unsigned long pmix_guard_seen(void)
{
	unsigned long n;

	pthread_mutex_lock(&G.lock);
	n = G.seen;
	pthread_mutex_unlock(&G.lock);
	return n;
}
