/* SPDX-License-Identifier: MIT */
/* The host side of vmpt-agent's session, shared by guest_session.c (the
 * agent deployed, started, stopped, its replies read), guest_ssh.c (the SSH
 * connection and the commands run over it) and guest_fetch.c (the guest's
 * binaries and kernel fetched).  Internal to guest-agent/host/.
 */
#ifndef VMPT_GUEST_SESSION_INT_H
#define VMPT_GUEST_SESSION_INT_H

#include "../../lib/vmpt_dl.h"
#include "vmpt/guest.h"
#include "../guest_pack.h"
#include "guest_pack_read.h"

#include <libssh/libssh.h>
#include <stddef.h>

#define STDERR_KEEP 4096

/* libssh (and its SFTP), opened by guest_connect, the first step of every
 * session, not at every vmpt start: it pulls in libcrypto and Kerberos.
 * Every call goes through this table (defined in guest_ssh.c).
 */
#define GUEST_SSH_FUNCS(X) X(sftp_attributes_free) X(sftp_close) X(sftp_free) \
	X(sftp_init) X(sftp_mkdir) X(sftp_new) X(sftp_open) X(sftp_rename) X(sftp_stat) \
	X(sftp_unlink) X(sftp_write) X(ssh_channel_close) X(ssh_channel_free) \
	X(ssh_channel_get_exit_status) X(ssh_channel_is_closed) X(ssh_channel_is_eof) \
	X(ssh_channel_new) X(ssh_channel_open_session) X(ssh_channel_read_nonblocking) \
	X(ssh_channel_read_timeout) X(ssh_channel_request_exec) X(ssh_channel_send_eof) \
	X(ssh_channel_write) X(ssh_clean_pubkey_hash) X(ssh_connect) X(ssh_disconnect) \
	X(ssh_free) X(ssh_get_error) X(ssh_get_fingerprint_hash) X(ssh_get_publickey_hash) \
	X(ssh_get_server_publickey) X(ssh_key_free) X(ssh_new) X(ssh_options_set) \
	X(ssh_pki_import_privkey_file) X(ssh_session_is_known_server) \
	X(ssh_session_update_known_hosts) X(ssh_string_free_char) X(ssh_userauth_publickey) \
	X(ssh_userauth_publickey_auto)
VMPT_DL_DECLARE(guest_ssh_lib, GUEST_SSH_FUNCS);

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

/* Set the session's message; returns ret. */
int guest_set_err(struct vmpt_guest *g, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A progress line to the log, if there is one. */
void guest_log(struct vmpt_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* a b c, allocated (NULL: out of memory). */
char *guest_join(const char *a, const char *b, const char *c);

/* guest_ssh.c: ssh://[user@]host[:port] into g. */
int guest_parse_url(struct vmpt_guest *g, const char *url);
/* Connect, check the host key against known_hosts, authenticate by key. */
int guest_connect(struct vmpt_guest *g);
/* n bytes from ch, within the session's timeout (unbounded: the first
 * bytes may take as long as a guest command runs).
 */
int guest_chan_read(struct vmpt_guest *g, ssh_channel ch, void *buf, size_t n,
		    int unbounded);
/* Close ch: the remote command's exit status, or an error. */
int guest_chan_finish(struct vmpt_guest *g, ssh_channel ch);
void guest_strip_newline(char *s);
/* The message for a remote command's failure (status), its stderr kept. */
int guest_remote_err(struct vmpt_guest *g, int status, const char *what);
/* Start cmd on a new channel. */
int guest_exec(struct vmpt_guest *g, const char *cmd, ssh_channel *out);
/* Run cmd, its output (up to max bytes) in *out. */
int guest_run(struct vmpt_guest *g, const char *cmd, char **out, size_t max);

/* guest_session.c: the guest directory opened (made, mode 0700). */
int guest_open_dir(struct vmpt_guest *g, const char *gdir);
/* Read one reply stream from ch, then the exit status. */
int guest_receive(struct vmpt_guest *g, ssh_channel ch, struct guest_pack_request *reqs,
		  size_t nr, int unbounded, const char *what);

#endif
