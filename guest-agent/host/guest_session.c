/* SPDX-License-Identifier: MIT */
/* The host side of vmpt-agent: one session with a guest, the agent
 * deployed over SFTP (when the guest's is not this build's), started,
 * stopped, and every reply read through guest_pack_receive.  The SSH
 * connection is guest_ssh.c's, the fetch of binaries guest_fetch.c's.
 */
#include "guest_session_int.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
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

/* What a fetch leaves free on the host's file system: a guest must not
 * fill the host's disk, however small its files. */
#define GUEST_MIN_FREE (64ull << 20)

int guest_set_err(struct vmpt_guest *g, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->err, sizeof(g->err), fmt, ap);
	va_end(ap);
	return ret;
}

void guest_log(struct vmpt_guest *g, const char *fmt, ...)
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

char *guest_join(const char *a, const char *b, const char *c)
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
			st = VMPT_DL(guest_ssh_lib, sftp_stat)(sftp, path);
			if (st)
				VMPT_DL(guest_ssh_lib, sftp_attributes_free)(st);
			else if (VMPT_DL(guest_ssh_lib, sftp_mkdir)(sftp, path, 0700) < 0) {
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
	sftp_session sftp = VMPT_DL(guest_ssh_lib, sftp_new)(g->s);
	char *tmp = guest_join(remote, ".new", "");
	sftp_file f = NULL;
	int fd = -1, ret = -VMPT_ERR_IO;
	char buf[32768];
	ssize_t n;

	if (!sftp || !tmp || VMPT_DL(guest_ssh_lib, sftp_init)(sftp) != SSH_OK) {
		guest_set_err(g, -VMPT_ERR_IO, "SFTP to %s: %s", g->host, VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
		goto out;
	}
	if (sftp_mkdirs(sftp, g->o.remote_dir)) {
		guest_set_err(g, -VMPT_ERR_IO, "creating %s in the guest: %s", g->o.remote_dir,
			      VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
		goto out;
	}
	fd = open(g->o.agent_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		guest_set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
		goto out;
	}
	f = VMPT_DL(guest_ssh_lib, sftp_open)(sftp, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0700);
	if (!f) {
		guest_set_err(g, -VMPT_ERR_IO, "creating %s in the guest: %s", tmp,
			      VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
		goto out;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (VMPT_DL(guest_ssh_lib, sftp_write)(f, buf, (size_t)n) != n) {
			guest_set_err(g, -VMPT_ERR_IO, "writing %s in the guest: %s", tmp,
				      VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
			goto out;
		}
	}
	if (n < 0) {
		guest_set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
		goto out;
	}
	VMPT_DL(guest_ssh_lib, sftp_close)(f);
	f = NULL;
	VMPT_DL(guest_ssh_lib, sftp_unlink)(sftp, remote);
	if (VMPT_DL(guest_ssh_lib, sftp_rename)(sftp, tmp, remote) < 0) {
		guest_set_err(g, -VMPT_ERR_IO, "renaming %s in the guest: %s", tmp,
			      VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
		goto out;
	}
	ret = 0;
out:
	if (f)
		VMPT_DL(guest_ssh_lib, sftp_close)(f);
	if (fd >= 0)
		close(fd);
	if (sftp)
		VMPT_DL(guest_ssh_lib, sftp_free)(sftp);
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
		return guest_set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		h = guest_fnv1a64(h, chunk, (size_t)n);
	close(fd);
	if (n < 0)
		return guest_set_err(g, -VMPT_ERR_IO, "%s: %s", g->o.agent_path, strerror(errno));
	snprintf(buf, size, "vmpt-agent %s fnv1a64:%016llx\n", GUEST_AGENT_VERSION,
		 (unsigned long long)h);
	return 0;
}

/* Does the guest's agent answer --version as ours would?  1 yes, 0 no. */
static int agent_current(struct vmpt_guest *g, const char *quoted, const char *expected)
{
	char *cmd = guest_join(quoted, " --version", ""), *out = NULL;
	int status, same;

	if (!cmd)
		return guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	/* "not found" is an answer here, not news for the log. */
	g->stderr_quiet = 1;
	status = guest_run(g, cmd, &out, 256);
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
	char *remote = guest_join(g->o.remote_dir, "/vmpt-agent", "");
	char *quoted = remote ? shell_quote(remote) : NULL;
	char *uid = NULL, expected[128];
	int ret, status;

	if (!quoted) {
		ret = guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
		goto out;
	}
	ret = expected_version(g, expected, sizeof(expected));
	if (!ret)
		ret = agent_current(g, quoted, expected);
	if (ret == 0) {
		guest_log(g, "vmpt: deploying %s to %s:%s\n", g->o.agent_path, g->host, remote);
		ret = upload(g, remote);
		if (!ret) {
			ret = agent_current(g, quoted, expected);
			if (ret == 0)
				ret = guest_remote_err(g, 1, "the deployed vmpt-agent --version");
		}
	}
	if (ret < 0)
		goto out;
	/* Root for cpu-wide events and /proc/kcore; sudo -n never asks. */
	status = guest_run(g, "id -u", &uid, 32);
	if (status < 0) {
		ret = status;
		goto out;
	}
	if (status)
		ret = guest_remote_err(g, status, "id -u");
	else
		ret = 0;
	if (!ret) {
		g->agent = guest_join(strcmp(uid, "0\n") ? "sudo -n " : "", quoted, "");
		if (!g->agent)
			ret = guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
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
		path = guest_join(exe, "/", rel[i]);
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
		return guest_set_err(g, -VMPT_ERR_INVAL, "no guest URL");
	g->agent_path = opts->agent_path ? strdup(opts->agent_path) : find_agent();
	if (!g->agent_path)
		return guest_set_err(g, -VMPT_ERR_NOT_FOUND,
				     "no vmpt-agent beside this program: give its path (--agent)");
	g->o.agent_path = g->agent_path;
	ret = guest_parse_url(g, opts->url);
	if (!ret)
		ret = guest_connect(g);
	if (!ret)
		ret = deploy(g);
	return ret;
}

void vmpt_guest_close(struct vmpt_guest *g)
{
	if (!g)
		return;
	if (g->rec) {
		VMPT_DL(guest_ssh_lib, ssh_channel_close)(g->rec);
		VMPT_DL(guest_ssh_lib, ssh_channel_free)(g->rec);
	}
	if (g->s) {
		VMPT_DL(guest_ssh_lib, ssh_disconnect)(g->s);
		VMPT_DL(guest_ssh_lib, ssh_free)(g->s);
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
	char *cmd = guest_join(g->agent, " check", "");
	int status;

	if (!cmd)
		return guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	status = guest_run(g, cmd, report, 16384);
	free(cmd);
	if (status < 0)
		return status;
	if (status != 0 && status != 1) {
		free(*report);
		*report = NULL;
		return guest_remote_err(g, status, "vmpt-agent check");
	}
	*ready = status == 0;
	return 0;
}

int vmpt_guest_start(struct vmpt_guest *g, char *const *cmd)
{
	char *line = guest_join(g->agent, " record", cmd ? " --" : ""), ready[64];
	size_t len = 0;
	int ret;

	if (g->rec)
		return guest_set_err(g, -VMPT_ERR_INVAL, "guest sideband is already running");
	for (size_t i = 0; line && cmd && cmd[i]; i++) {
		char *q = shell_quote(cmd[i]), *more = q ? guest_join(line, " ", q) : NULL;

		free(q);
		free(line);
		line = more;
	}
	if (!line)
		return guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = guest_exec(g, line, &g->rec);
	free(line);
	if (ret)
		return ret;
	g->rec_has_cmd = !!cmd;
	/* One line, GUEST_AGENT_READY, once the events are on. */
	while (len < sizeof(ready) - 1) {
		ret = guest_chan_read(g, g->rec, ready + len, 1, 0);
		if (ret || ready[len] == '\n')
			break;
		len++;
	}
	ready[len] = 0;
	if (ret || strcmp(ready, GUEST_AGENT_READY)) {
		int status;

		if (ret && ret != -VMPT_ERR_TRUNCATED) {
			VMPT_DL(guest_ssh_lib, ssh_channel_free)(g->rec);
			g->rec = NULL;
			return ret;
		}
		status = guest_chan_finish(g, g->rec);
		g->rec = NULL;
		if (!ret)
			return guest_set_err(g, -VMPT_ERR_FORMAT,
					     "vmpt-agent record answered '%.40s' instead of '%s'",
					     ready, GUEST_AGENT_READY);
		return guest_remote_err(g, status, "vmpt-agent record");
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
	int ret = guest_chan_read(cs->g, cs->ch, buf, n, cs->unbounded_first);

	cs->unbounded_first = 0;
	return ret;
}

/* Open (making it, for its owner only: it holds the guest's kernel and
 * binaries) the guest directory.
 */
int guest_open_dir(struct vmpt_guest *g, const char *gdir)
{
	int fd;

	mkdir(gdir, 0700);
	fd = open(gdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return guest_set_err(g, -VMPT_ERR_IO, "%s: %s", gdir, strerror(errno));
	return fd;
}

/* Read one reply stream from ch, then the exit status. */
int guest_receive(struct vmpt_guest *g, ssh_channel ch, struct guest_pack_request *reqs,
		  size_t nr, int unbounded, const char *what)
{
	struct chan_source cs = { g, ch, unbounded };
	struct guest_pack_source src = { chan_source_read, &cs, 0 };
	char why[1024], link[sizeof(g->err)];
	int ret, status;

	ret = guest_pack_receive(&src, reqs, nr, &g->lim, why, sizeof(why));
	if (ret == -VMPT_ERR_TRUNCATED) {
		/* The agent ended early: its exit status and stderr say why. */
		status = guest_chan_finish(g, ch);
		if (status)
			return guest_remote_err(g, status, what);
		return guest_set_err(g, ret, "%s: %s", what, why);
	}
	if (ret) {
		/* A bad reply, or the link failed: stop listening. */
		VMPT_DL(guest_ssh_lib, ssh_channel_close)(ch);
		VMPT_DL(guest_ssh_lib, ssh_channel_free)(ch);
		snprintf(link, sizeof(link), "%s", g->err);
		if (link[0])
			return guest_set_err(g, ret, "%s: %s", what, link);
		return guest_set_err(g, ret, "%s: %s", what, why);
	}
	status = guest_chan_finish(g, ch);
	if (status)
		return guest_remote_err(g, status, what);
	return 0;
}

int vmpt_guest_stop(struct vmpt_guest *g, const char *gdir)
{
	struct guest_pack_request req = { GUEST_PACK_PERF_DATA, -1, "perf.data", 0, 0 };
	ssh_channel ch = g->rec;
	int ret;

	if (!ch)
		return guest_set_err(g, -VMPT_ERR_INVAL, "guest sideband is not running");
	g->rec = NULL;
	VMPT_DL(guest_ssh_lib, ssh_channel_send_eof)(ch);
	req.dirfd = guest_open_dir(g, gdir);
	if (req.dirfd < 0) {
		VMPT_DL(guest_ssh_lib, ssh_channel_close)(ch);
		VMPT_DL(guest_ssh_lib, ssh_channel_free)(ch);
		return req.dirfd;
	}
	g->lim.dir = gdir;
	ret = guest_receive(g, ch, &req, 1, g->rec_has_cmd, "vmpt-agent record");
	close(req.dirfd);
	if (!ret && req.missing_errno)
		ret = guest_set_err(g, -VMPT_ERR_FORMAT, "vmpt-agent record sent no perf.data");
	if (!ret)
		guest_log(g, "vmpt: guest sideband: %s/perf.data (%llu bytes)\n", gdir,
			  (unsigned long long)req.size);
	return ret;
}
