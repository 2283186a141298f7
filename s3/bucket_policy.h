/*
 * Bucket policies: the JSON document of PutBucketPolicy in AWS's IAM policy
 * grammar, parsed and validated once, then evaluated against requests:
 *
 *   {"Version": "2012-10-17",
 *    "Statement": [{"Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
 *                   "Action": ["s3:GetObject"],
 *                   "Resource": "arn:aws:s3:::photos/pub*",
 *                   "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}]}
 *
 * Supported: Effect, Principal/NotPrincipal ("*", {"AWS": ..., "Service":
 * ..., "CanonicalUser": ...}), Action/NotAction, Resource/NotResource, and
 * Condition with the String*, Numeric*, Date*, Arn*, Bool,
 * IpAddress/NotIpAddress and Null operators (each but Null also as
 * ...IfExists, and as ForAnyValue:/ForAllValues: for keys with several
 * values). Not supported, refused as malformed: Federated principals and the
 * Binary operator.
 * Policy variables ("${aws:username}", any condition key of the request;
 * ${*}, ${?}, ${$} for the characters) are expanded in Resource and String
 * condition values at evaluation; their text never acts as a wildcard, and a
 * key the request lacks makes the element match nothing.
 *
 * Pure: no I/O, no globals; a parsed policy is read-only, so any number of
 * threads may evaluate it at once. The fuzz target drives it directly.
 */
#ifndef WEEDFS_S3_BUCKET_POLICY_H
#define WEEDFS_S3_BUCKET_POLICY_H

#include <stdbool.h>
#include <stddef.h>

/* The longest policy document taken (AWS's limit: 20 KiB). */
#define BUCKET_POLICY_MAX (20u << 10)

struct bucket_policy;

/* A condition key present in the request; keys compare case-insensitively. */
struct policy_kv {
	const char *key, *value;
};

/*
 * Who makes a request: an identity (principal, its name, matched by {"AWS":
 * name or arn:aws:iam::<acct>:user/name} and by {"CanonicalUser": its
 * canonical_id}), nobody (anonymous: only "*" matches), or a service. The
 * gateway acts as a service for its own work: its access-log delivery
 * writes into the target bucket as POLICY_SERVICE_LOGGING, which only
 * {"Service": "logging.s3.amazonaws.com"} and "*" match. No request of a
 * client is ever judged as a service.
 */
#define POLICY_SERVICE_LOGGING "logging.s3.amazonaws.com"

/* The condition keys holding an object's stored tags: "s3:ExistingObjectTag/<tag key>". */
#define POLICY_EXISTING_TAG "s3:ExistingObjectTag/"

struct policy_request {
	const char *principal; /* identity name; NULL = anonymous (or a service) */
	const char *action;    /* "s3:GetObject" */
	const char *resource;  /* "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key" */
	/* Condition keys of the request ({"aws:SourceIp", "10.1.2.3"}, {"s3:prefix",
	 * "photos/"}, {"aws:SecureTransport", "false"}, ...). A key with several values
	 * (s3:RequestObjectTagKeys) is given once per value: ForAnyValue:/ForAllValues:
	 * see them all, the other operators its first. */
	const struct policy_kv *ctx;
	size_t nctx;
	const char *service;      /* a service's request ("logging.s3.amazonaws.com"); NULL */
	const char *canonical_id; /* the principal's (acl_canonical_id); NULL: none */
};

/*
 * What evaluating p may look at that costs more than the request itself
 * holds, so a caller computes it only when asked: the principal's
 * canonical id (a CanonicalUser principal), the tags stored on the object
 * acted on (a POLICY_EXISTING_TAG key, read from the filer).
 */
enum { POLICY_NEEDS_CANONICAL = 1, POLICY_NEEDS_OBJECT_TAGS = 2 };
struct bucket_policy;
unsigned bucket_policy_needs(const struct bucket_policy *p);

enum policy_effect { POLICY_NO_MATCH, POLICY_ALLOW, POLICY_DENY };

/*
 * Parses and validates json[0..len) as the policy of bucket: every Resource
 * must be "arn:aws:s3:::<bucket>[/<key pattern>]" (wildcards allowed, in the
 * bucket part only if they match bucket). Returns NULL on a malformed document
 * with msg saying which field and why; the S3 answer is S3_MALFORMED_POLICY
 * ("MalformedPolicy", 400) with that message.
 */
struct bucket_policy *bucket_policy_parse(const char *json, size_t len, const char *bucket,
					  char *msg, size_t msglen);
/* The actions a policy may name: S3's ("s3:GetObject") or S3 Tables' ("s3tables:GetTable"). */
struct policy_service;
extern const struct policy_service POLICY_S3, POLICY_S3TABLES;
/*
 * The same for another service: every Action is one of svc's (or a pattern),
 * every Resource arn_prefix, then bucket (a pattern matching it), then
 * nothing or "/..."; S3 Tables' policies take
 * "arn:aws:s3tables:<region>:<account>:bucket/".
 */
struct bucket_policy *bucket_policy_parse_for(const char *json, size_t len,
					      const struct policy_service *svc,
					      const char *arn_prefix, const char *bucket,
					      char *msg, size_t msglen);
/*
 * An identity's inline policy (IAM PutUserPolicy): the same grammar without
 * Principal (refused: the policy speaks of its holder, whom every statement
 * matches), its Resources "*" or "arn:aws:s3:::<bucket pattern>[/<key
 * pattern>]" in any bucket. NULL with msg on a malformed document.
 */
struct bucket_policy *bucket_policy_parse_identity(const char *json, size_t len, char *msg,
						   size_t msglen);
void bucket_policy_free(struct bucket_policy *p);

/*
 * AWS's evaluation logic: a matching Deny statement wins (POLICY_DENY), else a
 * matching Allow gives POLICY_ALLOW, else POLICY_NO_MATCH (the caller falls
 * back to its other permissions). A statement matches when its principal,
 * action, resource and every condition do. A condition key the request lacks
 * makes the condition false, except for negated operators (String*Not*,
 * NumericNotEquals, NotIpAddress) where it is true, ...IfExists where it is
 * true, and Null which tests exactly that. A request value of the wrong type
 * (not a number for Numeric*, not a date for Date*, not an address for
 * *IpAddress, not true/false for Bool) makes the condition false, negated or
 * not. ForAnyValue: holds when some value of the key satisfies the operator,
 * ForAllValues: when each does (so also when the request has none).
 */
enum policy_effect bucket_policy_eval(const struct bucket_policy *p,
				      const struct policy_request *r);

/*
 * Whether p is public in AWS's sense (GetBucketPolicyStatus): some Allow
 * statement grants to "*" without a condition on a key that ties it to fixed
 * callers (aws:SourceIp, aws:SourceVpc(e), aws:SourceArn/Account/Owner,
 * aws:Principal*, aws:userid/username, s3:DataAccessPoint*).
 */
bool bucket_policy_is_public(const struct bucket_policy *p);

#endif
