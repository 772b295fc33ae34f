#!/bin/bash
# 55-devices.sh - interconnect and GPU devices end to end, on fake host trees
# (MPICTR_SYSROOT, tests/fixtures/mkfakesys.sh): the container really sees
# the device nodes and sysfs, and each rank gets the transport environment.
. "$(dirname "$0")/lib.sh"

require_userns
require_images mpi
I=$IMG/mpi.sif; have_fuse || I=$IMG/mpi
cd "$T_TMP" || exit 1
FAKE=$ROOT/tests/fixtures/mkfakesys.sh
bash "$FAKE" "$T_TMP/ib" mlx5 knem xpmem >/dev/null 2>&1 || { need "fake trees" "mkfakesys.sh failed"; done_testing; exit; }
bash "$FAKE" "$T_TMP/ibp" mlx5 provider-mlx5 >/dev/null 2>&1
bash "$FAKE" "$T_TMP/opa" hfi1 >/dev/null 2>&1
bash "$FAKE" "$T_TMP/gpu" nvidia amd >/dev/null 2>&1
bash "$FAKE" "$T_TMP/none" none >/dev/null 2>&1

# m SYSROOT ARGS...: mpictr with a fake host tree
m() { local r=$1; shift; MPICTR_SYSROOT=$r "$MPICTR" "$@"; }

ok "IB: the container sees the verbs, rdma_cm, knem and xpmem nodes" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ib' '$I' sh -c 'cat /dev/infiniband/uverbs0 /dev/infiniband/rdma_cm /dev/knem /dev/xpmem' | grep -c 'mpictr fake device' | grep -qx 4"
ok "IB: umad/issm are not exposed when the user cannot read them" bash -c "$(declare -f m); MPICTR='$MPICTR'; [ \$(id -u) = 0 ] || ! m '$T_TMP/ib' '$I' test -e /dev/infiniband/umad0"
ok "IB: the verbs library's sysfs is visible (port state)" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ib' '$I' cat /sys/class/infiniband/mlx5_0/ports/1/state | grep -qx '4: ACTIVE'"
ok "IB: device binds are nosuid,noexec and keep dev" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ib' '$I' cat /proc/self/mountinfo | awk '\$5 == \"/dev/infiniband/uverbs0\" { print \$6 }' | grep -q 'nosuid,noexec' && ! m '$T_TMP/ib' '$I' cat /proc/self/mountinfo | awk '\$5 == \"/dev/infiniband/uverbs0\" { print \$6 }' | grep -q nodev"
ok "IB: each local rank gets the active HCA of its NUMA node in UCX_NET_DEVICES" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ib' --tag-output -n 2 '$I' sh -c 'echo \$UCX_NET_DEVICES' | sort | tr '\n' ' ' | grep -qx '\[0\] mlx5_0:1 \[1\] mlx5_1:1 '"
ok "IB: FI_PROVIDER=verbs where the fabric is unambiguous" bash -c "$(declare -f m); MPICTR='$MPICTR'; [ \"\$(m '$T_TMP/ib' '$I' sh -c 'echo \$FI_PROVIDER')\" = verbs ]"
ok "IB: shared namespaces keep posix/CMA on (no fallback variables)" bash -c "$(declare -f m); MPICTR='$MPICTR'; [ -z \"\$(m '$T_TMP/ib' '$I' sh -c 'echo \$UCX_POSIX_USE_PROC_LINK\$OMPI_MCA_btl_vader_single_copy_mechanism')\" ]"
ok "a variable the user set is never overwritten" bash -c "$(declare -f m); MPICTR='$MPICTR'; [ \"\$(UCX_NET_DEVICES=mine m '$T_TMP/ib' '$I' sh -c 'echo \$UCX_NET_DEVICES')\" = mine ]"
ok "--transport-env=off sets nothing" bash -c "$(declare -f m); MPICTR='$MPICTR'; [ -z \"\$(m '$T_TMP/ib' --transport-env=off '$I' sh -c 'echo \$UCX_NET_DEVICES\$FI_PROVIDER')\" ]"
ok "--no-share sets the safe fallbacks and says so" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ib' --no-share '$I' sh -c 'echo \$UCX_POSIX_USE_PROC_LINK \$OMPI_MCA_btl_vader_single_copy_mechanism \$FI_SHM_DISABLE_CMA' 2>'$T_TMP/ns.err' | grep -qx 'n none 1' && grep -q 'do not share namespaces' '$T_TMP/ns.err'"
ok "--devices=none exposes no device" bash -c "$(declare -f m); MPICTR='$MPICTR'; ! m '$T_TMP/ib' --devices=none '$I' test -e /dev/infiniband"
ok "--dry-run lists the devices with kind and reason" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ib' --dry-run '$I' true | jq -e '[.devices[] | select(.path == \"/dev/infiniband/uverbs0\" and .kind == \"ib\" and (.reason | length > 0))] | length == 1'"
ok "an image without the HCA's verbs provider: one warning naming the driver and the fix" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ib' '$I' true 2>&1 | grep 'driver mlx5' | grep -q -- '--inject-verbs'"
ok "--inject-verbs binds the host's provider and driver file in" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ibp' --inject-verbs '$I' sh -c 'cat /etc/libibverbs.d/mlx5.driver && ls /usr/lib/x86_64-linux-gnu/libibverbs/' | grep -q 'libmlx5-rdmav34.so'"
ok "--dry-run --inject-verbs lists the verbs binds among the mounts" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ibp' --dry-run --inject-verbs '$I' true | jq -e '([.mounts[] | select(.target == \"/etc/libibverbs.d/mlx5.driver\" and .source == \"$T_TMP/ibp/etc/libibverbs.d/mlx5.driver\" and (.options|test(\"ro\")))] | length == 1) and ([.mounts[] | select(.target == \"/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so\")] | length == 1) and (.checks[] | select(.check == \"verbs_providers\") | .inject and .decided == \"plan\" and .warnings == [])'"
ok "--dry-run without it: no verbs bind, the warning among the checks" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/ibp' --dry-run '$I' true | jq -e '([.mounts[] | select(.target|test(\"libibverbs\"))] | length == 0) and (.checks[] | select(.check == \"verbs_providers\") | .warnings[0] | test(\"driver mlx5\"))'"
# Join mode (one task of a fake srun step): the task does not read a
# squashfs or SIF image before mounting it, so the holder decides the
# verbs binds on the mounted image, with the plan's host providers.
jtask() { SLURM_JOB_ID=$((700000 + $$ % 90000)) SLURM_STEP_ID=$1 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE=1 MPICTR_SYSROOT=$T_TMP/ibp "$MPICTR" "${@:2}"; }
ok "join mode: --inject-verbs binds the host's provider (decided in the holder)" bash -c "$(declare -f jtask); MPICTR='$MPICTR'; T_TMP='$T_TMP'; jtask 0 -v --inject-verbs '$I' sh -c 'cat /etc/libibverbs.d/mlx5.driver && ls /usr/lib/x86_64-linux-gnu/libibverbs/' 2>'$T_TMP/j.err' | grep -q 'libmlx5-rdmav34.so' && grep -q 'mode join' '$T_TMP/j.err'"
# The UCX query runs once per node in join mode: the keeper's answer goes to
# every task with the namespaces. A fake helper (MPICTR_TEST_UCX_QUERY,
# honoured only with MPICTR_SYSROOT) counts its runs and names a device
# sysfs does not know, so the tasks' UCX_NET_DEVICES can only come from it.
printf '#!/bin/sh\necho run >>"%s"\necho "md=mpictrfake0 tl=rc_mlx5 dev=mpictrfake0:1 type=net"\necho "md=tcp tl=tcp dev=eth0 type=net"\n' "$T_TMP/ucxq.count" >"$T_TMP/fakeucx"
chmod +x "$T_TMP/fakeucx"
ucx_once() {
	local job=$((600000 + $$ % 90000)) i
	rm -f "$T_TMP/ucxq.count" "$T_TMP"/tucx?
	for i in 0 1 2 3; do
		SLURM_JOB_ID=$job SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=$i SLURM_LOCALID=$i SLURM_STEP_TASKS_PER_NODE=4 \
			MPICTR_SYSROOT=$T_TMP/ib MPICTR_TEST_UCX_QUERY=$T_TMP/fakeucx "$MPICTR" "$I" sh -c 'echo $UCX_NET_DEVICES' >"$T_TMP/tucx$i" &
	done
	wait
	cat "$T_TMP"/tucx? "$T_TMP/ucxq.count"
	[ "$(cat "$T_TMP"/tucx? | sort | uniq -c | awk '{ print $1, $2 }')" = "4 mpictrfake0:1" ] && [ "$(wc -l <"$T_TMP/ucxq.count")" = 1 ]
}
ok "join mode: 4 tasks on an IB node run the UCX query once, each gets its UCX_NET_DEVICES" ucx_once
ok "launch mode asks the fake UCX helper too" bash -c "$(declare -f m); MPICTR='$MPICTR'; [ \"\$(MPICTR_TEST_UCX_QUERY='$T_TMP/fakeucx' m '$T_TMP/ib' '$I' sh -c 'echo \$UCX_NET_DEVICES')\" = mpictrfake0:1 ]"
ok "Omni-Path: /dev/hfi1_0 and FI_PROVIDER=psm2" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/opa' '$I' sh -c 'cat /dev/hfi1_0; echo \$FI_PROVIDER' | tr '\n' ' ' | grep -q 'mpictr fake device.* psm2'"
ok "GPUs are not exposed without --gpu" bash -c "$(declare -f m); MPICTR='$MPICTR'; ! m '$T_TMP/gpu' '$I' test -e /dev/nvidia0 && ! m '$T_TMP/gpu' '$I' test -e /dev/kfd"
ok "--gpu exposes NVIDIA and AMD nodes" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/gpu' --gpu '$I' sh -c 'test -e /dev/nvidia0 && test -e /dev/nvidiactl && test -e /dev/nvidia-uvm && test -e /dev/kfd && test -e /dev/dri/renderD128'"
ok "--gpu binds the driver libraries and puts them on LD_LIBRARY_PATH" bash -c "$(declare -f m); MPICTR='$MPICTR'; m '$T_TMP/gpu' --gpu '$I' sh -c 'ls /.singularity.d/libs/ | grep -q libcuda && echo \$LD_LIBRARY_PATH' | grep -q '/.singularity.d/libs'"
ok "no hardware: no device, no transport variable" bash -c "$(declare -f m); MPICTR='$MPICTR'; [ -z \"\$(m '$T_TMP/none' '$I' sh -c 'ls /dev | grep -E \"infiniband|hfi|knem|xpmem|cxi|nvidia\"; echo \$UCX_NET_DEVICES\$FI_PROVIDER')\" ]"
done_testing
