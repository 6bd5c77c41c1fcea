#!/bin/sh
# vmpt doctor on fixture trees of three hosts: exact output and status.
set -u
cd "$SRCDIR" || exit 1
F=host/tests/fixtures
status=0
for h in icelake-host:icelake-6.1 broadwell-host:broadwell-4.14 vm-no-pt:vm-no-pt; do
	name=${h%%:*}
	sysfs=${h#*:}
	got=$( (ulimit -S -l 64; "$VMPT" doctor --sysfs-root "$F/sysfs-$sysfs" \
		--procfs-root "$F/procfs-$name" --dev-root "$F/dev-$name" \
		--no-libvirt --as-user; echo "exit $?") 2>&1)
	if [ "$got" != "$(cat "host/tests/expected/doctor-$name.txt")" ]; then
		echo "FAIL: doctor on $name:"
		echo "$got" | diff "host/tests/expected/doctor-$name.txt" - || true
		status=1
	else
		echo "ok: doctor on $name"
	fi
done
exit $status
