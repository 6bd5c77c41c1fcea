#!/bin/sh
# `make demo`: run vmpt's main job on the bundled sample data.
set -e
build="${1:-build}"
vmpt="$build/cli/vmpt"
echo "== vmpt dump samples/quickstart.pt (Intel PT packets with reconstructed IPs)"
"$vmpt" dump samples/quickstart.pt
