#!/bin/bash
# 00-cli.sh - command-line contract: usage errors, exit codes, setuid refusal.
. "$(dirname "$0")/lib.sh"

ok "--version prints the version" bash -c "'$MPICTR' --version | grep -qx 'mpictr [0-9.]*'"
ok "--help names every launch form" bash -c "'$MPICTR' --help | grep -q 'sif create' && '$MPICTR' --help | grep -q -- '-n N'"
ok_status "no arguments: usage, exit 255" 255 "$MPICTR"
ok_status "unknown option: exit 255" 255 "$MPICTR" --no-such-option img cmd
ok "unknown option is named" bash -c "'$MPICTR' --no-such-option img cmd 2>&1 | grep -q -- '--no-such-option'"
ok_status "-n 0 is refused with 255" 255 "$MPICTR" -n 0 img cmd
ok "-n 0 names the option" bash -c "'$MPICTR' -n 0 img cmd 2>&1 | grep -q \"rank count '0' for -n\""
ok_status "-n abc is refused" 255 "$MPICTR" -n abc img cmd
ok_status "-n 100000 (absurd) is refused" 255 "$MPICTR" -n 100000 img cmd
ok_status "missing image: 255" 255 "$MPICTR" exec
ok_status "bad --bind option: 255" 255 "$MPICTR" -B /a:/b:bogus img cmd
ok "bad --bind names the option" bash -c "'$MPICTR' -B /a:/b:bogus img cmd 2>&1 | grep -q \"unknown option 'bogus'\""
ok_status "bad --transport-env value: 255" 255 "$MPICTR" --transport-env=maybe img cmd
ok_status "bad --bind-to: 255" 255 "$MPICTR" --bind-to=socket img cmd
ok_status "sif without subcommand: 255" 255 "$MPICTR" sif
ok_status "sif info with a bad ID: 255" 255 "$MPICTR" sif info x.sif abc

# Every verb has its own --help (and -h): its usage and one of its own
# options on stdout, nothing on stderr, exit 0.
verb_help() { # FLAG OPTION VERB [SUBVERB]
	local flag=$1 opt=$2 verb=$3
	shift 2
	"$MPICTR" "$@" "$flag" >"$T_TMP/help.out" 2>"$T_TMP/help.err" || return 1
	[ ! -s "$T_TMP/help.err" ] &&
		grep -q "mpictr \[\?$verb\]\?\( \|$\)" "$T_TMP/help.out" &&
		grep -q -- "$opt" "$T_TMP/help.out"
}
for v in exec:--bind run:--bind shell:--shell inspect:--json sif:--deffile \
	check:--help instance:--linger verify:--legacy-insecure pull:--arch \
	cache:--cache-dir; do
	ok "'${v%%:*} --help' prints its usage and ${v#*:}, exit 0" verb_help --help "${v#*:}" "${v%%:*}"
done
ok "pull -h: its help, exit 0" verb_help -h --no-expansion-limit pull
ok "inspect -h: its help, exit 0" verb_help -h --json inspect
ok "sif -h: its help, exit 0" verb_help -h --key sif
ok "instance -h: its help, exit 0" verb_help -h --json instance
ok "sif create --help: sif's help, exit 0" verb_help --help --labels sif create
ok "sif sign --help: sif's help, exit 0" verb_help --help --key sif sign
ok "instance start --help: instance's help (not the run verbs'), exit 0" bash -c "'$MPICTR' instance start --help >'$T_TMP/is.out' && head -1 '$T_TMP/is.out' | grep -q '^usage: mpictr instance start' && grep -q -- '--linger SECONDS  ' '$T_TMP/is.out'"
ok "instance stop --help: instance's help, exit 0" verb_help --help --all instance stop
ok_status "pull with a bad option is still a usage error (255)" 255 "$MPICTR" pull --no-such-option x
# A mistyped verb: did you mean (pull, verify and cache too).
ok "a mistyped verb: did you mean 'pull'" bash -c "cd '$T_TMP' && '$MPICTR' pul x 2>&1 | grep -q \"unknown verb 'pul' (did you mean 'pull'?)\""
ok "a mistyped verb: did you mean 'verify'" bash -c "cd '$T_TMP' && '$MPICTR' verfy x.sif 2>&1 | grep -q \"unknown verb 'verfy' (did you mean 'verify'?)\""

# Setuid refusal, tested without root as charliecloud does: a setgid copy
# of the binary in a directory of ours, group = one of our groups other
# than the primary one if we have one; otherwise needs root to chown.
setuid_test() {
	local cp=$T_TMP/mpictr-setgid g
	cp "$MPICTR" "$cp"
	for g in $(id -G); do
		[ "$g" != "$(id -g)" ] && break
	done
	if [ "$(id -u)" = 0 ]; then
		chown 65534:65534 "$cp" && chmod u+s,g+s "$cp"
		# root running a setuid-nobody binary: euid 65534 != uid 0
	else
		[ "$g" != "$(id -g)" ] || return 77
		chgrp "$g" "$cp" && chmod g+s "$cp"
	fi
	"$cp" --version >"$T_TMP/su.out" 2>&1
	local rc=$?
	[ "$rc" = 255 ] && grep -q 'refusing to run setuid or setgid' "$T_TMP/su.out"
}
setuid_test; rc=$?
if [ "$rc" = 77 ]; then
	skip "setuid/setgid binary refuses to run" "no secondary group to setgid to as a non-root user"
else
	(exit $rc); t_report "setuid/setgid binary refuses to run" $rc
fi
done_testing
