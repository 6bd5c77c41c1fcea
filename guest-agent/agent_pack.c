/* SPDX-License-Identifier: MIT */
#include "agent.h"
#include "guest_pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int put(FILE *out, const void *buf, size_t n)
{
	if (n && fwrite(buf, 1, n, out) != n)
		return errno ? -errno : -EIO;
	return 0;
}

static int frame(FILE *out, uint32_t kind, const char *name, uint32_t err,
		 const void *data, uint64_t size)
{
	uint8_t hdr[GUEST_PACK_HDR_LEN] = { 0 };
	size_t len = name ? strlen(name) : 0;
	int ret;

	if (len > GUEST_PACK_PATH_MAX)
		return -ENAMETOOLONG;
	put_le32(hdr, kind);
	put_le32(hdr + 4, (uint32_t)len);
	put_le32(hdr + 8, err);
	put_le64(hdr + 16, size);
	ret = put(out, hdr, sizeof(hdr));
	if (!ret)
		ret = put(out, name, len);
	if (!ret)
		ret = put(out, data, size);
	return ret;
}

int agent_pack_begin(FILE *out)
{
	return put(out, GUEST_PACK_MAGIC, GUEST_PACK_MAGIC_LEN);
}

int agent_pack_file(FILE *out, const char *name, const void *data, uint64_t size)
{
	return frame(out, GUEST_PACK_FILE, name, 0, data, size);
}

int agent_pack_missing(FILE *out, const char *name, int err)
{
	return frame(out, GUEST_PACK_MISSING, name, (uint32_t)err, NULL, 0);
}

int agent_pack_end(FILE *out)
{
	int ret = frame(out, GUEST_PACK_END, NULL, 0, NULL, 0);

	if (!ret && fflush(out))
		ret = -errno;
	return ret;
}

int agent_read_file(const char *path, uint8_t **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int ret = 0;

	if (fd < 0)
		return -errno;
	/* Only regular files: a FIFO or device named by a guest path would
	 * block or never end.
	 */
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap ? 2 * cap : (size_t)st.st_size + 4096;
			uint8_t *nbuf = realloc(buf, ncap);

			if (!nbuf) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;	/* the loop grows buf before each read: len < cap */
out:
	close(fd);
	if (ret) {
		free(buf);
		return ret;
	}
	*data = buf;
	*size = len;
	return 0;
}

int agent_vdso(const uint8_t **data, size_t *size)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char line[512];
	FILE *maps;
	int ret = -ENOENT;

	if (!base)
		return -ENOENT;
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return -errno;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, end;

		if (!strstr(line, "[vdso]") ||
		    sscanf(line, "%lx-%lx", &start, &end) != 2 || start != base)
			continue;
		*data = (const uint8_t *)start;
		*size = end - start;
		ret = 0;
		break;
	}
	fclose(maps);
	return ret;
}

/* One requested name into the stream: a guest file, or a made-up one. */
static int pack_one(FILE *out, const char *name)
{
	uint8_t *data = NULL;
	size_t size = 0;
	int ret;

	if (!strcmp(name, GUEST_PACK_VDSO)) {
		const uint8_t *vdso;

		ret = agent_vdso(&vdso, &size);
		return ret ? agent_pack_missing(out, name, -ret)
			   : agent_pack_file(out, name, vdso, size);
	}
	if (!strcmp(name, GUEST_PACK_KCORE)) {
		const char *why;

		ret = agent_kcore_build(&data, &size, &why);
		if (ret)
			fprintf(stderr, "vmpt-agent: kcore: %s: %s\n", why,
				strerror(-ret));
	} else if (!strcmp(name, GUEST_PACK_KALLSYMS)) {
		ret = agent_read_file("/proc/kallsyms", &data, &size);
	} else if (!strcmp(name, GUEST_PACK_MODULES)) {
		ret = agent_read_file("/proc/modules", &data, &size);
	} else if (name[0] == '/') {
		ret = agent_read_file(name, &data, &size);
	} else {
		ret = -EINVAL;
	}
	if (ret)
		return agent_pack_missing(out, name, -ret);
	ret = agent_pack_file(out, name, data, size);
	free(data);
	return ret;
}

int agent_pack(int argc, char **argv)
{
	char **names = NULL, *line = NULL;
	size_t nr = 0, cap = 0;
	ssize_t len;
	int ret = 0;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: vmpt-agent pack < NAMES\n");
		return 2;
	}
	/* All names first: replying while the host still writes could
	 * block both sides on full channel windows.
	 */
	while ((len = getline(&line, &cap, stdin)) > 0) {
		char **more;

		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (!len)
			continue;
		more = realloc(names, (nr + 1) * sizeof(*names));
		if (!more) {
			ret = -ENOMEM;
			break;
		}
		names = more;
		names[nr++] = line;
		line = NULL;
		cap = 0;
	}
	free(line);
	if (!ret)
		ret = agent_pack_begin(stdout);
	for (size_t i = 0; !ret && i < nr; i++)
		ret = pack_one(stdout, names[i]);
	if (!ret)
		ret = agent_pack_end(stdout);
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	if (ret) {
		fprintf(stderr, "vmpt-agent: pack: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}
