/* exec.c - the last steps of every rank, in launch and join mode alike:
 * join the holder's namespaces, enter the start directory, wrap the
 * command with the image's environment scripts or find it on PATH (for
 * 126/127), mark inherited descriptors close-on-exec, drop every
 * capability and execve.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/caps.h"
#include "common/error.h"
#include "container/exec.h"
#include "container/ns.h"
#include "container/seccomp.h"
#include "common/proc.h"
#include "host/mpiinject.h"
#include "plan/env.h"
#include "plan/mpicheck.h"

/* True when the image (the current root) has environment scripts to
 * source before the command (Apptainer's: the files ending in .sh in
 * /.singularity.d/env). */
bool exec_image_has_env_scripts(void)
{
	DIR *d = opendir("/.singularity.d/env");
	struct dirent *de;
	bool any = false;

	if (!d)
		return false;
	while (!any && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		any = l > 3 && strcmp(de->d_name + l - 3, ".sh") == 0;
	}
	closedir(d);
	return any;
}

/* The shell text that sources the image's env scripts (Apptainer's
 * order) and exports the user's variables again afterwards, so they win,
 * then checks the command named by `cmd` (a shell word: "$1" or a
 * variable) and execs `args` (the words of the exec). Names are validated,
 * values travel in the environment (*env gains them), so nothing user-supplied
 * is parsed by the shell. */
static char *env_script_text(char ***env, char *const *user_env,
			     const char *cmd, const char *args)
{
	struct strbuf sb = STRBUF_INIT;
	int k = 0;

	/* PATH as before the user's PREPEND_PATH/APPEND_PATH, which are
	 * made again after the scripts. */
	for (size_t i = 0; user_env && user_env[i]; i++) {
		cleanup_free char *base = NULL;

		if (!env_path_edit(user_env[i], NULL))
			continue;
		base = env_path_unedited(*env, user_env);
		env_set(env, "__mpictr_p", base);
		sb_puts(&sb, "PATH=\"$__mpictr_p\"; unset __mpictr_p; ");
		break;
	}
	sb_puts(&sb, "for __mpictr_f in /.singularity.d/env/*.sh; do "
		     "[ -r \"$__mpictr_f\" ] && . \"$__mpictr_f\"; done; "
		     "unset __mpictr_f; ");
	for (size_t i = 0; user_env && user_env[i]; i++) {
		const char *eq = strchr(user_env[i], '=');
		cleanup_free char *name = NULL, *var = NULL;

		if (!eq ||
		    !env_name_valid(user_env[i], (size_t)(eq - user_env[i])))
			continue;
		if (env_path_edit(user_env[i], NULL))
			continue;
		name = xstrndup(user_env[i], (size_t)(eq - user_env[i]));
		var = xasprintf("__mpictr_u%d", k++);
		env_set(env, var, eq + 1);
		sb_printf(&sb, "export %s=\"$%s\"; unset %s; ", name, var, var);
	}
	/* PREPEND_PATH / APPEND_PATH: on the PATH the scripts left. */
	for (size_t i = 0; user_env && user_env[i]; i++) {
		const char *v;
		int how = env_path_edit(user_env[i], &v);
		cleanup_free char *var = NULL;

		if (!how)
			continue;
		var = xasprintf("__mpictr_u%d", k++);
		env_set(env, var, v);
		sb_printf(&sb,
			  how < 0 ? "export PATH=\"$%s${PATH:+:$PATH}\"; "
				    "unset %s; "
				  : "export PATH=\"${PATH:+$PATH:}$%s\"; "
				    "unset %s; ",
			  var, var);
	}
	sb_printf(&sb,
		  "command -v %s >/dev/null 2>&1 || { echo \"mpictr: "
		  "command '\"%s\"' not found in the container "
		  "(PATH=$PATH)\" >&2; exit 127; }; exec %s",
		  cmd, cmd, args);
	return sb_steal(&sb);
}

static bool need_env_scripts(void)
{
	return exec_image_has_env_scripts() && access("/bin/sh", X_OK) == 0;
}

/* The command wrapped by the image's own /bin/sh: sh -c TEXT mpictr
 * ARGV..., or NULL when the image has no env scripts (or no shell). */
static char **wrap_with_env_scripts(char ***env, char *const *user_env,
				    char *const *argv)
{
	char **out = NULL;

	if (!need_env_scripts())
		return NULL;
	strv_push(&out, "/bin/sh");
	strv_push(&out, "-c");
	strv_push_own(&out, env_script_text(env, user_env, "\"$1\"", "\"$@\""));
	/* $0 of the shell: what its own messages start with. */
	strv_push(&out, "mpictr");
	for (size_t i = 0; argv[i]; i++)
		strv_push(&out, argv[i]);
	return out;
}

/* An Enroot image (no /.singularity.d, an /etc/environment): its
 * variables, as Enroot sets them, except those the user set (they win,
 * as over Apptainer's env scripts). */
static void enroot_env(char ***env, char *const *user_env)
{
	cleanup_free char *text = NULL;
	size_t len;

	if (access("/.singularity.d", F_OK) == 0 ||
	    !(text = read_file("/etc/environment", 1 << 20, &len)))
		return;
	for (char *l = text, *nl; l && *l; l = nl) {
		char *name, *value;

		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		if (env_line_parse(l, &name, &value) == 1 &&
		    !env_get(user_env, name)) {
			env_set(env, name, value);
			/* the user's PREPEND_PATH/APPEND_PATH again */
			for (size_t i = 0; strcmp(name, "PATH") == 0 &&
					   user_env && user_env[i];
			     i++)
				env_path_apply(env, user_env[i]);
		}
	}
}

/* The command of a plan, as exec'ed in the container: `mpictr shell`'s
 * shell (the one asked for, else the image's /bin/bash without rc files,
 * as Apptainer, or /bin/sh; interactive); for `mpictr run` of an image
 * without a runscript but with Enroot's /etc/rc, the entrypoint (run by
 * /bin/sh, the arguments after it, as Enroot does); else p->argv. NULL
 * for p->argv itself. */
static char **container_argv(const struct plan *p)
{
	char **argv = NULL;

	if (p->shell) {
		if (p->shell_path) {
			strv_push(&argv, p->shell_path);
		} else if (access("/bin/bash", X_OK) == 0) {
			strv_push(&argv, "/bin/bash");
			strv_push(&argv, "--norc");
		} else {
			strv_push(&argv, "/bin/sh");
		}
		strv_push(&argv, "-i");
		return argv;
	}
	if (strcmp(p->argv[0], "/.singularity.d/runscript") ||
	    access(p->argv[0], F_OK) == 0 ||
	    access("/.singularity.d", F_OK) == 0 ||
	    access("/etc/rc", R_OK) != 0)
		return NULL;
	strv_push(&argv, "/bin/sh");
	strv_push(&argv, "/etc/rc");
	for (size_t i = 1; p->argv[i]; i++)
		strv_push(&argv, p->argv[i]);
	return argv;
}

/* The check of mpicheck.h on the command exe (argv0 found on PATH): does
 * its MPI find the PMI it speaks? */
static int check_mpi(const struct plan *p, char *const *env, const char *argv0,
		     const char *exe, mpictr_err **err)
{
	struct mpi_lib m;
	int r;

	if (!p->mpicheck.on || !mpiabi_program_mpi(exe, env, &m))
		return 0;
	r = mpicheck_verdict(&p->mpicheck, env, m.family, m.soname, err);
	if (r == MPICHECK_SINGLETON)
		r = err_set_exit(err, MPICHECK_EXIT_SINGLETON, 0,
				 "'%s' links %s (%s) and no launcher started "
				 "it: running it as a one-rank job (as -n 1)",
				 argv0, mpiabi_family_name(m.family), m.soname);
	mpi_lib_free(&m);
	return r;
}

/* A script that exists and may be executed can still fail to start: its
 * #! interpreter is missing, or the line ends in a carriage return (a
 * file with DOS line endings, whose interpreter is then "/bin/sh\r").
 * Said here, with exit code 126, rather than as execve's "No such file
 * or directory", which reads as if the command itself were missing. */
static int check_script(const char *cmd, const char *exe, mpictr_err **err)
{
	cleanup_close int fd = open(exe, O_RDONLY | O_CLOEXEC);
	char line[256], *interp, *end;
	ssize_t n;

	if (fd < 0 || (n = read(fd, line, sizeof(line) - 1)) < 2 ||
	    line[0] != '#' || line[1] != '!')
		return 0;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (strchr(line, '\r'))
		return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, 0,
				    "command '%s' in the container: its #! "
				    "line ends in a carriage return (\\r): "
				    "the script has DOS line endings (hint: "
				    "convert it with dos2unix or "
				    "sed -i 's/\\r$//')",
				    cmd);
	interp = line + 2 + strspn(line + 2, " \t");
	end = interp + strcspn(interp, " \t");
	*end = '\0';
	if (!*interp || access(interp, X_OK) == 0)
		return 0;
	return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, errno,
			    "command '%s' in the container: its #! "
			    "interpreter '%s'",
			    cmd, interp);
}

/* Find the command and check it before the exec: not found (127), not
 * executable (126), a script that cannot start (126), an MPI that finds
 * no PMI (255). With env scripts a bare name not found on today's PATH is
 * left to the wrapper (the scripts may change PATH). *exe: the path
 * found, or NULL. */
static int check_command(const struct plan *p, char *const *env, bool wrapped,
			 char **exe, mpictr_err **err)
{
	const char *cmd = p->argv[0];
	mpictr_err *e = NULL;

	*exe = NULL;
	if (proc_resolve_command(cmd, env, exe, &e) < 0) {
		if (wrapped && !strchr(cmd, '/') &&
		    mpictr_err_exit_code(e) == MPICTR_EXIT_NOT_FOUND) {
			mpictr_err_free(e);
			return 0;
		}
		if (err)
			*err = e;
		else
			mpictr_err_free(e);
		return -1;
	}
	if (check_script(cmd, *exe, err) < 0 ||
	    check_mpi(p, env, cmd, *exe, err) < 0) {
		free(*exe);
		*exe = NULL;
		return -1;
	}
	return 0;
}

static void fprog_free(struct sock_fprog *f)
{
	free(f->filter);
}
#define cleanup_fprog __attribute__((cleanup(fprog_free)))

/* Join the namespaces and enter the start directory. Under --fakeroot
 * (the user is uid 0 inside) *f is first set to the system call filter
 * (seccomp.h), built while its plugin, a host file, can still be
 * loaded; to be installed after caps_drop_all's no_new_privs. */
static int container_enter(const struct plan *p, int userns_fd, int mntns_fd,
			   struct sock_fprog *f, mpictr_err **err)
{
	f->filter = NULL;
	f->len = 0;
	if (p->uid_in == 0 && p->uid != 0) {
		mpictr_err *e = NULL;

		/* Without its plugin the container runs as before, the
		 * calls failing as the kernel says. */
		if (seccomp_fakeroot_build(f, &e) < 0) {
			log_warn("%s; without it setgroups, setuid and "
				 "chown to other ids fail, and package "
				 "managers with them",
				 mpictr_err_message(e));
			mpictr_err_free(e);
		}
	}
	if (ns_join(userns_fd, mntns_fd, err) < 0)
		return -1;
	if (chdir(p->cwd) < 0) {
		err_set(err, errno, "the container's start directory %s",
			p->cwd);
		return err_hint(err, "bind it with -B or choose another with "
				     "--pwd");
	}
	return 0;
}

/* The env-script wrapper as a shell script in a memfd, for a launcher that
 * execs argv itself: *program is /proc/self/fd/N (kept open across the
 * exec; the kernel hands it to the script's #!/bin/sh), and the original
 * command travels in __mpictr_cmd. The memfd is sealed and N is a
 * read-only descriptor of it: the command inherits N (a shell cannot
 * close a descriptor above 9, and those below are taken by the launcher's
 * close-on-exec ones), but cannot change the script. */
static int wrapper_script(char ***env, const struct plan *p, char *const *cmd,
			  size_t nlead, char **program, mpictr_err **err)
{
	cleanup_free char *text = NULL, *body = NULL, *path = NULL;
	struct strbuf args = STRBUF_INIT;
	int fd, ro;

	/* The words between the command and the task's own arguments (an
	 * entrypoint's: the task's command itself) travel in the
	 * environment too. */
	sb_puts(&args, "\"$__mpictr_c\"");
	for (size_t i = 1; i <= nlead; i++) {
		char name[32];

		snprintf(name, sizeof(name), "__mpictr_l%zu", i);
		env_set(env, name, cmd[i]);
		sb_printf(&args, " \"$%s\"", name);
	}
	sb_puts(&args, " \"$@\"");
	body = env_script_text(env, p->user_env, "\"$__mpictr_c\"", args.buf);
	sb_free(&args);
	text = xasprintf("#!/bin/sh\n__mpictr_c=$__mpictr_cmd; "
			 "unset __mpictr_cmd; %s\n",
			 body);
	fd = memfd_create("mpictr-env", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return err_set(err, errno, "create the env-script wrapper");
	path = xasprintf("/proc/self/fd/%d", fd);
	if (write_full(fd, text, strlen(text)) < 0 || fchmod(fd, 0500) < 0 ||
	    fcntl(fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) <
		0 ||
	    (ro = open(path, O_RDONLY)) < 0) {
		err_set(err, errno, "write the env-script wrapper");
		close(fd);
		return -1;
	}
	close(fd);
	env_set(env, "__mpictr_cmd", cmd[0]);
	*program = xasprintf("/proc/self/fd/%d", ro);
	return 0;
}

int container_enter_task(const struct plan *p, char ***env, int userns_fd,
			 int mntns_fd, char **program, mpictr_err **err)
{
	cleanup_free char *exe = NULL;
	cleanup_strv char **own = NULL;
	cleanup_fprog struct sock_fprog f = {0};
	char *const *cmd = p->argv;
	size_t ntail, nlead;
	bool wrapped;

	*program = NULL;
	if (container_enter(p, userns_fd, mntns_fd, &f, err) < 0)
		return -1;
	enroot_env(env, p->user_env);
	own = container_argv(p);
	if (own)
		cmd = own;
	/* The task execs its own argv: p->argv without the words of the
	 * entrypoint in front of it (the runscript, a pulled image's
	 * Entrypoint: p->argv_lead); the words of cmd before the task's
	 * arguments are put in front by the wrapper. */
	ntail = strv_len(p->argv) > p->argv_lead + 1
		    ? strv_len(p->argv) - p->argv_lead - 1
		    : 0;
	nlead = strv_len(cmd) - 1 - ntail;
	wrapped = need_env_scripts() || nlead;
	/* (a command of mpictr's own choosing, own, is run by the wrapper) */
	if (!own && check_command(p, *env, wrapped, &exe, err) < 0)
		return -1;
	if (wrapped && wrapper_script(env, p, cmd, nlead, program, err) < 0)
		return -1;
	if (caps_drop_all(err) < 0 ||
	    (f.filter && seccomp_fakeroot_install(&f, err) < 0)) {
		free(*program);
		*program = NULL;
		return -1;
	}
	return 0;
}

int container_exec(const struct plan *p, char **env, int userns_fd,
		   int mntns_fd, int keep_fd, mpictr_err **err)
{
	cleanup_free char *exe = NULL;
	cleanup_strv char **own = NULL;
	cleanup_fprog struct sock_fprog f = {0};
	char **argv = p->argv, **wrapped;

	if (container_enter(p, userns_fd, mntns_fd, &f, err) < 0)
		return -1;
	enroot_env(&env, p->user_env);
	own = container_argv(p);
	if (own)
		argv = own;
	else if (check_command(p, env, need_env_scripts(), &exe, err) < 0)
		return -1;
	wrapped = wrap_with_env_scripts(&env, p->user_env, argv);
	if (wrapped) {
		argv = wrapped;
		free(exe);
		exe = xstrdup("/bin/sh");
	} else if (!exe && proc_resolve_command(argv[0], env, &exe, err) < 0) {
		return -1;
	}
	mark_cloexec_except(keep_fd);
	if (keep_fd >= 0 && fcntl(keep_fd, F_SETFD, 0) < 0)
		return err_set(err, errno, "keep the PMI descriptor open");
	if (caps_drop_all(err) < 0 ||
	    (f.filter && seccomp_fakeroot_install(&f, err) < 0))
		return -1;
	execve(exe, argv, env);
	if (errno == ENOENT)
		return err_set_exit(err, MPICTR_EXIT_NOT_FOUND, errno,
				    "execute '%s' in the container", exe);
	return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, errno,
			    "execute '%s' in the container", exe);
}
