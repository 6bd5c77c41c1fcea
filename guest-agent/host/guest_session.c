/* SPDX-License-Identifier: MIT */
/* The host side of vmpt-agent: one SSH session (libssh), key
 * authentication only, host keys checked against known_hosts, the agent
 * deployed over SFTP, and every reply read through guest_pack_receive.
 */
#include "vmpt/guest.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
#include "../guest_pack.h"
#include "guest_pack_read.h"
#include "guest_sysroot.h"
#include "guest-agent/host/guest_version.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <libssh/libssh.h>
#include <limits.h>
#include <libssh/sftp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STDERR_KEEP 4096
/* What a fetch leaves free on the host's file system: a guest must not
 * fill the host's disk, however small its files. */
#define GUEST_MIN_FREE (64ull << 20)

struct vmpt_guest {
	struct vmpt_guest_opts o;
	char *user, *host;
	unsigned port;
	char *known_hosts;		/* for messages */
	char *agent_path;		/* the local agent */
	ssh_session s;
	char *agent;			/* remote command prefix: [sudo -n ]'DIR/vmpt-agent' */
	ssh_channel rec;		/* a running `record` */
	int stderr_quiet;		/* keep the guest's stderr out of the log */
	int rec_has_cmd;
	char stderr_tail[STDERR_KEEP];
	size_t stderr_len;
	struct guest_pack_limits lim;	/* over every reply of the session */
	char err[2048];
};

static int set_err(struct vmpt_guest *g, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_err(struct vmpt_guest *g, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->err, sizeof(g->err), fmt, ap);
	va_end(ap);
	return ret;
}

static void logf_(struct vmpt_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void logf_(struct vmpt_guest *g, const char *fmt, ...)
{
	va_list ap;

	if (!g->o.log)
		return;
	va_start(ap, fmt);
	vfprintf(g->o.log, fmt, ap);
	va_end(ap);
}

const char *vmpt_guest_errmsg(const struct vmpt_guest *g)
{
	return g ? g->err : "out of memory";
}

/* ssh://[user@]host[:port], host may be [v6]. */
static int parse_url(struct vmpt_guest *g, const char *url)
{
	const char *p = url, *at, *host_end;

	if (strncmp(p, "ssh://", 6))
		return set_err(g, -VMPT_ERR_INVAL, "%s: not an ssh://user@host[:port] URL", url);
	p += 6;
	at = strchr(p, '@');
	if (at) {
		g->user = strndup(p, (size_t)(at - p));
		p = at + 1;
	}
	if (*p == '[') {
		host_end = strchr(p, ']');
		if (!host_end)
			return set_err(g, -VMPT_ERR_INVAL, "%s: unclosed '['", url);
		g->host = strndup(p + 1, (size_t)(host_end - p - 1));
		host_end++;
	} else {
		host_end = p + strcspn(p, ":/");
		g->host = strndup(p, (size_t)(host_end - p));
	}
	g->port = 22;
	if (*host_end == ':') {
		char *end;
		unsigned long port = strtoul(host_end + 1, &end, 10);

		if (end == host_end + 1 || port == 0 || port > 65535)
			return set_err(g, -VMPT_ERR_INVAL, "%s: bad port", url);
		g->port = (unsigned)port;
		host_end = end;
	}
	if (*host_end == '/')
		host_end++;
	if (*host_end || !g->host || !*g->host || (at && (!g->user || !*g->user)))
		return set_err(g, -VMPT_ERR_INVAL, "%s: not an ssh://user@host[:port] URL", url);
	return 0;
}

static char *key_fingerprint(ssh_session s)
{
	ssh_key key = NULL;
	unsigned char *hash = NULL;
	size_t len = 0;
	char *fp = NULL;

	if (ssh_get_server_publickey(s, &key) == SSH_OK &&
	    ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &len) == 0) {
		fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, len);
		ssh_clean_pubkey_hash(&hash);
	}
	ssh_key_free(key);
	return fp;
}

static int check_host_key(struct vmpt_guest *g)
{
	char *fp = key_fingerprint(g->s);
	enum ssh_known_hosts_e state = ssh_session_is_known_server(g->s);
	int ret = 0;

	switch (state) {
	case SSH_KNOWN_HOSTS_OK:
		break;
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		ret = set_err(g, -VMPT_ERR_PERM,
			"host key of %s port %u has CHANGED (now %s; %s has another): "
			"someone may be intercepting the connection. If the guest was "
			"reinstalled, remove the old key: ssh-keygen -R '[%s]:%u' -f %s",
			g->host, g->port, fp ? fp : "?", g->known_hosts, g->host, g->port,
			g->known_hosts);
		break;
	case SSH_KNOWN_HOSTS_UNKNOWN:
	case SSH_KNOWN_HOSTS_NOT_FOUND:
		if (!g->o.accept_new_host_key) {
			ret = set_err(g, -VMPT_ERR_PERM,
				"host key of %s port %u (%s) is not in %s: check the "
				"fingerprint, then trust it with --accept-new-host-key",
				g->host, g->port, fp ? fp : "?", g->known_hosts);
			break;
		}
		if (ssh_session_update_known_hosts(g->s) != SSH_OK) {
			ret = set_err(g, -VMPT_ERR_IO, "adding the host key of %s to %s: %s",
				      g->host, g->known_hosts, ssh_get_error(g->s));
			break;
		}
		logf_(g, "vmpt: added the host key of %s port %u (%s) to %s\n",
		      g->host, g->port, fp ? fp : "?", g->known_hosts);
		break;
	default:
		ret = set_err(g, -VMPT_ERR_IO, "checking the host key of %s in %s: %s",
			      g->host, g->known_hosts, ssh_get_error(g->s));
	}
	ssh_string_free_char(fp);
	return ret;
}

/* Key authentication only: never a password, never a prompt. */
static int authenticate(struct vmpt_guest *g)
{
	const char *user = g->user ? g->user : "(local user)";
	int rc;

	if (g->o.identity) {
		ssh_key key = NULL;

		if (ssh_pki_import_privkey_file(g->o.identity, NULL, NULL, NULL, &key) != SSH_OK)
			return set_err(g, -VMPT_ERR_PERM,
				"cannot read the private key %s (a passphrase-protected "
				"key must be loaded into ssh-agent instead)", g->o.identity);
		rc = ssh_userauth_publickey(g->s, NULL, key);
		ssh_key_free(key);
	} else {
		rc = ssh_userauth_publickey_auto(g->s, NULL, NULL);
	}
	if (rc == SSH_AUTH_SUCCESS)
		return 0;
	if (rc == SSH_AUTH_ERROR)
		return set_err(g, -VMPT_ERR_IO, "authenticating to %s: %s", g->host,
			       ssh_get_error(g->s));
	return set_err(g, -VMPT_ERR_PERM,
		"%s@%s port %u refused key authentication (tried %s); vmpt uses keys "
		"only: add the public key to the guest's authorized_keys",
		user, g->host, g->port, g->o.identity ? g->o.identity :
		"ssh-agent and ~/.ssh/id_*");
}

static int connect_session(struct vmpt_guest *g)
{
	long timeout = g->o.timeout_sec;
	int ret;

	g->s = ssh_new();
	if (!g->s)
		return set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ssh_options_set(g->s, SSH_OPTIONS_HOST, g->host);
	ssh_options_set(g->s, SSH_OPTIONS_PORT, &g->port);
	ssh_options_set(g->s, SSH_OPTIONS_TIMEOUT, &timeout);
	if (g->user)
		ssh_options_set(g->s, SSH_OPTIONS_USER, g->user);
	if (g->o.known_hosts) {
		/* Only this file: a global one must not vouch for a host the
		 * user keeps apart.
		 */
		ssh_options_set(g->s, SSH_OPTIONS_KNOWNHOSTS, g->o.known_hosts);
		ssh_options_set(g->s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
	}
	if (ssh_connect(g->s) != SSH_OK)
		return set_err(g, -VMPT_ERR_IO, "connecting to %s port %u: %s",
			       g->host, g->port, ssh_get_error(g->s));
	ret = check_host_key(g);
	if (!ret)
		ret = authenticate(g);
	return ret;
}

static void keep_stderr(struct vmpt_guest *g, const char *buf, size_t n)
{
	if (g->o.log && !g->stderr_quiet)
		fwrite(buf, 1, n, g->o.log);
	if (n >= STDERR_KEEP - 1) {
		buf += n - (STDERR_KEEP - 1);
		n = STDERR_KEEP - 1;
	}
	if (g->stderr_len + n >= STDERR_KEEP) {
		size_t drop = g->stderr_len + n - (STDERR_KEEP - 1);

		memmove(g->stderr_tail, g->stderr_tail + drop, g->stderr_len - drop);
		g->stderr_len -= drop;
	}
	memcpy(g->stderr_tail + g->stderr_len, buf, n);
	g->stderr_len += n;
	g->stderr_tail[g->stderr_len] = 0;
}

static void drain_stderr(struct vmpt_guest *g, ssh_channel ch)
{
	char buf[1024];
	int n;

	while ((n = ssh_channel_read_nonblocking(ch, buf, sizeof(buf), 1)) > 0)
		keep_stderr(g, buf, (size_t)n);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Read exactly n bytes of stdout; the guest's stderr is kept meanwhile.
 * unbounded: wait without a time limit (a guest command is running).
 */
static int chan_read(struct vmpt_guest *g, ssh_channel ch, void *buf, size_t n,
		     int unbounded)
{
	double deadline = now() + g->o.timeout_sec;

	while (n) {
		uint32_t want = n > 65536 ? 65536 : (uint32_t)n;
		int got;

		drain_stderr(g, ch);
		got = ssh_channel_read_timeout(ch, buf, want, 0, 200);
		if (got == SSH_ERROR)
			return set_err(g, -VMPT_ERR_IO, "reading from %s: %s", g->host,
				       ssh_get_error(g->s));
		if (got > 0) {
			buf = (uint8_t *)buf + got;
			n -= (size_t)got;
			deadline = now() + g->o.timeout_sec;
			continue;
		}
		if (ssh_channel_is_eof(ch) || ssh_channel_is_closed(ch)) {
			drain_stderr(g, ch);
			return -VMPT_ERR_TRUNCATED;
		}
		if (!unbounded && now() > deadline)
			return set_err(g, -VMPT_ERR_IO, "%s sent nothing for %d s",
				       g->host, g->o.timeout_sec);
	}
	return 0;
}

/* The exit status once stdout has ended (stderr kept). */
static int chan_finish(struct vmpt_guest *g, ssh_channel ch)
{
	char buf[1024];
	int status;

	/* Whatever follows the reply is dropped; a guest that keeps
	 * talking is not waited for.
	 */
	for (int i = 0; i < 64 && ssh_channel_read_timeout(ch, buf, sizeof(buf), 0, 1000) > 0; i++)
		;
	drain_stderr(g, ch);
	ssh_channel_send_eof(ch);
	status = ssh_channel_get_exit_status(ch);
	ssh_channel_close(ch);
	ssh_channel_free(ch);
	return status;
}

static void strip_newline(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
}

/* "remote `what` failed (exit N): stderr" */
static int remote_err(struct vmpt_guest *g, int status, const char *what)
{
	char how[32];

	strip_newline(g->stderr_tail);
	if (status < 0)
		snprintf(how, sizeof(how), "no exit status: killed?");
	else
		snprintf(how, sizeof(how), "exit %d", status);
	return set_err(g, -VMPT_ERR_REMOTE, "%s in the guest failed (%s)%s%s",
		       what, how, g->stderr_len ? ": " : "",
		       g->stderr_len ? g->stderr_tail : "");
}

static int exec(struct vmpt_guest *g, const char *cmd, ssh_channel *out)
{
	ssh_channel ch = ssh_channel_new(g->s);

	g->stderr_len = 0;
	g->stderr_tail[0] = 0;
	g->err[0] = 0;
	if (!ch || ssh_channel_open_session(ch) != SSH_OK ||
	    ssh_channel_request_exec(ch, cmd) != SSH_OK) {
		set_err(g, -VMPT_ERR_IO, "running a command on %s: %s", g->host,
			ssh_get_error(g->s));
		if (ch)
			ssh_channel_free(ch);
		return -VMPT_ERR_IO;
	}
	*out = ch;
	return 0;
}

/* Run cmd to the end with stdin closed; its stdout (at most max bytes)
 * into a malloc'd string.  Returns the exit status or a negative vmpt_err.
 */
static int run(struct vmpt_guest *g, const char *cmd, char **out, size_t max)
{
	ssh_channel ch;
	char *buf = malloc(max + 1);
	size_t len = 0;
	int ret;

	if (!buf)
		return set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = exec(g, cmd, &ch);
	if (ret) {
		free(buf);
		return ret;
	}
	ssh_channel_send_eof(ch);
	while (len < max) {
		ret = chan_read(g, ch, buf + len, 1, 0);
		if (ret)
			break;
		len++;
	}
	buf[len] = 0;
	if (ret && ret != -VMPT_ERR_TRUNCATED) {
		ssh_channel_free(ch);
		free(buf);
		return ret;
	}
	ret = chan_finish(g, ch);
	*out = buf;
	return ret;
}

/* 'text' for a POSIX shell. */
static char *shell_quote(const char *s)
{
	size_t n = 3;
	char *q, *p;

	for (const char *c = s; *c; c++)
		n += *c == '\'' ? 4 : 1;
	q = p = malloc(n);
	if (!q)
		return NULL;
	*p++ = '\'';
	for (const char *c = s; *c; c++) {
		if (*c == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *c;
		}
	}
	*p++ = '\'';
	*p = 0;
	return q;
}

static char *join(const char *a, const char *b, const char *c)
{
	char *s;

	return asprintf(&s, "%s%s%s", a, b, c) < 0 ? NULL : s;
}

static int sftp_mkdirs(sftp_session sftp, const char *dir)
{
	char *path = strdup(dir);

	if (!path)
		return -1;
	for (char *p = path + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;
			sftp_attributes st;

			*p = 0;
			st = sftp_stat(sftp, path);
			if (st)
				sftp_attributes_free(st);
			else if (sftp_mkdir(sftp, path, 0700) < 0) {
				free(path);
				return -1;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	free(path);
	return 0;
}

static int upload(struct vmpt_guest *g, const char *remote)
{
	sftp_session sftp = sftp_new(g->s);
	char *tmp = join(remote, ".new", "");
	sftp_file f = NULL;
	int fd = -1, ret = -VMPT_ERR_IO;
	char buf[32768];
	ssize_t n;

	if (!sftp || !tmp || sftp_init(sftp) != SSH_OK) {
		set_err(g, -VMPT_ERR_IO, "SFTP to %s: %s", g->host, ssh_get_error(g->s));
		goto out;
	}
	if (sftp_mkdirs(sftp, g->o.remote_dir)) {
		set_err(g, -VMPT_ERR_IO, "creating %s in the guest: %s", g->o.remote_dir,
			ssh_get_error(g->s));
		goto out;
	}
	fd = open(g->o.agent_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
		goto out;
	}
	f = sftp_open(sftp, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0700);
	if (!f) {
		set_err(g, -VMPT_ERR_IO, "creating %s in the guest: %s", tmp,
			ssh_get_error(g->s));
		goto out;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (sftp_write(f, buf, (size_t)n) != n) {
			set_err(g, -VMPT_ERR_IO, "writing %s in the guest: %s", tmp,
				ssh_get_error(g->s));
			goto out;
		}
	}
	if (n < 0) {
		set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
		goto out;
	}
	sftp_close(f);
	f = NULL;
	sftp_unlink(sftp, remote);
	if (sftp_rename(sftp, tmp, remote) < 0) {
		set_err(g, -VMPT_ERR_IO, "renaming %s in the guest: %s", tmp,
			ssh_get_error(g->s));
		goto out;
	}
	ret = 0;
out:
	if (f)
		sftp_close(f);
	if (fd >= 0)
		close(fd);
	if (sftp)
		sftp_free(sftp);
	free(tmp);
	return ret;
}

/* What our agent answers to --version: its version and its file's hash. */
static int expected_version(struct vmpt_guest *g, char *buf, size_t size)
{
	int fd = open(g->o.agent_path, O_RDONLY | O_CLOEXEC);
	uint64_t h = GUEST_FNV_INIT;
	uint8_t chunk[65536];
	ssize_t n;

	if (fd < 0)
		return set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		h = guest_fnv1a64(h, chunk, (size_t)n);
	close(fd);
	if (n < 0)
		return set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
	snprintf(buf, size, "vmpt-agent %s fnv1a64:%016llx\n", GUEST_AGENT_VERSION,
		 (unsigned long long)h);
	return 0;
}

/* Does the guest's agent answer --version as ours would?  1 yes, 0 no. */
static int agent_current(struct vmpt_guest *g, const char *quoted, const char *expected)
{
	char *cmd = join(quoted, " --version", ""), *out = NULL;
	int status, same;

	if (!cmd)
		return set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	/* "not found" is an answer here, not news for the log. */
	g->stderr_quiet = 1;
	status = run(g, cmd, &out, 256);
	g->stderr_quiet = 0;
	free(cmd);
	if (status < 0)
		return status;
	same = status == 0 && !strcmp(out, expected);
	free(out);
	return same;
}

static int deploy(struct vmpt_guest *g)
{
	char *remote = join(g->o.remote_dir, "/vmpt-agent", "");
	char *quoted = remote ? shell_quote(remote) : NULL;
	char *uid = NULL, expected[128];
	int ret, status;

	if (!quoted) {
		ret = set_err(g, -VMPT_ERR_NOMEM, "out of memory");
		goto out;
	}
	ret = expected_version(g, expected, sizeof(expected));
	if (!ret)
		ret = agent_current(g, quoted, expected);
	if (ret == 0) {
		logf_(g, "vmpt: deploying %s to %s:%s\n", g->o.agent_path, g->host, remote);
		ret = upload(g, remote);
		if (!ret) {
			ret = agent_current(g, quoted, expected);
			if (ret == 0)
				ret = remote_err(g, 1, "the deployed vmpt-agent --version");
		}
	}
	if (ret < 0)
		goto out;
	/* Root for cpu-wide events and /proc/kcore; sudo -n never asks. */
	status = run(g, "id -u", &uid, 32);
	if (status < 0) {
		ret = status;
		goto out;
	}
	if (status)
		ret = remote_err(g, status, "id -u");
	else
		ret = 0;
	if (!ret) {
		g->agent = join(strcmp(uid, "0\n") ? "sudo -n " : "", quoted, "");
		if (!g->agent)
			ret = set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	}
out:
	free(uid);
	free(quoted);
	free(remote);
	return ret;
}

/* The agent beside this program: the build tree (cli/ and guest-agent/)
 * or an install (bin/ and libexec/vmpt/); $VMPT_AGENT first.
 */
static char *find_agent(void)
{
	static const char *const rel[] = { "../guest-agent/vmpt-agent",
					   "../libexec/vmpt/vmpt-agent" };
	char exe[PATH_MAX], *path;
	ssize_t n;

	if (getenv("VMPT_AGENT"))
		return strdup(getenv("VMPT_AGENT"));
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		path = join(exe, "/", rel[i]);
		if (path && !access(path, R_OK))
			return path;
		free(path);
	}
	return NULL;
}

int vmpt_guest_open(struct vmpt_guest **gp, const struct vmpt_guest_opts *opts)
{
	struct vmpt_guest *g = calloc(1, sizeof(*g));
	int ret;

	*gp = g;
	if (!g)
		return -VMPT_ERR_NOMEM;
	g->o = *opts;
	if (!g->o.remote_dir)
		g->o.remote_dir = ".cache/vmpt";
	if (!g->o.max_file_size)
		g->o.max_file_size = 1ull << 30;
	if (!g->o.max_total_size)
		g->o.max_total_size = 4ull << 30;
	g->lim.max_file = g->o.max_file_size;
	g->lim.max_total = g->o.max_total_size;
	g->lim.min_free = GUEST_MIN_FREE;
	if (!g->o.timeout_sec)
		g->o.timeout_sec = 120;
	g->known_hosts = strdup(opts->known_hosts ? opts->known_hosts : "~/.ssh/known_hosts");
	if (!opts->url)
		return set_err(g, -VMPT_ERR_INVAL, "no guest URL");
	g->agent_path = opts->agent_path ? strdup(opts->agent_path) : find_agent();
	if (!g->agent_path)
		return set_err(g, -VMPT_ERR_NOT_FOUND,
			       "no vmpt-agent beside this program: give its path (--agent)");
	g->o.agent_path = g->agent_path;
	ret = parse_url(g, opts->url);
	if (!ret)
		ret = connect_session(g);
	if (!ret)
		ret = deploy(g);
	return ret;
}

void vmpt_guest_close(struct vmpt_guest *g)
{
	if (!g)
		return;
	if (g->rec) {
		ssh_channel_close(g->rec);
		ssh_channel_free(g->rec);
	}
	if (g->s) {
		ssh_disconnect(g->s);
		ssh_free(g->s);
	}
	free(g->agent);
	free(g->agent_path);
	free(g->known_hosts);
	free(g->user);
	free(g->host);
	free(g);
}

int vmpt_guest_check(struct vmpt_guest *g, char **report, int *ready)
{
	char *cmd = join(g->agent, " check", "");
	int status;

	if (!cmd)
		return set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	status = run(g, cmd, report, 16384);
	free(cmd);
	if (status < 0)
		return status;
	if (status != 0 && status != 1) {
		free(*report);
		*report = NULL;
		return remote_err(g, status, "vmpt-agent check");
	}
	*ready = status == 0;
	return 0;
}

int vmpt_guest_start(struct vmpt_guest *g, char *const *cmd)
{
	char *line = join(g->agent, " record", cmd ? " --" : ""), ready[64];
	size_t len = 0;
	int ret;

	if (g->rec)
		return set_err(g, -VMPT_ERR_INVAL, "guest sideband is already running");
	for (size_t i = 0; line && cmd && cmd[i]; i++) {
		char *q = shell_quote(cmd[i]), *more = q ? join(line, " ", q) : NULL;

		free(q);
		free(line);
		line = more;
	}
	if (!line)
		return set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = exec(g, line, &g->rec);
	free(line);
	if (ret)
		return ret;
	g->rec_has_cmd = !!cmd;
	/* One line, GUEST_AGENT_READY, once the events are on. */
	while (len < sizeof(ready) - 1) {
		ret = chan_read(g, g->rec, ready + len, 1, 0);
		if (ret || ready[len] == '\n')
			break;
		len++;
	}
	ready[len] = 0;
	if (ret || strcmp(ready, GUEST_AGENT_READY)) {
		int status;

		if (ret && ret != -VMPT_ERR_TRUNCATED) {
			ssh_channel_free(g->rec);
			g->rec = NULL;
			return ret;
		}
		status = chan_finish(g, g->rec);
		g->rec = NULL;
		if (!ret)
			return set_err(g, -VMPT_ERR_FORMAT,
				       "vmpt-agent record answered '%.40s' instead of '%s'",
				       ready, GUEST_AGENT_READY);
		return remote_err(g, status, "vmpt-agent record");
	}
	return 0;
}

struct chan_source {
	struct vmpt_guest *g;
	ssh_channel ch;
	int unbounded_first;
};

static int chan_source_read(void *ctx, void *buf, size_t n)
{
	struct chan_source *cs = ctx;
	int ret = chan_read(cs->g, cs->ch, buf, n, cs->unbounded_first);

	cs->unbounded_first = 0;
	return ret;
}

/* Open (making it, for its owner only: it holds the guest's kernel and
 * binaries) the guest directory.
 */
static int open_guest_dir(struct vmpt_guest *g, const char *gdir)
{
	int fd;

	mkdir(gdir, 0700);
	fd = open(gdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return set_err(g, -VMPT_ERR_IO, "%s: %s", gdir, strerror(errno));
	return fd;
}

/* Read one reply stream from ch, then the exit status. */
static int receive(struct vmpt_guest *g, ssh_channel ch, struct guest_pack_request *reqs,
		   size_t nr, int unbounded, const char *what)
{
	struct chan_source cs = { g, ch, unbounded };
	struct guest_pack_source src = { chan_source_read, &cs, 0 };
	char why[1024], link[sizeof(g->err)];
	int ret, status;

	ret = guest_pack_receive(&src, reqs, nr, &g->lim, why, sizeof(why));
	if (ret == -VMPT_ERR_TRUNCATED) {
		/* The agent ended early: its exit status and stderr say why. */
		status = chan_finish(g, ch);
		if (status)
			return remote_err(g, status, what);
		return set_err(g, ret, "%s: %s", what, why);
	}
	if (ret) {
		/* A bad reply, or the link failed: stop listening. */
		ssh_channel_close(ch);
		ssh_channel_free(ch);
		snprintf(link, sizeof(link), "%s", g->err);
		if (link[0])
			return set_err(g, ret, "%s: %s", what, link);
		return set_err(g, ret, "%s: %s", what, why);
	}
	status = chan_finish(g, ch);
	if (status)
		return remote_err(g, status, what);
	return 0;
}

int vmpt_guest_stop(struct vmpt_guest *g, const char *gdir)
{
	struct guest_pack_request req = { GUEST_PACK_PERF_DATA, -1, "perf.data", 0, 0 };
	ssh_channel ch = g->rec;
	int ret;

	if (!ch)
		return set_err(g, -VMPT_ERR_INVAL, "guest sideband is not running");
	g->rec = NULL;
	ssh_channel_send_eof(ch);
	req.dirfd = open_guest_dir(g, gdir);
	if (req.dirfd < 0) {
		ssh_channel_close(ch);
		ssh_channel_free(ch);
		return req.dirfd;
	}
	g->lim.dir = gdir;
	ret = receive(g, ch, &req, 1, g->rec_has_cmd, "vmpt-agent record");
	close(req.dirfd);
	if (!ret && req.missing_errno)
		ret = set_err(g, -VMPT_ERR_FORMAT, "vmpt-agent record sent no perf.data");
	if (!ret)
		logf_(g, "vmpt: guest sideband: %s/perf.data (%llu bytes)\n", gdir,
		      (unsigned long long)req.size);
	return ret;
}

/* The files to ask for: a guest name and where it goes under DIR/guest. */
struct fetch_list {
	struct guest_pack_request *reqs;
	size_t nr, cap;
};

/* Most distinct guest files one fetch asks for: a guest naming more is
 * not describing real processes.
 */
#define FETCH_MAX_FILES 100000

static int fetch_add(struct fetch_list *l, const char *name, char *dest)
{
	char *copy = strdup(name);

	if (!dest || !copy)
		goto nomem;
	if (l->nr == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct guest_pack_request *r = realloc(l->reqs, cap * sizeof(*r));

		if (!r)
			goto nomem;
		l->reqs = r;
		l->cap = cap;
	}
	l->reqs[l->nr++] = (struct guest_pack_request){ .name = copy, .dest = dest, .dirfd = -1 };
	return 0;
nomem:
	free(copy);
	free(dest);
	return -VMPT_ERR_NOMEM;
}

static void fetch_free(struct fetch_list *l)
{
	for (size_t i = 0; i < l->nr; i++) {
		free((char *)l->reqs[i].name);
		free((char *)l->reqs[i].dest);
	}
	free(l->reqs);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct guest_pack_request *)a)->name,
		      ((const struct guest_pack_request *)b)->name);
}

/* Each name once (a library is mapped by every process), from index first on. */
static void fetch_unique(struct fetch_list *l, size_t first)
{
	size_t out = first;

	qsort(l->reqs + first, l->nr - first, sizeof(*l->reqs), by_name);
	for (size_t i = first; i < l->nr; i++) {
		if (out > first && !strcmp(l->reqs[out - 1].name, l->reqs[i].name)) {
			free((char *)l->reqs[i].name);
			free((char *)l->reqs[i].dest);
			continue;
		}
		l->reqs[out++] = l->reqs[i];
	}
	l->nr = out;
}

/* The guest files the sideband maps executable: the code a trace runs. */
static int binaries_from_sideband(struct vmpt_guest *g, const char *gdir,
				  struct fetch_list *l, unsigned *rejected)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	char *path = join(gdir, "/perf.data", ""), rel[PATH_MAX];
	size_t first = l->nr;
	int ret;

	if (!path)
		return set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = vmpt_perf_open(&pd, path);
	free(path);
	if (ret) {
		set_err(g, ret, "%s", pd.errmsg);
		vmpt_perf_close(&pd);
		return ret;
	}
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		const char *name = ev.mmap.filename, *why;

		if (ev.type != PERF_RECORD_MMAP && ev.type != PERF_RECORD_MMAP2)
			continue;
		if (ev.type == PERF_RECORD_MMAP2 && !(ev.mmap.prot & PROT_EXEC))
			continue;
		if (!strcmp(name, "[vdso]")) {
			ret = fetch_add(l, GUEST_PACK_VDSO, strdup("vdso"));
		} else if (name[0] != '/' || !strncmp(name, "//anon", 6)) {
			continue;	/* anonymous, [heap], memfd: no file */
		} else if (guest_sysroot_path(name, rel, sizeof(rel), &why)) {
			if ((*rejected)++ < 20)
				logf_(g, "vmpt: guest path rejected: '%s': %s\n", name, why);
			continue;
		} else {
			ret = fetch_add(l, name, join("root/", rel, ""));
		}
		if (ret)
			break;
		/* Every process maps the same libraries: keep the list short. */
		if (l->nr - first >= 2 * FETCH_MAX_FILES)
			fetch_unique(l, first);
	}
	if (ret == -VMPT_ERR_NOMEM)
		set_err(g, ret, "out of memory");
	else if (ret < 0)
		set_err(g, ret, "%s", pd.errmsg);
	vmpt_perf_close(&pd);
	if (ret < 0)
		return ret;
	fetch_unique(l, first);
	if (l->nr - first > FETCH_MAX_FILES)
		return set_err(g, -VMPT_ERR_FORMAT,
			       "the guest sideband names %zu files, more than %d",
			       l->nr - first, FETCH_MAX_FILES);
	if (*rejected > 20)
		logf_(g, "vmpt: %u guest paths rejected in all\n", *rejected);
	return 0;
}

/* After a fetch that stopped: what it kept, whole, is said with the error. */
static void kept_files(struct vmpt_guest *g, const struct fetch_list *l, const char *gdir)
{
	uint64_t bytes = 0;
	unsigned files = 0;
	size_t len = strlen(g->err);

	for (size_t i = 0; i < l->nr; i++) {
		if (l->reqs[i].size) {
			files++;
			bytes += l->reqs[i].size;
		}
	}
	if (files)
		snprintf(g->err + len, sizeof(g->err) - len, "; %s keeps the %u file%s (%"
			 PRIu64 " bytes) fetched before", gdir, files, files == 1 ? "" : "s",
			 bytes);
	else
		snprintf(g->err + len, sizeof(g->err) - len, "; no file of this fetch "
			 "is kept");
}

int vmpt_guest_fetch(struct vmpt_guest *g, const char *gdir, unsigned what,
		     struct vmpt_guest_fetch_stats *stats)
{
	uint64_t avail;
	struct fetch_list l = { 0 };
	char *cmd = NULL, *names = NULL;
	size_t names_len = 0;
	ssh_channel ch = NULL;
	FILE *nf;
	int dirfd = -1, ret = 0;

	memset(stats, 0, sizeof(*stats));
	if (what & VMPT_GUEST_FETCH_KCORE) {
		ret = fetch_add(&l, GUEST_PACK_KCORE, strdup("kcore_dir/kcore"));
		if (!ret)
			ret = fetch_add(&l, GUEST_PACK_KALLSYMS, strdup("kcore_dir/kallsyms"));
		if (!ret)
			ret = fetch_add(&l, GUEST_PACK_MODULES, strdup("kcore_dir/modules"));
		if (ret)
			set_err(g, ret, "out of memory");
	}
	if (!ret && (what & VMPT_GUEST_FETCH_BINARIES))
		ret = binaries_from_sideband(g, gdir, &l, &stats->rejected);
	if (ret || !l.nr)
		goto out;
	dirfd = open_guest_dir(g, gdir);
	if (dirfd < 0) {
		ret = dirfd;
		goto out;
	}
	avail = guest_pack_free_space(dirfd);
	if (avail < g->lim.min_free) {
		ret = set_err(g, -VMPT_ERR_IO, "%s has %" PRIu64 " bytes free, less than "
			      "the %" PRIu64 " kept free: no guest files fetched", gdir,
			      avail, g->lim.min_free);
		goto out;
	}
	nf = open_memstream(&names, &names_len);
	for (size_t i = 0; nf && i < l.nr; i++) {
		l.reqs[i].dirfd = dirfd;
		fprintf(nf, "%s\n", l.reqs[i].name);
	}
	cmd = join(g->agent, " pack", "");
	if (!nf || fclose(nf) || !cmd) {
		ret = set_err(g, -VMPT_ERR_NOMEM, "out of memory");
		goto out;
	}
	ret = exec(g, cmd, &ch);
	if (ret)
		goto out;
	if (ssh_channel_write(ch, names, (uint32_t)names_len) != (int)names_len) {
		ret = set_err(g, -VMPT_ERR_IO, "sending the file list to %s: %s", g->host,
			      ssh_get_error(g->s));
		ssh_channel_free(ch);
		goto out;
	}
	ssh_channel_send_eof(ch);
	g->lim.dir = gdir;
	ret = receive(g, ch, l.reqs, l.nr, 0, "vmpt-agent pack");
	if (ret) {
		kept_files(g, &l, gdir);
		goto out;
	}
	for (size_t i = 0; i < l.nr; i++) {
		if (!l.reqs[i].missing_errno) {
			stats->files++;
			stats->bytes += l.reqs[i].size;
			continue;
		}
		if (!strcmp(l.reqs[i].name, GUEST_PACK_KCORE) ||
		    !strcmp(l.reqs[i].name, GUEST_PACK_KALLSYMS)) {
			strip_newline(g->stderr_tail);
			ret = set_err(g, -VMPT_ERR_REMOTE, "the guest gave no %s: %s%s%s",
				      l.reqs[i].name, strerror(l.reqs[i].missing_errno),
				      g->stderr_len ? ": " : "", g->stderr_tail);
			break;
		}
		stats->missing++;
		logf_(g, "vmpt: the guest has no %s: %s\n", l.reqs[i].name,
		      strerror(l.reqs[i].missing_errno));
	}
out:
	if (dirfd >= 0)
		close(dirfd);
	free(cmd);
	free(names);
	fetch_free(&l);
	return ret;
}

int vmpt_guest_finish(struct vmpt_guest *g, const char *recording, unsigned what,
		      struct vmpt_guest_fetch_stats *stats)
{
	struct stat st;
	char *gdir;
	int ret;

	/* Inside perf's directory form, beside a perf.data file: never a
	 * guest/ shared by every recording in a directory.
	 */
	gdir = !stat(recording, &st) && S_ISDIR(st.st_mode) ? join(recording, "/guest", "")
							    : join(recording, ".guest", "");
	if (!gdir)
		return set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = vmpt_guest_stop(g, gdir);
	if (!ret && what)
		ret = vmpt_guest_fetch(g, gdir, what, stats);
	free(gdir);
	return ret;
}
