#!/bin/bash
# build-image.sh: a small bootable Linux guest for the guest-vm tests, built
# from Debian packages and cached: prints the cache directory, holding
#   vmlinuz      Debian's kernel (linux-image-amd64's real package, from
#                tools/fetch-debian-kernel.sh's cache, shared with the
#                synthesizer's tests)
#   initrd.img   the whole root: busybox-static, OpenSSH's sshd and
#                sftp-server with their libraries, Debian's sudo, e1000.ko,
#                /init
#   client_key   the key root, vmpt and nosudo accept
#   host_key.pub the guest's host key
# Users: root; vmpt, who may run anything as root with sudo -n; nosudo,
# who may not.
# The cache key is the kernel package version and this script's content,
# so a second run takes no time.
set -euo pipefail
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/vmpt
export DEBIAN_FRONTEND=noninteractive

kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
if [ -z "$kpkg" ]; then
	echo "build-image: apt knows no linux-image-amd64 (run apt-get update)" >&2
	exit 1
fi
kver=$(apt-cache policy "$kpkg" | awk '/Candidate:/ { print $2 }')
self=$(sha256sum "$0" | cut -c1-12)
OUT=$CACHE/guest-$kpkg-$kver-$self
if [ -f "$OUT/ready" ]; then
	echo "$OUT"
	exit 0
fi
for f in /bin/busybox /usr/sbin/sshd /usr/lib/openssh/sftp-server; do
	[ -x "$f" ] || { echo "build-image: $f missing (tools/install-deps.sh)" >&2; exit 1; }
done

K=$("$(cd "$(dirname "$0")/../.." && pwd)/tools/fetch-debian-kernel.sh")
T=$(mktemp -d "${TMPDIR:-/tmp}/vmpt-guest-image.XXXXXX")
trap 'rm -rf "$T"' EXIT
chmod 777 "$T"	# apt's download sandbox user writes here
(cd "$T" && apt-get download -q sudo >&2)
chmod 700 "$T"
dpkg -x "$K/linux-image.deb" "$T/k"
dpkg -x "$T"/sudo_*.deb "$T/sudo"
modver=$(ls "$T/k/lib/modules")

R=$T/root
mkdir -p "$R"/{bin,dev,etc/ssh,proc,sys,tmp,run,root/.ssh,usr/bin,usr/sbin,usr/lib/openssh,usr/lib64,var/empty,lib/modules} 2>/dev/null ||
	true
# Debian's merged /usr, so ldd's /lib paths land in usr/.
rmdir "$R/lib/modules" "$R/lib"
ln -s usr/lib "$R/lib"
ln -s usr/lib64 "$R/lib64"
mkdir -p "$R/lib/modules"

cp /bin/busybox "$R/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ -e "$R/bin/$applet" ] || ln -s busybox "$R/bin/$applet"
done
cp /usr/sbin/sshd "$R/usr/sbin/sshd"
cp /usr/lib/openssh/sftp-server "$R/usr/lib/openssh/sftp-server"
mkdir -p "$R/usr/libexec" "$R/usr/lib/x86_64-linux-gnu/security" "$R/etc/pam.d"
cp "$T/sudo/usr/bin/sudo" "$R/usr/bin/sudo"
chmod 4755 "$R/usr/bin/sudo"
cp -a "$T/sudo/usr/libexec/sudo" "$R/usr/libexec/"
cp /usr/lib/x86_64-linux-gnu/security/pam_permit.so /usr/lib/x86_64-linux-gnu/security/pam_deny.so \
	"$R/usr/lib/x86_64-linux-gnu/security/"
# sudo's own libraries come from its package (ldd: not found here).
for lib in $(ldd /usr/sbin/sshd /usr/lib/openssh/sftp-server "$T/sudo/usr/bin/sudo" \
		"$T/sudo/usr/libexec/sudo/sudoers.so" |
		grep -oE '/[^ ]+ \(0x' | cut -d' ' -f1 | sort -u); do
	mkdir -p "$R$(dirname "$lib")"
	cp -L "$lib" "$R$lib"
done
cp "$(find "$T/k/lib/modules" -name e1000.ko)" "$R/lib/modules/e1000.ko"

cat > "$R/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/sh
vmpt:x:1000:1000::/home/vmpt:/bin/sh
nosudo:x:1001:1001::/home/nosudo:/bin/sh
sshd:x:102:65534::/run/sshd:/bin/false
P
printf 'root:x:0:\nvmpt:x:1000:\nnosudo:x:1001:\nnogroup:x:65534:\n' > "$R/etc/group"
printf '127.0.0.1 localhost vmpt-guest\n' > "$R/etc/hosts"
printf 'root ALL=(ALL) ALL\nvmpt ALL=(root) NOPASSWD: ALL\n' > "$R/etc/sudoers"
chmod 440 "$R/etc/sudoers"
# No passwords anywhere: sudo's NOPASSWD rule is the only way to root.
printf 'auth required pam_deny.so\naccount required pam_permit.so\nsession required pam_permit.so\n' \
	> "$R/etc/pam.d/other"
printf 'passwd: files\ngroup: files\nshadow: files\n' > "$R/etc/nsswitch.conf"
ssh-keygen -q -t ed25519 -N '' -C vmpt-guest-host -f "$R/etc/ssh/ssh_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -C vmpt-guest-client -f "$T/client_key"
for home in root home/vmpt home/nosudo; do
	mkdir -p "$R/$home/.ssh"
	cp "$T/client_key.pub" "$R/$home/.ssh/authorized_keys"
	chmod 700 "$R/$home/.ssh"
	chmod 600 "$R/$home/.ssh/authorized_keys"
done
cat > "$R/etc/ssh/sshd_config" <<'C'
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
StrictModes no
Subsystem sftp /usr/lib/openssh/sftp-server
C
cat > "$R/init" <<'I'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mkdir -m 755 /run/sshd
hostname vmpt-guest
chown -R 1000:1000 /home/vmpt
chown -R 1001:1001 /home/nosudo
insmod /lib/modules/e1000.ko
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
/usr/sbin/sshd -E /tmp/sshd.log
echo "vmpt-guest: sshd started"
# vmpt.lifetime=SEC on the kernel command line: power off by then, so a
# forgotten guest cannot outlive its test.
life=$(sed -n 's/.*vmpt\.lifetime=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$life" ] && (sleep "$life"; echo "vmpt-guest: lifetime over"; poweroff -f) &
while :; do sleep 3600; done
I
chmod 755 "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet -R 0:0 | gzip -1) > "$T/initrd.img"

mkdir -p "$OUT.tmp"
cp "$T/k/boot/vmlinuz-$modver" "$OUT.tmp/vmlinuz"
cp "$T/initrd.img" "$T/client_key" "$T/client_key.pub" "$OUT.tmp/"
cut -d' ' -f1,2 "$R/etc/ssh/ssh_host_ed25519_key.pub" > "$OUT.tmp/host_key.pub"
echo "$kpkg $kver" > "$OUT.tmp/ready"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
# Images of older kernels or of an older script are not used again.
for old in "$CACHE"/guest-*; do
	[ "$old" = "$OUT" ] || rm -rf "$old"
done
echo "$OUT"
