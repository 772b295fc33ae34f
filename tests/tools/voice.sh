#!/bin/sh
# voice.sh - the docs speak for the project (make check): what was
# measured, on what machine and under what load, never who measured it or
# how the text was written ("other engineers", "other sessions", "this
# session", "tried this session"), and no absolute path of a machine
# (/work/..., /home/USER/..., /root/..., /var/tmp/DIR/...). A login, FUSE
# or PMIx session in the technical sense ("its own session", "the FUSE
# session") is not these words. Reads README.md and docs/*.md.
#
# Prints each line found and exits 1; prints "0 lines in another voice"
# otherwise. Usage: tests/tools/voice.sh [ROOT]
cd "${1:-.}" || exit 2

who='other engineers?|another engineer|engineers?'"'"' (builds|tests)|(this|that|the same|an?other|other|these|those|previous|earlier|next) ([a-z-]+ )?sessions?('"'"'|\b)|tried this session|sessions'"'"' tests'
# a path at the start of a word: not /proc/PID/root/, not DIR/work/
path='(^|[^[:alnum:]_.$}/-])(/work/|/home/[[:alnum:]_][[:alnum:]_.-]*/|/root/|/var/tmp/[^/[:space:]`]+/)'

hits=$(grep -nHiE "$who" README.md docs/*.md 2>/dev/null |
	grep -viE "\b(its|their|a|his|own|the user's|login|FUSE|PMIx) sessions?\b" ;
	grep -nHE "$path" README.md docs/*.md 2>/dev/null)
found=0
if [ -n "$hits" ]; then
	echo "$hits" | sed 's/^/not in the project'"'"'s voice: /'
	found=$(echo "$hits" | wc -l)
fi
echo "$found lines in another voice"
[ "$found" -eq 0 ]
