# shellcheck shell=bash
# A private sshd on loopback for the guest tests: its own config, host
# key, unprivileged port and authorized key; nothing of the system's sshd.
# sshd_start DIR sets SSHD_PORT and SSHD_PID and leaves in DIR:
#   client_key   the key sshd accepts     other_key    a key it refuses
#   known_hosts  sshd's real host key     wrong_known_hosts  another key
# sshd_stop kills it.

sshd_start() {
	local d=$1 try
	ssh-keygen -q -t ed25519 -N '' -C vmpt-test-host -f "$d/host_key"
	ssh-keygen -q -t ed25519 -N '' -C vmpt-test-client -f "$d/client_key"
	ssh-keygen -q -t ed25519 -N '' -C vmpt-test-other -f "$d/other_key"
	ssh-keygen -q -t ed25519 -N '' -C vmpt-test-impostor -f "$d/impostor_key"
	cp "$d/client_key.pub" "$d/authorized_keys"
	# sshd refuses to start without its privilege separation directory.
	[ -d /run/sshd ] || mkdir -p -m 0755 /run/sshd
	for try in 1 2 3 4 5; do
		SSHD_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		cat > "$d/sshd_config" <<CONF
Port $SSHD_PORT
ListenAddress 127.0.0.1
HostKey $d/host_key
PidFile $d/sshd.pid
AuthorizedKeysFile $d/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel VERBOSE
CONF
		/usr/sbin/sshd -D -e -f "$d/sshd_config" 2>>"$d/sshd.log" &
		SSHD_PID=$!
		for _ in $(seq 50); do
			if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $SSHD_PORT), 0.2)" 2>/dev/null; then
				echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$d/host_key.pub")" > "$d/known_hosts"
				echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$d/impostor_key.pub")" > "$d/wrong_known_hosts"
				return 0
			fi
			kill -0 "$SSHD_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$SSHD_PID" 2>/dev/null || true
		wait "$SSHD_PID" 2>/dev/null || true
	done
	echo "sshd did not start:" >&2
	cat "$d/sshd.log" >&2
	return 1
}

sshd_stop() {
	if [ -n "${SSHD_PID:-}" ]; then
		kill "$SSHD_PID" 2>/dev/null || true
		wait "$SSHD_PID" 2>/dev/null || true
		SSHD_PID=
	fi
}
