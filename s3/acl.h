/*
 * Access control lists of buckets and objects: S3's canned ACLs, the
 * AccessControlPolicy XML body, the x-amz-grant-* headers, their stored form
 * and what they grant. Pure: identities are resolved through a callback, so
 * the parser is fuzzed without a gateway. Any thread; no shared state.
 *
 * Stored form (the s3.acl xattr of a bucket directory or an object entry):
 * lines "o <owner>" (the object's writer; absent: the bucket's owner) and
 * "g <perm bits, hex> <type> [<identity name>]", type one of u (an
 * identity), o (the resource's owner), b (the bucket's owner), a
 * (AllUsers), A (AuthenticatedUsers), l (LogDelivery).
 */
#ifndef WEEDFS_S3_ACL_H
#define WEEDFS_S3_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include "buf.h"
#include "s3/s3_err.h"
#include "s3/xml.h"

#define ACL_READ      1u
#define ACL_WRITE     2u
#define ACL_READ_ACP  4u
#define ACL_WRITE_ACP 8u
#define ACL_FULL      15u

/* At most this many grants in one ACL (S3's bound is 100). */
#define ACL_GRANTS_MAX 100

#define ACL_URI_ALL  "http://acs.amazonaws.com/groups/global/AllUsers"
#define ACL_URI_AUTH "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
#define ACL_URI_LOG  "http://acs.amazonaws.com/groups/s3/LogDelivery"

enum acl_who {
	ACL_USER = 'u',         /* name: an identity */
	ACL_OWNER = 'o',        /* the resource's owner */
	ACL_BUCKET_OWNER = 'b', /* the owner of the object's bucket */
	ACL_ALL_USERS = 'a',
	ACL_AUTH_USERS = 'A',
	ACL_LOG_DELIVERY = 'l',
};

struct acl_grant {
	enum acl_who who;
	char *name; /* ACL_USER's identity; else NULL */
	unsigned perm;
};

struct s3_acl {
	char *owner; /* an object's writer; NULL: the bucket's owner */
	struct acl_grant *g;
	size_t n;
};

/*
 * Resolves a grantee: a canonical user id (email false) or an e-mail address
 * to an identity's name (*name, caller frees). S3_OK, or the error to answer
 * (InvalidArgument for an unknown id, UnresolvableGrantByEmailAddress).
 */
typedef enum s3_err (*acl_resolve_fn)(void *ctx, bool email, const char *value, char **name);

/* Frees what a holds and zeroes it. */
void acl_free(struct s3_acl *a);
/* Appends a grant (name copied, may be NULL). */
void acl_add(struct s3_acl *a, enum acl_who who, const char *name, unsigned perm);
/*
 * The canned ACL name for a bucket (bucket true) or an object: its grants
 * added to a (the owner's FULL_CONTROL first). False for a name S3 does not
 * have for that resource.
 */
bool acl_canned(const char *name, bool bucket, struct s3_acl *a);
/*
 * An AccessControlPolicy document data[0..len): its grants added to a.
 * S3_OK, S3_MALFORMED_ACL (not XML, not the schema, an unknown permission or
 * grantee type), or what resolve answered; msg says why.
 */
enum s3_err acl_parse_xml(const char *data, size_t len, acl_resolve_fn resolve, void *ctx,
			  struct s3_acl *a, char *msg, size_t msglen);
/*
 * An x-amz-grant-<perm> header's value (id="...", emailAddress="...",
 * uri="..." joined by commas): its grants of perm added to a. S3_OK,
 * S3_INVALID_ARGUMENT, or what resolve answered.
 */
enum s3_err acl_parse_grant_header(const char *v, unsigned perm, acl_resolve_fn resolve,
				   void *ctx, struct s3_acl *a, char *msg, size_t msglen);
/* The stored form of a, appended to out. */
void acl_encode(const struct s3_acl *a, buf *out);
/* Reads a stored form into a (zeroed first); false (a empty) when it does not parse. */
bool acl_decode(const char *v, size_t len, struct s3_acl *a);
/* Whether a grants anything to AllUsers or AuthenticatedUsers. */
bool acl_is_public(const struct s3_acl *a);
/* Whether a gives only its owner and the bucket owner rights (private's equivalents). */
bool acl_is_owner_only(const struct s3_acl *a);
/*
 * The permission bits a grants to who (an identity's name; NULL: anonymous),
 * the resource's owner being owner and the bucket's bucket_owner (either may
 * be NULL); public (AllUsers, AuthenticatedUsers) grants skipped when
 * ignore_public.
 */
unsigned acl_perms(const struct s3_acl *a, const char *who, const char *owner,
		   const char *bucket_owner, bool ignore_public);
/* The canonical user id of an identity: 64 lowercase hex digits, stable. */
void acl_canonical_id(const char *name, char out[65]);
/*
 * Writes a as an AccessControlPolicy element into w, owner (the resource's,
 * named) and bucket_owner resolving those grantees (NULL: the grant is left
 * out).
 */
void acl_xml(const struct s3_acl *a, xml_w *w, const char *owner, const char *bucket_owner);

#endif
