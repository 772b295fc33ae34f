#!/bin/bash
# 12-verify.sh - `mpictr verify` on Apptainer's own signed images (DSSE
# with Ed25519 and RSA keys, OpenPGP, legacy; one and two object groups):
# each verifies with the key that signed it and fails with another; a
# flipped byte in an object, a descriptor, the header or a signature
# object, a truncated signature object, a signature moved to another group
# and an unsigned image all fail with a message naming the object, exit 1;
# bad arguments exit 255. Then `mpictr sif sign` with Ed25519, ECDSA, RSA
# and OpenPGP keys made here: siftool lists the new signature objects, and
# they verify.
. "$(dirname "$0")/lib.sh"

C=$ROOT/../shared/conformance/sif
K=$C/keys
if [ ! -d "$C" ]; then
	need "conformance images" "missing $C"
	done_testing
	exit
fi
W=$T_TMP
V() { "$MPICTR" verify "$@"; }
# the output of the last check, kept (the next check overwrites $T_OUT)
keep() { cp "$T_OUT" "$W/last"; }
grep_out() { grep -q -- "$1" "$W/last" || { echo "no '$1' in:"; cat "$W/last"; return 1; }; }
# verify_out DESC STATUS PATTERN ARGS...: exit STATUS and PATTERN printed
verify_out() {
	local d=$1 want=$2 pat=$3 got; shift 3
	"$MPICTR" verify "$@" >"$T_OUT" 2>&1; got=$?
	[ "$got" = "$want" ] || echo "exit status $got, expected $want" >>"$T_OUT"
	t_report "$d" $(( got != want )) && :
	if [ "$got" = "$want" ]; then
		grep -q -- "$pat" "$T_OUT" || { echo "no '$pat'" >>"$T_OUT"; t_report "$d: says '$pat'" 1; return; }
		t_report "$d: says '$pat'" 0
	fi
}

# ---- the conformance images --------------------------------------------------
for img in one-group-signed-dsse two-groups-signed-dsse; do
	for key in ed25519 rsa; do
		verify_out "$img verifies with the $key key" 0 ": verified$" --key "$K/$key-public.pem" "$C/$img.sif"
	done
	verify_out "$img fails with the ECDSA key (not its signer)" 1 "unknown key" --key "$K/ecdsa-public.pem" "$C/$img.sif"
	verify_out "$img fails with the OpenPGP key" 1 "NOT verified" --key "$K/pgp-public.asc" "$C/$img.sif"
done
for img in one-group-signed-pgp two-groups-signed-pgp; do
	verify_out "$img verifies with the OpenPGP key" 0 "verified by '$K/pgp-public.asc' (12045C8C0B1004D058DE4BEDA20C27EE7FF7BA84)" --key "$K/pgp-public.asc" "$C/$img.sif"
	verify_out "$img fails with a PEM key" 1 "no given key verifies it (OpenPGP key 12045C8C" --key "$K/ed25519-public.pem" "$C/$img.sif"
done
ok "two groups: both verified, one signature each" bash -c "'$MPICTR' verify --key '$K/pgp-public.asc' '$C/two-groups-signed-pgp.sif' | grep -c '^group [12] .*: verified' | grep -qx 2"
for img in one-group-signed-legacy one-group-signed-legacy-group two-groups-signed-legacy-all; do
	verify_out "$img: legacy signatures reported, not accepted" 1 "legacy, not checked" --key "$K/pgp-public.asc" "$C/$img.sif"
done
verify_out "legacy signatures checked with --legacy-insecure" 0 "over object 2: verified" --legacy-insecure --key "$K/pgp-public.asc" "$C/one-group-signed-legacy-all.sif"
verify_out "an unsigned image fails" 1 "group 1 (objects 1, 2): NOT verified, not signed" --key "$K/ed25519-public.pem" "$C/one-group.sif"
ok "--json: a JSON report with the verdict" bash -c "'$MPICTR' verify --json --key '$K/ed25519-public.pem' '$C/two-groups-signed-dsse.sif' | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r[\"verified\"] and len(r[\"groups\"])==2 and all(s[\"status\"]==\"verified\" for s in r[\"signatures\"])'"
ok_status "no key given: not verified, exit 1" 1 V "$C/one-group-signed-dsse.sif"
ok_status "a key file that does not exist: exit 255" 255 V --key "$W/none.pem" "$C/one-group-signed-dsse.sif"
keep
ok "... naming the file" grep_out "key '$W/none.pem'"
ok_status "not a SIF: exit 255" 255 V --key "$K/rsa-public.pem" /etc/passwd
ok_status "no IMAGE: exit 255" 255 V --key "$K/rsa-public.pem"

# ---- tampering -----------------------------------------------------------------
flip() { # SRC DST OFFSET
	cp "$1" "$2" && chmod u+w "$2" && python3 -c "
import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 1]))" "$2" "$3"
}
D=$C/one-group-signed-dsse.sif P=$C/one-group-signed-pgp.sif E=$K/ed25519-public.pem G=$K/pgp-public.asc
flip "$D" "$W/data.sif" 36900
verify_out "DSSE: a flipped byte in the squashfs fails" 1 "the data of object 2 is not what was signed" --key "$E" "$W/data.sif"
flip "$P" "$W/data-pgp.sif" 32770
verify_out "OpenPGP: a flipped byte in object 1 fails" 1 "the data of object 1 is not what was signed" --key "$G" "$W/data-pgp.sif"
flip "$D" "$W/desc.sif" $((4096 + 585 + 73))
verify_out "a flipped byte in a descriptor's name fails" 1 "the descriptor of object 2 .* is not the one that was signed" --key "$E" "$W/desc.sif"
flip "$D" "$W/hdr.sif" 50
verify_out "a flipped byte in the header's ID fails" 1 "the global header .* is not the one that was signed" --key "$E" "$W/hdr.sif"
flip "$D" "$W/sig.sif" 41500
verify_out "a flipped byte in the DSSE envelope fails" 1 "signature 3 (dsse, sha256) over group 1: malformed" --key "$E" "$W/sig.sif"
flip "$P" "$W/sig-pgp.sif" 41000
verify_out "a flipped byte in the OpenPGP metadata fails" 1 "signature 3 (pgp, sha256) over group 1: does not match" --key "$G" "$W/sig-pgp.sif"
# truncate the signature object: its descriptor says 100 bytes
cp "$D" "$W/trunc.sif"; chmod u+w "$W/trunc.sif"
python3 -c "import struct,sys; f=open(sys.argv[1],'r+b'); f.seek(4096+2*585+25); f.write(struct.pack('<q',100))" "$W/trunc.sif"
verify_out "a truncated signature object fails" 1 "signature 3 .*: malformed: DSSE envelope is not valid JSON" --key "$E" "$W/trunc.sif"
# the group-1 signature of two-groups, relinked to group 2
cp "$C/two-groups-signed-dsse.sif" "$W/moved.sif"; chmod u+w "$W/moved.sif"
python3 -c "import struct,sys; f=open(sys.argv[1],'r+b'); f.seek(4096+3*585+13); f.write(struct.pack('<I',0xf0000002))" "$W/moved.sif"
verify_out "a signature over the wrong group fails" 1 "signature 4 (dsse, sha256) over group 2: does not match" --key "$E" "$W/moved.sif"
keep
ok "... and the group it signed is left unsigned" grep_out "group 1 (objects 1, 2): NOT verified, not signed"
# a signature object that is not one
cp "$D" "$W/junk.sif"; chmod u+w "$W/junk.sif"
printf 'garbage!' | dd of="$W/junk.sif" bs=1 seek=40960 conv=notrunc 2>/dev/null
verify_out "a signature object of garbage fails" 1 "neither a DSSE envelope nor an OpenPGP clear-signed message" --key "$E" "$W/junk.sif"

# ---- signing -------------------------------------------------------------------
openssl genpkey -algorithm ed25519 -out "$W/ed.key" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/ec.key" 2>/dev/null
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$W/rsa.key" 2>/dev/null
for k in ed ec rsa; do openssl pkey -in "$W/$k.key" -pubout -out "$W/$k.pub" 2>/dev/null; done
for k in ed ec rsa; do
	cp "$C/two-groups.sif" "$W/s-$k.sif"; chmod u+w "$W/s-$k.sif"
	ok "sif sign with a $k PEM key" "$MPICTR" sif sign --key "$W/$k.key" "$W/s-$k.sif"
	keep
	ok "... one signature object per group" bash -c "grep -c 'added signature object' '$W/last' | grep -qx 2"
	verify_out "... the signed image verifies with its public key" 0 ": verified$" --key "$W/$k.pub" "$W/s-$k.sif"
	verify_out "... and with the private key file" 0 ": verified$" --key "$W/$k.key" "$W/s-$k.sif"
	verify_out "... not with another key" 1 "unknown key" --key "$K/ecdsa-public.pem" "$W/s-$k.sif"
	if command -v siftool >/dev/null; then
		ok "... siftool lists the two new signature objects" bash -c "siftool list '$W/s-$k.sif' | grep -c 'Signature (SHA-256)' | grep -qx 2"
		ok "... linked to groups 1 and 2" bash -c "siftool list '$W/s-$k.sif' | grep 'Signature' | awk -F'|' '{print \$3}' | tr -d ' ' | tr '\n' , | grep -qx '1(G),2(G),'"
	else
		need "siftool lists the signature" "siftool is not installed"
	fi
done
flip "$W/s-ed.sif" "$W/s-ed-flip.sif" 40000
verify_out "a byte flipped after signing fails" 1 "the data of object 2 is not what was signed" --key "$W/ed.pub" "$W/s-ed-flip.sif"
ok_status "sign with a public key: exit 255" 255 "$MPICTR" sif sign --key "$W/ed.pub" "$W/s-ed.sif"
keep
ok "... saying it is not a private key" grep_out "not a PEM private key"
ok_status "sign an unreadable path: exit 255" 255 "$MPICTR" sif sign --key "$W/ed.key" "$W/none.sif"
# the signature of a deterministic image is what Apptainer's would cover:
# the conformance DSSE image, re-signed by us, verifies with our key
cp "$C/one-group.sif" "$W/again.sif"; chmod u+w "$W/again.sif"
"$MPICTR" sif sign --key "$W/ed.key" "$W/again.sif" >/dev/null 2>&1
ok "our metadata of one-group is byte for byte Apptainer's" bash -c "
python3 - '$W/again.sif' '$C/one-group-signed-dsse.sif' <<'EOF'
import base64, json, struct, sys
def meta(p):
    f = open(p, 'rb').read()
    for i in range(48):
        d = f[4096 + i*585: 4096 + (i+1)*585]
        if d[4] == 1 and struct.unpack('<i', d[:4])[0] == 0x4005:
            off, size = struct.unpack('<qq', d[17:33])
            return base64.b64decode(json.loads(f[off:off+size])['payload'])
a, b = meta(sys.argv[1]), meta(sys.argv[2])
sys.exit(0 if a == b else 1)
EOF"

if command -v gpg >/dev/null; then
	export GNUPGHOME=$W/gnupg
	mkdir -m 0700 "$GNUPGHOME"
	timeout 60 gpg --batch --pinentry-mode loopback --passphrase '' --quick-gen-key 'Test <test@example.org>' rsa2048 sign never >/dev/null 2>&1
	gpg --batch --armor --export >"$W/pgp.pub" 2>/dev/null
	gpg --batch --pinentry-mode loopback --passphrase '' --armor --export-secret-keys >"$W/pgp.key" 2>/dev/null
	gpgconf --kill gpg-agent 2>/dev/null
	cp "$C/two-groups.sif" "$W/s-pgp.sif"; chmod u+w "$W/s-pgp.sif"
	ok "sif sign with an OpenPGP secret key" "$MPICTR" sif sign --key "$W/pgp.key" "$W/s-pgp.sif"
	verify_out "... verifies with its public key" 0 ": verified$" --key "$W/pgp.pub" "$W/s-pgp.sif"
	verify_out "... not with Apptainer's test key" 1 "unknown key" --key "$K/pgp-public.asc" "$W/s-pgp.sif"
	verify_out "Apptainer's OpenPGP image fails with our OpenPGP key" 1 "no given key verifies it" --key "$W/pgp.pub" "$C/one-group-signed-pgp.sif"
	if command -v siftool >/dev/null; then
		ok "... siftool shows the signer's fingerprint" bash -c "siftool info 4 '$W/s-pgp.sif' | grep -q 'Entity: *[0-9A-F]\{40\}'"
	fi
else
	need "OpenPGP signing" "gpg is not installed (to make a test key)"
fi
done_testing
