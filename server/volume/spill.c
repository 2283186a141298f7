#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "crc32c.h"
#include "log.h"
#include "spill.h"
#include "util.h"

struct spill {
	int fd;
	uint64_t size;
	uint32_t crc;
	EVP_MD_CTX *md5; /* NULL unless asked for */
};

static int open_anon(const char *dir)
{
	char *tmpl;
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	tmpl = xasprintf("%s/.upload-XXXXXX", dir);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd >= 0)
		unlink(tmpl);
	free(tmpl);
	return fd;
}

wfs_err spill_new(const char *dir, bool md5, spill **out)
{
	spill *s;
	int fd = open_anon(dir);

	*out = NULL;
	if (fd < 0)
		return wfs_err_from_errno(errno);
	s = xcalloc(1, sizeof(*s));
	s->fd = fd;
	if (md5) {
		s->md5 = EVP_MD_CTX_new();
		if (!s->md5 || !EVP_DigestInit_ex(s->md5, EVP_md5(), NULL))
			fatal("out of memory (MD5)");
	}
	*out = s;
	return WFS_OK;
}

wfs_err spill_write(spill *s, const void *data, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(s->fd, (const char *)data + done, len - done,
				   (off_t)(s->size + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? wfs_err_from_errno(errno) : WFS_EIO;
		done += (size_t)r;
	}
	s->size += len;
	s->crc = crc32c_update(s->crc, data, len);
	if (s->md5)
		EVP_DigestUpdate(s->md5, data, len);
	return WFS_OK;
}

wfs_err spill_reset(spill *s)
{
	if (ftruncate(s->fd, 0) < 0)
		return wfs_err_from_errno(errno);
	s->size = 0;
	s->crc = 0;
	if (s->md5)
		EVP_DigestInit_ex(s->md5, EVP_md5(), NULL);
	return WFS_OK;
}

int spill_fd(const spill *s) { return s->fd; }

uint64_t spill_size(const spill *s) { return s->size; }

uint32_t spill_crc(const spill *s) { return s->crc; }

bool spill_md5_matches(spill *s, const char *b64)
{
	unsigned char md[EVP_MAX_MD_SIZE], enc[64];
	unsigned int mdlen = 0;
	EVP_MD_CTX *c;

	if (!s->md5)
		return false;
	/* finalize a copy so the running hash stays usable */
	c = EVP_MD_CTX_new();
	if (!c || !EVP_MD_CTX_copy_ex(c, s->md5) || !EVP_DigestFinal_ex(c, md, &mdlen)) {
		EVP_MD_CTX_free(c);
		return false;
	}
	EVP_MD_CTX_free(c);
	EVP_EncodeBlock(enc, md, (int)mdlen);
	return !strcmp((const char *)enc, b64);
}

void spill_free(spill *s)
{
	if (!s)
		return;
	close(s->fd);
	EVP_MD_CTX_free(s->md5);
	free(s);
}
