/* run.c - the public entry points that run or plan a job: refuse setuid,
 * decide the mode once (mode.c), hand it to launch mode, node daemon mode
 * (launch.c with node_daemon.c) or join mode (join.c).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/proc.h"
#include "modes/instance.h"
#include "modes/join.h"
#include "modes/launch.h"
#include "plan/mode.h"
#include "plan/mpicheck.h"
#include "plan/plan.h"
#include "plan/prepare.h"
#include "pull/pull.h"

static int refuse_privileged(mpictr_err **err)
{
	if (proc_privileged())
		return err_set(err, EPERM,
			       "refusing to run setuid or setgid (or with file "
			       "capabilities): mpictr needs no privileges");
	return 0;
}

/* instance://NAME: attach to it (*ia), and point *cfg at the config with
 * its options; *inst is ia then, else NULL. A registry image (docker://...)
 * becomes its SIF in the cache first (pulled if needed). */
static int attach_instance(mpictr_config **cfg, struct instance_attach *ia,
			   struct instance_attach **inst, mpictr_err **err)
{
	*inst = NULL;
	if (pull_resolve_image(*cfg, err) < 0)
		return -1;
	if (!instance_is_ref((*cfg)->image))
		return 0;
	if (instance_attach(*cfg, ia, err) < 0) {
		instance_attach_free(ia);
		return -1;
	}
	*inst = ia;
	*cfg = &ia->cfg;
	return 0;
}

/* Single mode found (in the rank, before the exec) that the command links
 * an MPI library and no launcher started it: run it again as a one-rank
 * job under our own PMI servers, as -n 1 does (an MPI singleton). */
static int run_singleton(mpictr_config *cfg, const struct ns_source *inst,
			 int *status, mpictr_err **err)
{
	struct run_decision d;
	int rc;

	log_info("%s", mpictr_err_message(*err));
	mpictr_err_free(*err);
	*err = NULL;
	run_decide_ranks(cfg, 1, &d);
	rc = launch_run(cfg, &d, inst, status, err);
	run_decision_free(&d);
	return rc;
}

MPICTR_PUBLIC int mpictr_run_flags(mpictr_config *cfg, unsigned flags,
				   int *status, mpictr_err **err)
{
	struct run_decision d;
	struct instance_attach ia, *inst;
	cleanup_free char *line = NULL;
	mpictr_err *le = NULL;
	int rc;

	if (!cfg || !status)
		return err_set(err, EINVAL, "mpictr_run: missing argument");
	if (flags & ~(unsigned)MPICTR_RUN_EXEC_IN_PLACE)
		return err_set(err, EINVAL, "mpictr_run: unknown flags 0x%x",
			       flags);
	if (refuse_privileged(err) < 0)
		return -1;
	/* instance://NAME: its namespaces, and cfg with its options. */
	if (attach_instance(&cfg, &ia, &inst, err) < 0)
		return -1;
	run_decide(cfg, &d);
	line = run_describe(&d);
	log_info("%s", line);
	switch (d.mode) {
	case RUN_JOIN:
		rc = join_run(cfg, &d, inst ? &inst->src : NULL,
			      flags & MPICTR_RUN_EXEC_IN_PLACE, status, err);
		break;
	case RUN_SINGLE:
	case RUN_LAUNCH:
	case RUN_NODE_DAEMON:
		rc = launch_run(cfg, &d, inst ? &inst->src : NULL, status, &le);
		if (rc < 0 && d.mode == RUN_SINGLE &&
		    mpictr_err_exit_code(le) == MPICHECK_EXIT_SINGLETON)
			rc = run_singleton(cfg, inst ? &inst->src : NULL,
					   status, &le);
		if (err)
			*err = le;
		else
			mpictr_err_free(le);
		break;
	default:
		rc = err_set(err, EINVAL, "mpictr_run: unknown mode %d",
			     (int)d.mode);
		break;
	}
	run_decision_free(&d);
	if (inst)
		instance_attach_free(inst);
	return rc;
}

MPICTR_PUBLIC int mpictr_run(mpictr_config *cfg, int *status, mpictr_err **err)
{
	return mpictr_run_flags(cfg, 0, status, err);
}

MPICTR_PUBLIC int mpictr_join_task(mpictr_config *cfg, char ***env,
				   char **program, mpictr_err **err)
{
	struct run_decision d;
	struct instance_attach ia, *inst = NULL;
	int rc = -1;

	if (!cfg || !env || !program)
		return err_set(err, EINVAL,
			       "mpictr_join_task: missing argument");
	*env = NULL;
	*program = NULL;
	if (refuse_privileged(err) < 0)
		return -1;
	if (attach_instance(&cfg, &ia, &inst, err) < 0)
		return -1;
	run_decide(cfg, &d);
	if (d.mode != RUN_JOIN) {
		cleanup_free char *line = run_describe(&d);

		err_set(err, EINVAL,
			"mpictr_join_task: not one task of a launcher's job "
			"(%s)",
			line);
	} else {
		rc = join_enter(cfg, &d, inst ? &inst->src : NULL, env, program,
				err);
	}
	run_decision_free(&d);
	if (inst)
		instance_attach_free(inst);
	return rc;
}

MPICTR_PUBLIC int mpictr_plan_json(mpictr_config *cfg, char **json,
				   mpictr_err **err)
{
	struct run_decision d;
	struct instance_attach ia, *inst;
	struct host_facts f;
	struct plan p;
	int rc = -1;

	if (!cfg || !json)
		return err_set(err, EINVAL,
			       "mpictr_plan_json: missing argument");
	/* instance://NAME: the plan of a command joining it (its mounts
	 * are the instance's, made when it started). */
	if (attach_instance(&cfg, &ia, &inst, err) < 0)
		return -1;
	run_decide(cfg, &d);
	memset(&p, 0, sizeof(p));
	if (host_facts_gather(cfg, HOST_FACTS_IMAGE | plan_facts_flags(&d),
			      NULL, &f, err) == 0 &&
	    plan_build(cfg, &d, &f, NULL, &p, err) == 0) {
		*json = plan_to_json(&p);
		rc = 0;
	}
	plan_free(&p);
	host_facts_free(&f);
	run_decision_free(&d);
	if (inst)
		instance_attach_free(inst);
	return rc;
}
