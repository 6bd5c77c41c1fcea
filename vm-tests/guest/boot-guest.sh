#!/bin/bash
# boot-guest.sh IMAGE_DIR WORK_DIR [TIMEOUT_SEC [LIFETIME_SEC [CLOCK_ARGS]]]: boot the image of
# build-image.sh under QEMU TCG in the background, with user networking
# that forwards a loopback port to the guest's sshd (the guest reaches
# nothing else: restrict=on).  Waits for the SSH banner, then prints the
# port.  WORK_DIR gets qemu.pid, console.log and qmp.sock (QEMU's QMP, on
# its command line as vmpt record --pid finds it; its vCPU threads are
# named, debug-threads=on); kill the pid to stop it.
# The guest powers itself off after LIFETIME_SEC (default 1200) anyway.
# CLOCK_ARGS are the kernel arguments that set up its clock (default: what
# guests traced by vmpt run with, see docs/guest.md; the guest check test
# boots without tsc=reliable too).
set -euo pipefail
IMG=$1
W=$2
TIMEOUT=${3:-240}
LIFETIME=${4:-1200}
CLOCK_ARGS=${5-no-kvmclock tsc=reliable clocksource=tsc sysctl.net.core.bpf_jit_enable=0}
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "boot-guest: qemu-system-x86_64 missing (tools/install-deps.sh)" >&2; exit 1; }
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port=$(free_port)
qemu-system-x86_64 -accel tcg -m 1024 -smp 2 -nodefaults -display none \
	-name vmpt-guest,debug-threads=on -qmp "unix:$W/qmp.sock,server=on,wait=off" \
	-kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img" \
	-append "console=ttyS0 $CLOCK_ARGS panic=-1 quiet vmpt.lifetime=$LIFETIME" \
	-netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:22" \
	-device e1000,netdev=n0 \
	-serial "file:$W/console.log" -no-reboot \
	-pidfile "$W/qemu.pid" -daemonize
start=$(date +%s)
while :; do
	if python3 - "$port" <<'PY' 2>/dev/null; then
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2)
s.settimeout(5)
sys.exit(0 if s.recv(64).startswith(b'SSH-2.0') else 1)
PY
		break
	fi
	if ! kill -0 "$(cat "$W/qemu.pid")" 2>/dev/null; then
		echo "boot-guest: QEMU exited; console:" >&2
		tail -30 "$W/console.log" >&2
		exit 1
	fi
	if [ $(( $(date +%s) - start )) -ge "$TIMEOUT" ]; then
		echo "boot-guest: no SSH after $TIMEOUT s; console:" >&2
		tail -30 "$W/console.log" >&2
		kill "$(cat "$W/qemu.pid")"
		exit 1
	fi
	sleep 1
done
echo "boot-guest: SSH up after $(( $(date +%s) - start )) s" >&2
echo "$port"
