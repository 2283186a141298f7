/* Unit tests of ACLs (s3/acl.c): canned ACLs, XML bodies, grant headers, the stored form. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "s3/acl.h"
#include "tap.h"
#include "util.h"

/* Knows one identity, "bob", by canonical id and by e-mail. */
static enum s3_err resolve(void *ctx, bool email, const char *value, char **name)
{
	char id[65];
	(void)ctx;
	acl_canonical_id("bob", id);
	if (email ? !strcmp(value, "bob@example.com") : !strcmp(value, id)) {
		*name = xstrdup("bob");
		return S3_OK;
	}
	return email ? S3_UNRESOLVABLE_EMAIL : S3_INVALID_ARGUMENT;
}

static char *encoded(const struct s3_acl *a)
{
	buf b = BUF_INIT;
	char *s;
	acl_encode(a, &b);
	buf_append(&b, "", 1);
	s = xstrdup(b.data);
	buf_free(&b);
	return s;
}

static enum s3_err xml(const char *doc, struct s3_acl *a)
{
	char msg[256];
	memset(a, 0, sizeof(*a));
	return acl_parse_xml(doc, strlen(doc), resolve, NULL, a, msg, sizeof(msg));
}

#define POLICY(grants)                                                                     \
	"<AccessControlPolicy><Owner><ID>x</ID></Owner><AccessControlList>" grants           \
	"</AccessControlList></AccessControlPolicy>"

int main(void)
{
	struct s3_acl a = {0}, b;
	char id[65], *s, msg[128];

	acl_canonical_id("alice", id);
	is_int(strlen(id), 64, "a canonical id is 64 hex digits");
	ok(acl_canned("public-read", false, &a), "public-read");
	ok(acl_is_public(&a) && !acl_is_owner_only(&a), "public-read is public");
	is_int(acl_perms(&a, NULL, "alice", "alice", false), ACL_READ, "anonymous may read");
	is_int(acl_perms(&a, NULL, "alice", "alice", true), 0, "not when public ACLs are ignored");
	is_int(acl_perms(&a, "alice", "alice", "alice", false), ACL_FULL, "the owner: everything");
	a.owner = xstrdup("carol");
	s = encoded(&a);
	is_str(s, "o carol\ng f o\ng 1 a\n", "stored form");
	ok(acl_decode(s, strlen(s), &b) && b.n == 2 && !strcmp(b.owner, "carol"), "read back");
	acl_free(&b);
	free(s);
	acl_free(&a);
	ok(!acl_canned("log-delivery-write", false, &a), "log-delivery-write is a bucket's only");
	acl_free(&a);
	ok(!acl_canned("everyone", true, &a), "an unknown canned ACL");
	acl_free(&a);
	ok(acl_canned("bucket-owner-full-control", false, &a) && acl_is_owner_only(&a),
	   "bucket-owner-full-control is private's equivalent");
	is_int(acl_perms(&a, "bob", "carol", "bob", false), ACL_FULL, "the bucket owner: FULL");
	acl_free(&a);

	char grant[512];
	snprintf(grant, sizeof(grant),
		 POLICY("<Grant><Grantee><ID>%s</ID></Grantee><Permission>READ</Permission></Grant>"
			"<Grant><Grantee><URI>" ACL_URI_AUTH "</URI></Grantee>"
			"<Permission>WRITE</Permission></Grant>"),
		 (acl_canonical_id("bob", id), id));
	is_int(xml(grant, &a), S3_OK, "a body with an id and a group");
	is_int(acl_perms(&a, "bob", "alice", "alice", false), ACL_READ | ACL_WRITE, "bob's rights");
	is_int(acl_perms(&a, "dave", "alice", "alice", false), ACL_WRITE, "any identity's");
	is_int(acl_perms(&a, NULL, "alice", "alice", false), 0, "anonymous: none");
	acl_free(&a);
	is_int(xml(POLICY("<Grant><Grantee><EmailAddress>bob@example.com</EmailAddress>"
			  "</Grantee><Permission>FULL_CONTROL</Permission></Grant>"),
		   &a),
	       S3_OK, "by e-mail");
	acl_free(&a);
	is_int(xml(POLICY("<Grant><Grantee><EmailAddress>x@example.com</EmailAddress>"
			  "</Grantee><Permission>READ</Permission></Grant>"),
		   &a),
	       S3_UNRESOLVABLE_EMAIL, "an unknown e-mail");
	acl_free(&a);
	is_int(xml(POLICY("<Grant><Grantee><ID>nope</ID></Grantee><Permission>READ</Permission>"
			  "</Grant>"),
		   &a),
	       S3_INVALID_ARGUMENT, "an unknown id");
	acl_free(&a);
	is_int(xml(POLICY("<Grant><Grantee><URI>" ACL_URI_ALL "</URI></Grantee>"
			  "<Permission>FLY</Permission></Grant>"),
		   &a),
	       S3_MALFORMED_ACL, "an unknown permission");
	acl_free(&a);
	is_int(xml("<AccessControlPolicy><Owner>", &a), S3_MALFORMED_ACL, "not XML");
	acl_free(&a);
	is_int(xml("<Tagging/>", &a), S3_MALFORMED_ACL, "another document");
	acl_free(&a);

	is_int(acl_parse_grant_header("uri=\"" ACL_URI_ALL "\", emailAddress=\"bob@example.com\"",
				      ACL_READ, resolve, NULL, &a, msg, sizeof(msg)),
	       S3_OK, "a grant header");
	is_int(a.n, 2, "two grantees");
	acl_free(&a);
	is_int(acl_parse_grant_header("user=x", ACL_READ, resolve, NULL, &a, msg, sizeof(msg)),
	       S3_INVALID_ARGUMENT, "an unknown grantee kind");
	acl_free(&a);
	is_int(acl_parse_grant_header("uri=\"http://x/y\"", ACL_READ, resolve, NULL, &a, msg,
				      sizeof(msg)),
	       S3_INVALID_ARGUMENT, "an unknown group");
	acl_free(&a);
	ok(!acl_decode("g 1 z\n", 6, &a), "a stored form with an unknown type is refused");
	ok(!acl_decode("g 0 a\n", 6, &a), "and one without rights");
	ok(!acl_decode("g 1 u\n", 6, &a), "and a user without a name");
	return done_testing();
}
