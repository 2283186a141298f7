/*
 * The gateway's identities: the file's (static) and the IAM API's users,
 * stored in the filer (s3_iam_user.h), merged into one reference-counted set
 * (s3_iam.h) that every request takes at its start.
 *
 * DESIGN: one filer entry per user, S3_IAM_USERS_DIR/<name>. A user is made
 * with an exclusive create and changed with a create conditional on the etag
 * it was read at (retried on WFS_EPRECOND), so two gateways changing users at
 * once never lose each other's change; a user is deleted only at the version
 * that was checked to have no keys or policies. Every gateway follows the
 * filer's event stream under /etc/iam/ and rebuilds its set (reads the whole
 * directory) on each event and on each reconnect; the gateway that made a
 * change rebuilds at once. A rebuild that fails (the filer away) keeps the
 * set it has. On a name the file and the filer share, the file's identity
 * wins (the stored user is left out, logged at debug level), and CreateUser
 * refuses it.
 *
 * Thread-safe: any thread; the calls that read or write the filer block.
 */
#ifndef WEEDFS_S3_IAM_STORE_H
#define WEEDFS_S3_IAM_STORE_H

#include <stdbool.h>
#include "client/filer_rpc.h"
#include "err.h"
#include "s3/s3_iam.h"
#include "s3/s3_iam_user.h"

struct s3_iam_store;

/*
 * Takes statics (the file's identities, owned from now on), reads the filer's
 * users once (blocks), then, when watch, follows the event stream of the filer
 * at filer_addr. filer is borrowed and outlives the store.
 */
struct s3_iam_store *s3_iam_store_new(filer_rpc *filer, const char *filer_addr,
				      struct s3_iam *statics, bool watch);
/* Stops the stream and frees st (the sets requests still hold live on). NULL: nothing. */
void s3_iam_store_free(struct s3_iam_store *st);
/* A reference to the current set (s3_iam_free it). */
struct s3_iam *s3_iam_store_get(struct s3_iam_store *st);
/* Rebuilds the set from the filer now. Blocks. */
wfs_err s3_iam_store_reload(struct s3_iam_store *st);
/* Whether name is one of the file's identities. */
bool s3_iam_store_is_static(struct s3_iam_store *st, const char *name);

/* The stored user name: WFS_OK with *u (clear it) and its etag, WFS_ENOENT, or why. */
wfs_err s3_iam_store_read(struct s3_iam_store *st, const char *name, struct s3_iam_user *u,
			  char etag[17]);
/* Writes u: a new user when etag is NULL (WFS_EEXIST if there), else only at etag
   (WFS_EPRECOND when it changed). */
wfs_err s3_iam_store_write(struct s3_iam_store *st, const struct s3_iam_user *u,
			   const char *etag);
/* Deletes user name at etag: WFS_OK, WFS_EPRECOND, WFS_ENOENT. */
wfs_err s3_iam_store_delete(struct s3_iam_store *st, const char *name, const char *etag);
/* Every stored user, by name (*out: n of them; free each with s3_iam_user_clear, then *out). */
wfs_err s3_iam_store_users(struct s3_iam_store *st, struct s3_iam_user **out, size_t *n);

#endif
