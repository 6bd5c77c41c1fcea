#!/bin/sh
# Make a man page from a user guide in docs/, so the text is kept once:
# man.sh PANDOC NAME SECTION VERSION SUMMARY IN.md OUT
# The guide's title line gives way to NAME and DESCRIPTION; its sections
# move up one level, as man pages have them.
set -eu
pandoc=$1 name=$2 section=$3 version=$4 summary=$5 in=$6 out=$7
{
	printf '# NAME\n\n%s - %s\n\n# DESCRIPTION\n\n' "$name" "$summary"
	sed -e '1{/^# /d;}' -e 's/^#\(#*\) /\1 /' "$in"
	[ "$name" = vmpt ] || printf '\n# SEE ALSO\n\nvmpt(1)\n'
} | "$pandoc" -s -f markdown -t man \
	-M title="$(echo "$name" | tr a-z A-Z)" -M section="$section" \
	-M header="vmpt manual" -M footer="vmpt $version" -o "$out"
