/* SPDX-License-Identifier: MIT */
/* vmpt-agent's SSH connection (libssh): key authentication only, host keys
 * checked against known_hosts, commands run on channels with a timeout and
 * their stderr kept for messages.
 */
#include "guest_session_int.h"
#include "vmpt/error.h"

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

VMPT_DL_DEFINE(guest_ssh_lib, GUEST_SSH_FUNCS, "libssh.so.4", "libssh-4");

/* ssh://[user@]host[:port], host may be [v6]. */
int guest_parse_url(struct vmpt_guest *g, const char *url)
{
	const char *p = url, *at, *host_end;

	if (strncmp(p, "ssh://", 6))
		return guest_set_err(g, -VMPT_ERR_INVAL, "%s: not an ssh://user@host[:port] URL", url);
	p += 6;
	at = strchr(p, '@');
	if (at) {
		g->user = strndup(p, (size_t)(at - p));
		p = at + 1;
	}
	if (*p == '[') {
		host_end = strchr(p, ']');
		if (!host_end)
			return guest_set_err(g, -VMPT_ERR_INVAL, "%s: unclosed '['", url);
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
			return guest_set_err(g, -VMPT_ERR_INVAL, "%s: bad port", url);
		g->port = (unsigned)port;
		host_end = end;
	}
	if (*host_end == '/')
		host_end++;
	if (*host_end || !g->host || !*g->host || (at && (!g->user || !*g->user)))
		return guest_set_err(g, -VMPT_ERR_INVAL, "%s: not an ssh://user@host[:port] URL", url);
	return 0;
}

static char *key_fingerprint(ssh_session s)
{
	ssh_key key = NULL;
	unsigned char *hash = NULL;
	size_t len = 0;
	char *fp = NULL;

	if (VMPT_DL(guest_ssh_lib, ssh_get_server_publickey)(s, &key) == SSH_OK &&
	    VMPT_DL(guest_ssh_lib, ssh_get_publickey_hash)(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &len) == 0) {
		fp = VMPT_DL(guest_ssh_lib, ssh_get_fingerprint_hash)(SSH_PUBLICKEY_HASH_SHA256, hash, len);
		VMPT_DL(guest_ssh_lib, ssh_clean_pubkey_hash)(&hash);
	}
	VMPT_DL(guest_ssh_lib, ssh_key_free)(key);
	return fp;
}

static int check_host_key(struct vmpt_guest *g)
{
	char *fp = key_fingerprint(g->s);
	enum ssh_known_hosts_e state = VMPT_DL(guest_ssh_lib, ssh_session_is_known_server)(g->s);
	int ret = 0;

	switch (state) {
	case SSH_KNOWN_HOSTS_OK:
		break;
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		ret = guest_set_err(g, -VMPT_ERR_PERM,
				    "host key of %s port %u has CHANGED (now %s; %s has another): "
				    "someone may be intercepting the connection. If the guest was "
				    "reinstalled, remove the old key: ssh-keygen -R '[%s]:%u' -f %s",
				    g->host, g->port, fp ? fp : "?", g->known_hosts, g->host, g->port,
				    g->known_hosts);
		break;
	case SSH_KNOWN_HOSTS_UNKNOWN:
	case SSH_KNOWN_HOSTS_NOT_FOUND:
		if (!g->o.accept_new_host_key) {
			ret = guest_set_err(g, -VMPT_ERR_PERM,
					    "host key of %s port %u (%s) is not in %s: check the "
					    "fingerprint, then trust it with --accept-new-host-key",
					    g->host, g->port, fp ? fp : "?", g->known_hosts);
			break;
		}
		if (VMPT_DL(guest_ssh_lib, ssh_session_update_known_hosts)(g->s) != SSH_OK) {
			ret = guest_set_err(g, -VMPT_ERR_IO, "adding the host key of %s to %s: %s",
					    g->host, g->known_hosts, VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
			break;
		}
		guest_log(g, "vmpt: added the host key of %s port %u (%s) to %s\n",
			  g->host, g->port, fp ? fp : "?", g->known_hosts);
		break;
	default:
		ret = guest_set_err(g, -VMPT_ERR_IO, "checking the host key of %s in %s: %s",
				    g->host, g->known_hosts, VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
	}
	VMPT_DL(guest_ssh_lib, ssh_string_free_char)(fp);
	return ret;
}

/* Key authentication only: never a password, never a prompt. */
static int authenticate(struct vmpt_guest *g)
{
	const char *user = g->user ? g->user : "(local user)";
	int rc;

	if (g->o.identity) {
		ssh_key key = NULL;

		if (VMPT_DL(guest_ssh_lib, ssh_pki_import_privkey_file)(g->o.identity, NULL, NULL, NULL, &key) != SSH_OK)
			return guest_set_err(g, -VMPT_ERR_PERM,
					     "cannot read the private key %s (a passphrase-protected "
					     "key must be loaded into ssh-agent instead)", g->o.identity);
		rc = VMPT_DL(guest_ssh_lib, ssh_userauth_publickey)(g->s, NULL, key);
		VMPT_DL(guest_ssh_lib, ssh_key_free)(key);
	} else {
		rc = VMPT_DL(guest_ssh_lib, ssh_userauth_publickey_auto)(g->s, NULL, NULL);
	}
	if (rc == SSH_AUTH_SUCCESS)
		return 0;
	if (rc == SSH_AUTH_ERROR)
		return guest_set_err(g, -VMPT_ERR_IO, "authenticating to %s: %s", g->host,
				     VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
	return guest_set_err(g, -VMPT_ERR_PERM,
			     "%s@%s port %u refused key authentication (tried %s); vmpt uses keys "
			     "only: add the public key to the guest's authorized_keys",
			     user, g->host, g->port, g->o.identity ? g->o.identity :
			     "ssh-agent and ~/.ssh/id_*");
}

int guest_connect(struct vmpt_guest *g)
{
	long timeout = g->o.timeout_sec;
	int ret;

	if (vmpt_dl_load(&guest_ssh_lib) < 0)
		return guest_set_err(g, -VMPT_ERR_NO_LIBRARY, "%s",
				     vmpt_dl_errmsg(&guest_ssh_lib));
	g->s = VMPT_DL(guest_ssh_lib, ssh_new)();
	if (!g->s)
		return guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	VMPT_DL(guest_ssh_lib, ssh_options_set)(g->s, SSH_OPTIONS_HOST, g->host);
	VMPT_DL(guest_ssh_lib, ssh_options_set)(g->s, SSH_OPTIONS_PORT, &g->port);
	VMPT_DL(guest_ssh_lib, ssh_options_set)(g->s, SSH_OPTIONS_TIMEOUT, &timeout);
	if (g->user)
		VMPT_DL(guest_ssh_lib, ssh_options_set)(g->s, SSH_OPTIONS_USER, g->user);
	if (g->o.known_hosts) {
		/* Only this file: a global one must not vouch for a host the
		 * user keeps apart.
		 */
		VMPT_DL(guest_ssh_lib, ssh_options_set)(g->s, SSH_OPTIONS_KNOWNHOSTS, g->o.known_hosts);
		VMPT_DL(guest_ssh_lib, ssh_options_set)(g->s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
	}
	if (VMPT_DL(guest_ssh_lib, ssh_connect)(g->s) != SSH_OK)
		return guest_set_err(g, -VMPT_ERR_IO, "connecting to %s port %u: %s",
				     g->host, g->port, VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
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

	while ((n = VMPT_DL(guest_ssh_lib, ssh_channel_read_nonblocking)(ch, buf, sizeof(buf), 1)) > 0)
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
int guest_chan_read(struct vmpt_guest *g, ssh_channel ch, void *buf, size_t n,
		    int unbounded)
{
	double deadline = now() + g->o.timeout_sec;

	while (n) {
		uint32_t want = n > 65536 ? 65536 : (uint32_t)n;
		int got;

		drain_stderr(g, ch);
		got = VMPT_DL(guest_ssh_lib, ssh_channel_read_timeout)(ch, buf, want, 0, 200);
		if (got == SSH_ERROR)
			return guest_set_err(g, -VMPT_ERR_IO, "reading from %s: %s", g->host,
					     VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
		if (got > 0) {
			buf = (uint8_t *)buf + got;
			n -= (size_t)got;
			deadline = now() + g->o.timeout_sec;
			continue;
		}
		if (VMPT_DL(guest_ssh_lib, ssh_channel_is_eof)(ch) || VMPT_DL(guest_ssh_lib, ssh_channel_is_closed)(ch)) {
			drain_stderr(g, ch);
			return -VMPT_ERR_TRUNCATED;
		}
		if (!unbounded && now() > deadline)
			return guest_set_err(g, -VMPT_ERR_IO, "%s sent nothing for %d s",
					     g->host, g->o.timeout_sec);
	}
	return 0;
}

/* The exit status once stdout has ended (stderr kept). */
int guest_chan_finish(struct vmpt_guest *g, ssh_channel ch)
{
	char buf[1024];
	int status;

	/* Whatever follows the reply is dropped; a guest that keeps
	 * talking is not waited for.
	 */
	for (int i = 0; i < 64 && VMPT_DL(guest_ssh_lib, ssh_channel_read_timeout)(ch, buf, sizeof(buf), 0, 1000) > 0; i++)
		;
	drain_stderr(g, ch);
	VMPT_DL(guest_ssh_lib, ssh_channel_send_eof)(ch);
	status = VMPT_DL(guest_ssh_lib, ssh_channel_get_exit_status)(ch);
	VMPT_DL(guest_ssh_lib, ssh_channel_close)(ch);
	VMPT_DL(guest_ssh_lib, ssh_channel_free)(ch);
	return status;
}

void guest_strip_newline(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
}

/* "remote `what` failed (exit N): stderr" */
int guest_remote_err(struct vmpt_guest *g, int status, const char *what)
{
	char how[32];

	guest_strip_newline(g->stderr_tail);
	if (status < 0)
		snprintf(how, sizeof(how), "no exit status: killed?");
	else
		snprintf(how, sizeof(how), "exit %d", status);
	return guest_set_err(g, -VMPT_ERR_REMOTE, "%s in the guest failed (%s)%s%s",
			     what, how, g->stderr_len ? ": " : "",
			     g->stderr_len ? g->stderr_tail : "");
}

int guest_exec(struct vmpt_guest *g, const char *cmd, ssh_channel *out)
{
	ssh_channel ch = VMPT_DL(guest_ssh_lib, ssh_channel_new)(g->s);

	g->stderr_len = 0;
	g->stderr_tail[0] = 0;
	g->err[0] = 0;
	if (!ch || VMPT_DL(guest_ssh_lib, ssh_channel_open_session)(ch) != SSH_OK ||
	    VMPT_DL(guest_ssh_lib, ssh_channel_request_exec)(ch, cmd) != SSH_OK) {
		guest_set_err(g, -VMPT_ERR_IO, "running a command on %s: %s", g->host,
			      VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
		if (ch)
			VMPT_DL(guest_ssh_lib, ssh_channel_free)(ch);
		return -VMPT_ERR_IO;
	}
	*out = ch;
	return 0;
}

/* Run cmd to the end with stdin closed; its stdout (at most max bytes)
 * into a malloc'd string.  Returns the exit status or a negative vmpt_err.
 */
int guest_run(struct vmpt_guest *g, const char *cmd, char **out, size_t max)
{
	ssh_channel ch;
	char *buf = malloc(max + 1);
	size_t len = 0;
	int ret;

	if (!buf)
		return guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = guest_exec(g, cmd, &ch);
	if (ret) {
		free(buf);
		return ret;
	}
	VMPT_DL(guest_ssh_lib, ssh_channel_send_eof)(ch);
	while (len < max) {
		ret = guest_chan_read(g, ch, buf + len, 1, 0);
		if (ret)
			break;
		len++;
	}
	buf[len] = 0;
	if (ret && ret != -VMPT_ERR_TRUNCATED) {
		VMPT_DL(guest_ssh_lib, ssh_channel_free)(ch);
		free(buf);
		return ret;
	}
	ret = guest_chan_finish(g, ch);
	*out = buf;
	return ret;
}
