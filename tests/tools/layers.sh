#!/bin/sh
# layers.sh - the includes of runtime/, sif/ and pmi/ point down the layers
# only. The rule is the ```layers block of docs/architecture.md ("Layers"),
# read here and written nowhere else: a row per folder or file,
#
#   runtime/pull:   config sif common   # a comment
#
# naming what its quoted includes may name besides its own folder and
# runtime/mpictr.h (the public API, for everyone): folders (config) or
# single headers (config/bindspec.h); "-" is nothing more. A
# file's row and its folder's row both hold. An include with ".." fails
# (it would hide the folder), and so does a folder of runtime/ without a
# row (a new folder gets its rule on the day it is made).
#
# Prints each offending line and exits 1; prints "0 upward includes"
# otherwise. Usage: tests/tools/layers.sh [ROOT]
cd "${1:-.}" || exit 2

rows=$(awk '/^```layers$/ { on = 1; next } on && /^```/ { exit }
	on { sub(/#.*/, ""); if (NF) print }' docs/architecture.md)
if [ -z "$rows" ]; then
	echo "layers.sh: no \`\`\`layers block in docs/architecture.md"
	exit 2
fi

# One awk over every source file: the table's rows (ROWS), then the files.
# A quoted include names a folder: "plan/plan.h" runtime/plan, "sif/sif.h"
# sif, a bare "cache.h" the including file's own folder when it is there
# and else the top level's ("runtime", e.g. preflight.h); the public API
# and headers not in the tree name none.
find runtime sif pmi -name '*.[ch]' | sort | awk -v rows="$rows" '
function folder(n) { return (("runtime/" n) in isdir) ? "runtime/" n : n }
function dir(f) { sub(/\/[^\/]*$/, "", f); return f }
function target(f, inc,   d) {
	if (inc ~ /\.\./) return ".."
	if (inc == "mpictr.h" || inc == "runtime/mpictr.h") return ""
	if (inc ~ /^runtime\/[^\/]+\//) { split(inc, p, "/"); return "runtime/" p[2] }
	if (inc ~ /\//) { split(inc, p, "/"); return folder(p[1]) }
	if ((dir(f) "/" inc) in isfile) return dir(f)
	if (("runtime/" inc) in isfile) return "runtime"
	return ""
}
# allowed(ROW, FOLDER, INCLUDE): FOLDER is the own folder of ROW or in its
# list, or the header INCLUDE is
function allowed(r, t, inc) {
	return t == own[r] || index(ok[r], " " t " ") > 0 || index(ok[r], " " inc " ") > 0
}
{ files[++nf] = $0; isfile[$0] = 1; d = dir($0); isdir[d] = 1 }
END {
	nr = split(rows, line, "\n")
	for (i = 1; i <= nr; i++) {
		r = line[i]; sub(/:.*/, "", r); gsub(/[ \t]/, "", r)
		rest = line[i]; sub(/^[^:]*:/, "", rest)
		n = split(rest, w, /[ \t]+/); ok[r] = " "
		for (j = 1; j <= n; j++) if (w[j] != "" && w[j] != "-") ok[r] = ok[r] folder(w[j]) " "
		own[r] = (r ~ /\.[ch]$/) ? dir(r) : r
		list[r] = rest; gsub(/^[ \t]+|[ \t]+$/, "", list[r]); gsub(/[ \t]+/, " ", list[r])
		row[r] = 1
	}
	for (d in isdir)
		if (d ~ /^runtime\/[^\/]+$/ || d == "sif" || d == "pmi")
			if (!(d in row)) { print "no row in the layers table of docs/architecture.md: " d; found++ }
	for (k = 1; k <= nf; k++) {
		f = files[k]; n = 0
		if (f in row) rr[++n] = f
		if (dir(f) in row) rr[++n] = dir(f)
		ln = 0
		while ((getline l < f) > 0) {
			ln++
			if (l !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
			inc = l; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
			t = target(f, inc)
			if (t == "") continue
			for (j = 1; j <= n; j++)
				if (!allowed(rr[j], t, inc)) {
					printf "upward include (docs/architecture.md, Layers: %s may include %s): %s:%d:%s\n", rr[j], list[rr[j]], f, ln, l
					found++
				}
		}
		close(f)
	}
	print found + 0 " upward includes"
	exit found > 0
}'
