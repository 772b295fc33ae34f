/* proc.h - the process layer: what every fork site of the runtime shares.
 *
 * The child preamble (die with the parent, default signals, the caller's
 * mask), the child->parent error relay (docs/architecture.md
 * "Conventions"), fork with a relay pipe,
 * descriptor hygiene before exec, wait statuses as exit codes, the
 * monotonic clock and the recursive delete. No policy: launch mode, the
 * node daemon, join mode and the holder all use it the same way.
 */
#ifndef MPICTR_PROC_H
#define MPICTR_PROC_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

/* Milliseconds of CLOCK_MONOTONIC. */
long mono_ms(void);

/* In a forked child: every signal back to its default disposition, the
 * signal mask set to *mask, SIGKILL when the parent dies; _exits at once
 * when the parent (pid `parent`) is already gone. */
void proc_child_setup(const sigset_t *mask, pid_t parent);
/* fork, and proc_child_setup(mask, the caller) in the child: for children
 * with a channel of their own (the prefetch, the upstream agent's socket,
 * the namespace probe's exit status). The pid, 0 in the child, or -1 with
 * *err ("fork WHAT"). */
pid_t proc_fork_child(const sigset_t *mask, const char *what, mpictr_err **err);
/* In a child before exec: stdin from /dev/null when null_stdin, stdout
 * and stderr to out_fd (closed after) when out_fd >= 0. Async-signal-safe
 * (open, dup2, close). */
void proc_child_stdio(bool null_stdin, int out_fd);

/* Fork with a relay: a CLOEXEC pipe whose write end only the child keeps.
 * Returns the pid in the parent, which gets the read end in *rfd (for
 * relay_recv), 0 in the child, which gets the write end in *wfd (for
 * relay_send, or an exec that closes it empty). -1 with *err (what names
 * the child) when the pipe or the fork failed: nothing is left open. */
pid_t proc_fork_relay(int *rfd, int *wfd, const char *what, mpictr_err **err);

/* In a child of proc_fork_relay (write end wfd): fork once more and let
 * the middle process _exit, so that the grandchild, in which this returns,
 * is reparented and nobody waits for it (the keeper). A failed fork is
 * reported over wfd ("fork WHAT") and ends the child. */
void proc_detach(int wfd, const char *what);

/* A watcher: a child that outlives its parent to clean up after it (the
 * janitor, the keeper's sweeper), so it has no PDEATHSIG. Its lifeline is
 * a CLOEXEC pipe whose only writer is the parent, which keeps the write
 * end for as long as it lives (and may write a message into it): the
 * watcher reads EOF once the parent is gone, however it ended. With rfd
 * and wfd, a relay too, as proc_fork_relay's (NULL: none).
 * Parent: the pid; *life_fd the lifeline's write end, *rfd the relay's
 * read end. Child (0): *life_fd the read end, *wfd the relay's write end;
 * every other descriptor closed, stdio on /dev/null, cwd /, no signal
 * blocked and every one but SIGCHLD ignored (only a SIGKILL aimed at it
 * ends it); with own_session, setsid() as well: out of the caller's
 * process group, which a SIGKILL may be sent to (`timeout -s KILL`).
 * -1 with *err: nothing is left open. */
pid_t proc_fork_watcher(bool own_session, int *life_fd, int *rfd, int *wfd,
			const char *what, mpictr_err **err);
/* Watcher side: the parent's message (up to len bytes into buf), then
 * EOF: returns once the parent is gone, with the bytes of buf filled. */
size_t proc_watch_lifeline(int life_fd, void *buf, size_t len);

/* Child side: report e (message, errno, exit code) before _exit. */
void relay_send(int fd, const mpictr_err *e);
/* Child side: report "ready" for relay_recv_ready (a child that goes on
 * running after its start, where an empty close means it died). */
void relay_send_ready(int fd);
/* relay_send_ready with a short note (under 1 KiB) for relay_recv_note. */
void relay_send_note(int fd, const char *note);
/* Parent side: 0 when the pipe closed empty (the child exec'd), or -1
 * with *err rebuilt from what the child reported. who names the child. */
int relay_recv(int fd, const char *who, mpictr_err **err);
/* Parent side, for children that report ready: 0 on relay_send_ready, -1
 * with *err on a relayed error ("the WHO failed: ...") or when the child
 * ended saying nothing ("the WHO exited at start"). */
int relay_recv_ready(int fd, const char *who, mpictr_err **err);
/* relay_recv_ready that also copies the note of relay_send_note into
 * note (len bytes; "" without one). */
int relay_recv_note(int fd, const char *who, char *note, size_t len,
		    mpictr_err **err);

/* Run prog (argv[0]; looked up on PATH with search) with stdin from
 * /dev/null and stdout (and stderr with with_stderr, else /dev/null) into
 * a pipe whose read end the caller gets in *out_fd; reap the pid with
 * waitpid. An exec that fails comes back over a relay as the error ("run
 * PROG: errno", exit code 127 or 126); nothing is left running or open
 * then. For short-lived helpers (UCX query, mksquashfs). */
pid_t proc_spawn_output(const char *prog, char *const argv[], bool search,
			bool with_stderr, int *out_fd, mpictr_err **err);

/* Mark every inherited descriptor above stderr close-on-exec except keep
 * (or -1): they close at the exec that follows, not before, so a failing
 * exec can still report over its relay. */
void mark_cloexec_except(int keep);

/* A wait status as an exit code: the status, 128+signal, else 255. */
int exit_code_of(int status);

/* Remove a file or directory tree through descriptors (proc.c, "removing
 * a tree"): never follows a symlink, never resolves a path twice (a tree
 * the job writes into while it is removed cannot redirect an unlink),
 * never enters another mount. 0 when nothing is left (or nothing was
 * there), -1 with errno of the first failure. rm_rf resolves the parent
 * of path once; rm_tree_at removes name of directory dfd; rm_tree_empty
 * removes every entry of directory fd, which stays. */
int rm_rf(const char *path);
int rm_tree_at(int dfd, const char *name);
int rm_tree_empty(int fd);

/* The parent of pid (from /proc/PID/stat), or -1. */
pid_t proc_ppid(pid_t pid);
/* The real, effective, saved and file system uids of pid (from
 * /proc/PID/status, which a process cannot disguise as /proc/PID's owner
 * can be, by making itself non-dumpable): 0, or -1 when it is gone. */
int proc_uids(pid_t pid, uid_t uids[4]);
/* The processes of our uid in the user namespace (dev, ino) (as
 * /proc/PID/ns/user shows it) or in one nested under it, however deep
 * (unshare -U inside the container), except pid `skip` and its children (a
 * holder and its FUSE workers; 0: none): their number. With sig > 0 each
 * one found is sent sig, through a pidfd opened before its namespace is
 * checked again (never a recycled pid). */
int proc_ns_signal(dev_t dev, ino_t ino, pid_t skip, int sig);
/* Where the peer of the connected Unix socket c runs (SO_PEERCRED, its
 * pid checked again through a pidfd after its namespace is open: never a
 * recycled pid), against the user namespace (dev, ino) of a container:
 * PEER_HOST in our own user namespace, PEER_INSIDE in that container's or
 * one nested under it, PEER_OTHER anywhere else (in another container);
 * -1 when it cannot be told (the peer is gone). What keepers ask before
 * they answer: a program in one of the user's containers sees their
 * sockets through the /tmp bind. */
enum { PEER_HOST, PEER_INSIDE, PEER_OTHER };
int proc_peer_where(int c, dev_t dev, ino_t ino);
/* End every process proc_ns_signal finds (nested namespaces included):
 * with grace_ms > 0, SIGTERM first and up to grace_ms for them to go;
 * then SIGKILL until none is found (they may fork meanwhile), at most
 * 5 s. 0 when none is left, -1 with errno ETIMEDOUT. What every mode runs
 * before it removes a job's directory, so that nothing the job started
 * (a double fork, a nested namespace) outlives it. */
int proc_ns_end(dev_t dev, ino_t ino, pid_t skip, long grace_ms);
/* The PATH of a process whose environment sets none (the container's
 * default too). */
#define PROC_DEFAULT_PATH                                                      \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* Find cmd on PATH (from env; PROC_DEFAULT_PATH when unset) as execvp
 * would: *out is the path to exec. -1 with *err naming the command "in the
 * container", exit code 127 (not found) or 126 (not executable). */
int proc_resolve_command(const char *cmd, char *const *env, char **out,
			 mpictr_err **err);

/* Does this process run with privileges it was not started with (setuid
 * or setgid, or file capabilities: AT_SECURE)? mpictr needs none and
 * refuses to run so (run.c, preflight.c; main.c says so first). */
bool proc_privileged(void);

#endif
