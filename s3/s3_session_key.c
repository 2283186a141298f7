/*
 * The cluster's session key in the filer, and vended credentials
 * (s3_session_key.h).
 */
#include "config.h"
#include "s3/s3_session_key.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include "client/entry.h"
#include "client/filer_meta.h"
#include "log.h"

/* The key stored at path: WFS_OK with it in key, or why not. */
static wfs_err key_read(filer_rpc *filer, const char *path, uint8_t *key, size_t len)
{
	struct filer_entry *e = NULL;
	wfs_err rc = filer_meta_lookup(filer, path, &e);
	if (!rc && (!e->has_content || e->content_len != len)) {
		log_error("%s is not %zu bytes: what it signs is refused", path, len);
		rc = WFS_EIO;
	}
	if (!rc)
		memcpy(key, e->content, len);
	if (e && e->content)
		OPENSSL_cleanse(e->content, e->content_len);
	filer_entry_free(e);
	return rc;
}

wfs_err s3_cluster_key_load(filer_rpc *filer, const char *path, uint8_t *key, size_t len)
{
	uint8_t fresh[S3_CLUSTER_KEY_MAX];
	struct filer_meta_new n = {.mode = S_IFREG | 0600, .exclusive = true, .parents = true,
				   .content = fresh, .content_len = len, .has_content = true};
	wfs_err rc;

	if (len > sizeof(fresh))
		return WFS_EINVAL;
	rc = key_read(filer, path, key, len);
	if (rc != WFS_ENOENT)
		return rc;
	if (RAND_bytes(fresh, (int)len) != 1)
		return WFS_EINTERNAL;
	rc = filer_meta_create(filer, path, &n, NULL);
	OPENSSL_cleanse(fresh, sizeof(fresh));
	if (!rc)
		log_info("made the cluster key %s", path);
	/* another server's create won (EEXIST), or ours may have committed (EIO): read it */
	return rc && rc != WFS_EEXIST && rc != WFS_EIO ? rc : key_read(filer, path, key, len);
}

wfs_err s3_session_key_load(filer_rpc *filer, uint8_t key[S3_SESSION_KEY_LEN])
{
	return s3_cluster_key_load(filer, S3_SESSION_KEY_PATH, key, S3_SESSION_KEY_LEN);
}

bool s3_session_mint(const uint8_t key[S3_SESSION_KEY_LEN], struct s3_session *s,
		     struct s3_session_creds *out, char *msg, size_t msglen)
{
	uint8_t nonce[S3_SESSION_NONCE_LEN];
	time_t t = (time_t)s->expiry;
	struct tm tm;

	if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
		snprintf(msg, msglen, "no random bytes for an access key id");
		return false;
	}
	if (!s3_session_issue(key, s, nonce, out->session_token, out->secret_key, msg, msglen))
		return false;
	memcpy(out->access_key, s->access_key, sizeof(out->access_key));
	out->expiry = s->expiry;
	gmtime_r(&t, &tm);
	strftime(out->expiration, sizeof(out->expiration), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return true;
}

bool s3_session_vend(const uint8_t key[S3_SESSION_KEY_LEN], const char *parent,
		     const char *bucket, const char *prefix, bool read_write, int ttl_s,
		     int64_t now, struct s3_session_creds *out, char *msg, size_t msglen)
{
	struct s3_session s = {0};
	unsigned acts = S3_SESSION_READ | S3_SESSION_LIST;

	if (ttl_s < S3_SESSION_VEND_TTL_MIN || ttl_s > S3_SESSION_VEND_TTL_MAX) {
		snprintf(msg, msglen, "a TTL of %d..%d seconds", S3_SESSION_VEND_TTL_MIN,
			 S3_SESSION_VEND_TTL_MAX);
		return false;
	}
	if (strlen(parent) > S3_SESSION_PARENT_MAX) {
		snprintf(msg, msglen, "the parent identity's name is too long");
		return false;
	}
	if (read_write)
		acts |= S3_SESSION_WRITE | S3_SESSION_DELETE;
	snprintf(s.parent, sizeof(s.parent), "%s", parent);
	snprintf(s.name, sizeof(s.name), "vended");
	s.expiry = now + ttl_s;
	return s3_session_add_scope(&s, bucket, prefix, acts, msg, msglen) &&
	       s3_session_mint(key, &s, out, msg, msglen);
}
