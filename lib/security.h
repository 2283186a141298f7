/*
 * security: a node's security file (-security=FILE), the TOML subset of
 * SeaweedFS's security.toml that users already write, read once at start and
 * kept process-wide.
 *
 *   [jwt.signing]            key, expires_after_seconds: volume writes/deletes
 *   [jwt.signing.read]       the same for volume reads
 *   [jwt.filer_signing]      the filer's HTTP and JSON APIs (writes)
 *   [jwt.filer_signing.read] the same for reads
 *   [https.client]           enabled, cert, key, ca: every internal client
 *   [https.master|volume|filer|s3]  cert, key, ca, disable_tls_verify_client_cert:
 *                            that role's listeners (s3 also covers the catalogs)
 *
 * A listener's ca means peers must present a certificate it signed (mTLS)
 * unless disable_tls_verify_client_cert is true. A key or section left empty
 * turns its protection off. Other SeaweedFS sections ([grpc.*], [guard],
 * [access], [cors.*], ...) are accepted and ignored; an unknown key inside a
 * section this file knows is an error, so a typo never disables security.
 *
 * The syntax read: comments (#), [table] headers with dotted names, key =
 * value with values a "basic string" (\" \\ \n \t \uXXXX escapes), a 'literal
 * string', an integer, true/false, or a one-line array of those (ignored).
 *
 * Threads: security_init on the main thread before others start; the getters
 * from any thread afterwards. Reload hooks run on the thread calling
 * security_reload (the daemon's signal thread on SIGHUP).
 */
#ifndef WEEDFS_SECURITY_H
#define WEEDFS_SECURITY_H

#include <stdbool.h>
#include <stddef.h>
#include "err.h"

#define SECURITY_EXPIRES_DEFAULT 10 /* seconds a token lives when the file does not say */

/* One HS256 signing key; key NULL when not configured (the protection is off). */
struct security_key {
	char *key;
	size_t key_len;
	int expires_after_sec;
};

enum security_role {
	SECURITY_MASTER,
	SECURITY_VOLUME,
	SECURITY_FILER,
	SECURITY_S3, /* the S3 gateway and the catalogs it serves */
	SECURITY_ROLE_COUNT
};

/* A listener's TLS: on when cert is set. Paths, owned. */
struct security_tls_server {
	char *cert, *key, *ca;
	bool verify_client; /* ca set and disable_tls_verify_client_cert false */
};

/* The internal clients' TLS: on when enabled. cert/key (client certificate for mTLS) may be NULL. */
struct security_tls_client {
	bool enabled;
	char *cert, *key, *ca;
};

struct security_conf {
	struct security_key volume_write, volume_read; /* jwt.signing, jwt.signing.read */
	struct security_key filer_write, filer_read;   /* jwt.filer_signing(.read) */
	struct security_tls_server https[SECURITY_ROLE_COUNT];
	struct security_tls_client client;
};

/*
 * Parses a security file's text (len bytes, need not be NUL-terminated) into
 * *out (zeroed first; free with security_conf_free). WFS_EINVAL with a message
 * naming the line in errbuf for bad syntax, an unknown key in a known section,
 * a value of the wrong type, or a TLS section with a cert but no key.
 */
wfs_err security_conf_parse(const char *text, size_t len, struct security_conf *out, char *errbuf,
			    size_t errlen);
void security_conf_free(struct security_conf *c);

/*
 * Reads and parses path into the process-wide configuration (path NULL or ""
 * leaves everything off). WFS_EINVAL/WFS_EIO with a message in errbuf; then
 * the process-wide configuration is unchanged. Also checks that the TLS files
 * named can be read.
 */
wfs_err security_init(const char *path, char *errbuf, size_t errlen);
/* The process-wide configuration: never NULL (all off before security_init). */
const struct security_conf *security(void);
/* True when c asks for TLS on a listener or the internal clients. */
bool security_tls_requested(const struct security_conf *c);
/* The file security_init read, or NULL. */
const char *security_path(void);

/*
 * Reload hooks: what must change when certificates are replaced on disk
 * (listeners rebuild their TLS contexts). security_reload runs every hook in
 * registration order; a hook that fails logs and keeps its old state.
 */
typedef void (*security_reload_fn)(void *arg);
void security_on_reload(security_reload_fn fn, void *arg);
/* Removes a hook registered with the same fn and arg (a listener going away). */
void security_off_reload(security_reload_fn fn, void *arg);
void security_reload(void);

/* The -security flag's help text, one for every command. */
#define SECURITY_FLAG_HELP "security file (TOML): JWT signing keys and TLS, see docs/security.md"

#endif
