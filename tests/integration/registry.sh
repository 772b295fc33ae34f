# registry.sh - local registries for the pull tests (sourced after lib.sh):
# Debian's docker-registry on loopback, plain, with TLS + htpasswd (Basic),
# and with Bearer tokens from tests/integration/tokserver.py; images made
# with umoci and pushed with skopeo (../shared/reference/oci-import.md §7).
#
#   reg_port BASE           the first free loopback port from BASE
#   reg_start NAME MODE     MODE plain|tls|token; sets REG_<NAME> (host:port)
#                           and REGDIR_<NAME>; access log in $RW/NAME.log
#   reg_stop NAME           stop that registry
#   reg_blob_gets NAME REPO  GETs of REPO's blobs in NAME's log so far
#   img_busybox DIR         an OCI layout DIR (tag latest): busybox, Env
#                           PATH=/bin GREETING=hello, Entrypoint /bin/echo,
#                           Cmd default-cmd, WorkingDir /data; a second
#                           layer with /data/payload (PAYLOAD_MB of random
#                           bytes, default 1)
#   push DIR REF [ARGS]     skopeo copy oci:DIR:latest docker://REF
# Every process started here is stopped by reg_cleanup (on EXIT).
RW=${RW:-$T_TMP/reg}
mkdir -p "$RW"
PY=/usr/bin/python3
REG_PIDS=()

reg_cleanup() {
	local p
	for p in "${REG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${REG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	REG_PIDS=()
}

reg_port() {
	local p=$1
	while ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; do p=$((p + 1)); done
	echo "$p"
}

# reg_wait URL [CURL-ARGS]: until URL answers (any HTTP status), 10 s
reg_wait() {
	local url=$1 i
	shift
	for i in $(seq 100); do
		curl -s -o /dev/null "$@" "$url" && return 0
		sleep 0.1
	done
	echo "registry at $url did not come up" >&2
	return 1
}

reg_certs() {
	[ -f "$RW/reg.crt" ] && return 0
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$RW/reg.key" -out "$RW/reg.crt" \
		-days 2 -subj /CN=127.0.0.1 -addext 'subjectAltName=IP:127.0.0.1,DNS:localhost' \
		>/dev/null 2>&1 || return 1
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$RW/tok.key" -out "$RW/tok.crt" \
		-days 2 -subj /CN=test-issuer >/dev/null 2>&1 || return 1
	htpasswd -Bbn alice s3cret >"$RW/htpasswd" 2>/dev/null || return 1
	mkdir -p "$RW/ca" && cp "$RW/reg.crt" "$RW/ca/ca.crt"
}

reg_start() {
	local name=$1 mode=$2 port d tport extra=""
	port=$(reg_port "${REG_PORT_BASE:-22200}")
	d=$RW/$name
	mkdir -p "$d/data"
	case $mode in
	plain) ;;
	tls)
		reg_certs || return 1
		extra="  tls: {certificate: $RW/reg.crt, key: $RW/reg.key}
auth: {htpasswd: {realm: test, path: $RW/htpasswd}}" ;;
	token)
		reg_certs || return 1
		tport=$(reg_port $((port + 1)))
		(cd / && exec "$PY" "$ROOT/tests/integration/tokserver.py" "$tport" "$RW/tok.key" "$RW/tok.crt") \
			>"$RW/$name.tok.log" 2>&1 &
		REG_PIDS+=($!)
		reg_wait "http://127.0.0.1:$tport/token" || return 1
		printf -v "TOK_$name" '%s' "127.0.0.1:$tport"
		extra="auth: {token: {realm: http://127.0.0.1:$tport/token, service: test-registry, issuer: test-issuer, rootcertbundle: $RW/tok.crt}}" ;;
	*) return 1 ;;
	esac
	cat >"$d/reg.yml" <<EOF
version: 0.1
log: {level: info, accesslog: {disabled: false}}
storage: {filesystem: {rootdirectory: $d/data}, delete: {enabled: true}}
http:
  addr: 127.0.0.1:$port
  secret: mpictr-test
$extra
EOF
	(cd / && exec docker-registry serve "$d/reg.yml") >"$RW/$name.log" 2>&1 &
	REG_PIDS+=($!)
	printf -v "REGPID_$name" '%s' "$!"
	if [ "$mode" = tls ]; then
		reg_wait "https://127.0.0.1:$port/v2/" --cacert "$RW/reg.crt" || return 1
	else
		reg_wait "http://127.0.0.1:$port/v2/" || return 1
	fi
	printf -v "REG_$name" '%s' "127.0.0.1:$port"
	printf -v "REGDIR_$name" '%s' "$d"
}

reg_stop() {
	local v=REGPID_$1
	kill "${!v}" 2>/dev/null
	wait "${!v}" 2>/dev/null
	return 0
}

reg_blob_gets() {
	grep -c "\"GET /v2/$2/blobs/sha256:" "$RW/$1.log"
}

img_busybox() {
	local dir=$1 u=$RW/unpack.$$
	rm -rf "$dir" "$u"
	umoci init --layout "$dir" >/dev/null && umoci new --image "$dir:latest" >/dev/null &&
		umoci unpack --rootless --image "$dir:latest" "$u" >/dev/null || return 1
	mkdir -p "$u/rootfs/bin" "$u/rootfs/data"
	cp "$(command -v busybox)" "$u/rootfs/bin/" && ln -s busybox "$u/rootfs/bin/sh"
	umoci repack --image "$dir:latest" "$u" >/dev/null || return 1
	rm -rf "$u"
	umoci unpack --rootless --image "$dir:latest" "$u" >/dev/null || return 1
	head -c "$((${PAYLOAD_MB:-1} * 1048576))" /dev/urandom >"$u/rootfs/data/payload"
	umoci repack --image "$dir:latest" "$u" >/dev/null || return 1
	rm -rf "$u"
	umoci config --image "$dir:latest" --config.env PATH=/bin --config.env GREETING=hello \
		--config.entrypoint /bin/echo --config.cmd default-cmd --config.workingdir /data \
		>/dev/null || return 1
	umoci gc --layout "$dir" >/dev/null
}

push() {
	local dir=$1 ref=$2
	shift 2
	skopeo copy -q --dest-tls-verify=false "$@" "oci:$dir:latest" "docker://$ref" >/dev/null
}

# reg_fault NAME UPSTREAM-NAME: tests/integration/regfault.py in front of
# registry UPSTREAM-NAME (its test/busybox); sets REG_<NAME>.
reg_fault() {
	local up=REG_$2 port
	port=$(reg_port $((${REG_PORT_BASE:-22200} + 5)))
	(cd / && exec "$PY" "$ROOT/tests/integration/regfault.py" "$port" "${!up}") >"$RW/$1.log" 2>&1 &
	REG_PIDS+=($!)
	reg_wait "http://127.0.0.1:$port/v2/" || return 1
	printf -v "REG_$1" '%s' "127.0.0.1:$port"
}
