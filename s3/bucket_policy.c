/*
 * Bucket policies (bucket_policy.h).
 *
 * DESIGN: the document is parsed by yajl into a tree that the policy keeps;
 * the compiled statements point into it for every string, so parsing copies
 * nothing but what needs converting once (numbers, CIDRs, true/false).
 * Validation happens entirely at parse time: evaluation cannot fail, it only
 * matches. Wildcards are matched by a backtracking-free loop (linear in the
 * pattern times the subject at worst, never exponential), because both
 * patterns and subjects come from clients.
 */
#include "config.h"
#include "s3/bucket_policy.h"
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "json.h"
#include "util.h"

#define RES_PREFIX "arn:aws:s3:::"
#define IAM_PREFIX "arn:aws:iam::"
/* A policy needs depth 6 (document, Statement, statement, Condition, operator,
 * values); deeper documents are refused before yajl, whose tree free recurses. */
#define DEPTH_MAX 16

/* What a condition operator compares; the Not* forms share their positive one. */
enum cmp {
	C_STR_EQ,
	C_STR_EQ_IC,
	C_STR_LIKE,
	C_NUM_EQ,
	C_NUM_LT,
	C_NUM_LE,
	C_NUM_GT,
	C_NUM_GE,
	C_BOOL,
	C_IP,
	C_NULL,
	C_DATE_EQ,
	C_DATE_LT,
	C_DATE_LE,
	C_DATE_GT,
	C_DATE_GE,
	C_ARN,
};

struct op_def {
	const char *name;
	enum cmp cmp;
	bool neg;
};

static const struct op_def ops[] = {
	{"StringEquals", C_STR_EQ, false},
	{"StringNotEquals", C_STR_EQ, true},
	{"StringEqualsIgnoreCase", C_STR_EQ_IC, false},
	{"StringNotEqualsIgnoreCase", C_STR_EQ_IC, true},
	{"StringLike", C_STR_LIKE, false},
	{"StringNotLike", C_STR_LIKE, true},
	{"NumericEquals", C_NUM_EQ, false},
	{"NumericNotEquals", C_NUM_EQ, true},
	{"NumericLessThan", C_NUM_LT, false},
	{"NumericLessThanEquals", C_NUM_LE, false},
	{"NumericGreaterThan", C_NUM_GT, false},
	{"NumericGreaterThanEquals", C_NUM_GE, false},
	{"Bool", C_BOOL, false},
	{"IpAddress", C_IP, false},
	{"NotIpAddress", C_IP, true},
	{"Null", C_NULL, false},
	{"DateEquals", C_DATE_EQ, false},
	{"DateNotEquals", C_DATE_EQ, true},
	{"DateLessThan", C_DATE_LT, false},
	{"DateLessThanEquals", C_DATE_LE, false},
	{"DateGreaterThan", C_DATE_GT, false},
	{"DateGreaterThanEquals", C_DATE_GE, false},
	/* ArnEquals and ArnLike are the same: each ARN component may hold wildcards */
	{"ArnEquals", C_ARN, false},
	{"ArnLike", C_ARN, false},
	{"ArnNotEquals", C_ARN, true},
	{"ArnNotLike", C_ARN, true},
};

/* How a condition treats a key with several values (s3:RequestObjectTagKeys). */
enum set_op {
	SET_NONE,    /* the first value alone */
	SET_ANY,     /* ForAnyValue: some value satisfies the operator */
	SET_ALL,     /* ForAllValues: every value does (true when there is none) */
};

/* S3 action names (after "s3:") a policy may name without a wildcard. */
static const char *const known_actions[] = {
	"AbortMultipartUpload",
	"BypassGovernanceRetention",
	"CreateBucket",
	"DeleteBucket",
	"DeleteBucketOwnershipControls",
	"DeleteBucketPolicy",
	"DeleteBucketWebsite",
	"DeleteObject",
	"DeleteObjectTagging",
	"DeleteObjectVersion",
	"DeleteObjectVersionTagging",
	"GetAccelerateConfiguration",
	"GetBucketAcl",
	"GetBucketCORS",
	"GetBucketLocation",
	"GetBucketLogging",
	"GetBucketNotification",
	"GetBucketObjectLockConfiguration",
	"GetBucketOwnershipControls",
	"GetBucketPolicy",
	"GetBucketPolicyStatus",
	"GetBucketPublicAccessBlock",
	"GetBucketRequestPayment",
	"GetBucketTagging",
	"GetBucketVersioning",
	"GetBucketWebsite",
	"GetEncryptionConfiguration",
	"GetLifecycleConfiguration",
	"GetObject",
	"GetObjectAcl",
	"GetObjectAttributes",
	"GetObjectLegalHold",
	"GetObjectRetention",
	"GetObjectTagging",
	"GetObjectVersion",
	"GetObjectVersionAcl",
	"GetObjectVersionAttributes",
	"GetObjectVersionTagging",
	"GetReplicationConfiguration",
	"ListAllMyBuckets",
	"ListBucket",
	"ListBucketMultipartUploads",
	"ListBucketVersions",
	"ListMultipartUploadParts",
	"PutAccelerateConfiguration",
	"PutBucketAcl",
	"PutBucketCORS",
	"PutBucketLogging",
	"PutBucketNotification",
	"PutBucketObjectLockConfiguration",
	"PutBucketOwnershipControls",
	"PutBucketPolicy",
	"PutBucketPublicAccessBlock",
	"PutBucketRequestPayment",
	"PutBucketTagging",
	"PutBucketVersioning",
	"PutBucketWebsite",
	"PutEncryptionConfiguration",
	"PutLifecycleConfiguration",
	"PutObject",
	"PutObjectAcl",
	"PutObjectLegalHold",
	"PutObjectRetention",
	"PutObjectTagging",
	"PutObjectVersionAcl",
	"PutObjectVersionTagging",
	"PutReplicationConfiguration",
	"RestoreObject",
};

/* S3 Tables' action names (after "s3tables:"). */
static const char *const tables_actions[] = {
	"CreateNamespace", "CreateTable", "CreateTableBucket", "DeleteNamespace", "DeleteTable",
	"DeleteTableBucket", "DeleteTableBucketEncryption", "DeleteTableBucketPolicy",
	"DeleteTablePolicy", "GetNamespace", "GetTable", "GetTableBucket",
	"GetTableBucketEncryption", "GetTableBucketMaintenanceConfiguration",
	"GetTableBucketPolicy", "GetTableData", "GetTableEncryption",
	"GetTableMaintenanceConfiguration", "GetTableMaintenanceJobStatus",
	"GetTableMetadataLocation", "GetTablePolicy", "ListNamespaces", "ListTableBuckets",
	"ListTables", "ListTagsForResource", "PutTableBucketEncryption",
	"PutTableBucketMaintenanceConfiguration", "PutTableBucketPolicy", "PutTableData",
	"PutTableMaintenanceConfiguration", "PutTablePolicy", "RenameTable", "TagResource",
	"UntagResource", "UpdateTableMetadataLocation",
};

struct policy_service {
	const char *prefix; /* of every action, "s3:" */
	const char *const *actions;
	size_t n;
};
const struct policy_service POLICY_S3 = {"s3:", known_actions, ARRAY_LEN(known_actions)};
const struct policy_service POLICY_S3TABLES = {"s3tables:", tables_actions,
					       ARRAY_LEN(tables_actions)};


struct strs {
	const char **v;
	size_t n;
};

struct cidr {
	int af; /* AF_INET or AF_INET6 */
	unsigned char a[16];
	unsigned bits;
};

/* One value of a condition key, in the form its operator compares. */
struct cval {
	const char *s;
	double num;
	bool b;
	struct cidr ip;
};

struct cond {
	const struct op_def *op;
	enum set_op set;
	bool if_exists;
	const char *key;
	struct cval *v;
	size_t n;
};

struct stmt {
	bool deny;
	bool not_principal; /* NotPrincipal: everyone but those named */
	bool anyone;        /* "*": everyone, anonymous and services too */
	bool any_auth;      /* arn:aws:iam::<acct>:root: every authenticated identity */
	struct strs name;   /* identities by name */
	struct strs service;   /* {"Service": ...}: services by name */
	struct strs canonical; /* {"CanonicalUser": ...}: identities by canonical id */
	bool not_action, not_resource;
	struct strs action, resource;
	struct cond *c;
	size_t nc;
};

struct bucket_policy {
	yajl_val root; /* every string below points into it */
	struct stmt *st;
	size_t nst;
	unsigned needs; /* POLICY_NEEDS_* */
};

struct pctx {
	const struct policy_service *svc;
	const char *res_prefix; /* what every Resource starts with, the bucket next */
	const char *bucket; /* NULL: an identity policy, any bucket */
	size_t si; /* the statement being parsed, from 1; 0 outside one */
	unsigned needs; /* POLICY_NEEDS_* of what was parsed so far */
	char *msg;
	size_t msglen;
};

static bool fail(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct pctx *c, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (!c->msglen)
		return false;
	va_start(ap, fmt);
	vsnprintf(c->msg, c->msglen, fmt, ap);
	va_end(ap);
	n = strlen(c->msg);
	if (c->si && n < c->msglen)
		snprintf(c->msg + n, c->msglen - n, " (statement %zu)", c->si);
	return false;
}

static inline bool ceq(char a, char b, bool icase)
{
	if (icase && a >= 'A' && a <= 'Z')
		a = (char)(a - 'A' + 'a');
	if (icase && b >= 'A' && b <= 'Z')
		b = (char)(b - 'A' + 'a');
	return a == b;
}

/*
 * p[0..pn) with '*' (any run) and '?' (one character) against s[0..sn);
 * where lit (NULL: nowhere) is set, p's byte stands for itself (text a
 * policy variable put there). After a mismatch only the last '*' is retried,
 * one character further on: a later '*' subsumes what an earlier one could
 * match, so this is exact.
 */
static bool glob_lit(const char *p, const bool *lit, size_t pn, const char *s, size_t sn,
		     bool icase)
{
	size_t pi = 0, si = 0, star = SIZE_MAX, mark = 0;

#define WILD(c) (pi < pn && p[pi] == (c) && !(lit && lit[pi]))
	while (si < sn) {
		if (WILD('*')) {
			star = pi++;
			mark = si;
		} else if (WILD('?')) {
			pi++;
			/* one character, not one byte, of UTF-8 */
			si++;
			while (si < sn && ((unsigned char)s[si] & 0xc0) == 0x80)
				si++;
		} else if (pi < pn && ceq(p[pi], s[si], icase)) {
			pi++;
			si++;
		} else if (star != SIZE_MAX) {
			/* let the last '*' take one more character */
			pi = star + 1;
			mark++;
			while (mark < sn && ((unsigned char)s[mark] & 0xc0) == 0x80)
				mark++;
			si = mark;
		} else {
			return false;
		}
	}
	while (WILD('*'))
		pi++;
#undef WILD
	return pi == pn;
}

static bool glob(const char *p, size_t pn, const char *s, size_t sn, bool icase)
{
	return glob_lit(p, NULL, pn, s, sn, icase);
}

/* A decimal number: [-+]digits[.digits][e[-+]digits], no spaces, hex, inf or nan. */
static bool parse_num(const char *s, double *out)
{
	const char *p = s;
	bool digits = false;

	if (*p == '-' || *p == '+')
		p++;
	while (*p >= '0' && *p <= '9')
		p++, digits = true;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++, digits = true;
	}
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p)
		return false;
	*out = strtod(s, NULL);
	return true;
}

static bool parse_tf(const char *s, bool *out)
{
	if (!strcasecmp(s, "true"))
		*out = true;
	else if (!strcasecmp(s, "false"))
		*out = false;
	else
		return false;
	return true;
}

/* n digits at *p as a number (advancing *p); -1 when they are not all digits. */
static long digits(const char **p, int n)
{
	long v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return -1;
		v = v * 10 + (**p - '0');
	}
	return v;
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static long days_from_civil(long y, long m, long d)
{
	long era, yoe, doy;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/*
 * A date of the Date operators as seconds since the epoch: ISO 8601
 * (YYYY-MM-DD, with THH:MM[:SS[.fff]] and Z or +-HH:MM after it), or a plain
 * number of seconds (aws:EpochTime).
 */
static bool parse_date(const char *s, double *out)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	const char *p = s;
	long y, mo, d, h = 0, mi = 0, sec = 0, off = 0;
	double frac = 0;

	if (!strchr(s, '-') || (s[0] == '-' && !strchr(s + 1, '-')))
		return parse_num(s, out);
	if ((y = digits(&p, 4)) < 0 || *p++ != '-' || (mo = digits(&p, 2)) < 1 || mo > 12 ||
	    *p++ != '-' || (d = digits(&p, 2)) < 1 || d > mdays[mo - 1])
		return false;
	if (*p == 'T') {
		p++;
		if ((h = digits(&p, 2)) < 0 || h > 23 || *p++ != ':' || (mi = digits(&p, 2)) < 0 ||
		    mi > 59)
			return false;
		if (*p == ':') {
			p++;
			if ((sec = digits(&p, 2)) < 0 || sec > 60)
				return false;
			if (*p == '.') {
				double scale = 0.1;
				if (*++p < '0' || *p > '9')
					return false;
				for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
					frac += (*p - '0') * scale;
			}
		}
		if (*p == 'Z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			int sign = *p++ == '-' ? -1 : 1;
			long oh = digits(&p, 2), om;
			if (oh < 0 || oh > 23 || *p++ != ':' || (om = digits(&p, 2)) < 0 || om > 59)
				return false;
			off = sign * (oh * 3600 + om * 60);
		}
	}
	if (*p)
		return false;
	*out = (double)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off) + frac;
	return true;
}

/* An address, or with cidr an address with an optional "/bits" (bare: all bits). */
static bool parse_ip(const char *s, bool cidr, struct cidr *out)
{
	char a[64];
	const char *slash = cidr ? strchr(s, '/') : NULL;
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned max;

	if (n >= sizeof(a))
		return false;
	memcpy(a, s, n);
	a[n] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, a, out->a) == 1) {
		out->af = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, a, out->a) == 1) {
		static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		out->af = AF_INET6;
		max = 128;
		/* a client on a dual-stack socket is still an IPv4 client */
		if (!cidr && !memcmp(out->a, mapped, sizeof(mapped))) {
			memmove(out->a, out->a + 12, 4);
			memset(out->a + 4, 0, 12);
			out->af = AF_INET;
			max = 32;
		}
	} else {
		return false;
	}
	out->bits = max;
	if (slash) {
		const char *d = slash + 1;
		unsigned v = 0;
		size_t nd = 0;
		for (; *d >= '0' && *d <= '9' && nd < 4; d++, nd++)
			v = v * 10 + (unsigned)(*d - '0');
		if (!nd || nd > 3 || *d || v > max)
			return false;
		out->bits = v;
	}
	return true;
}

static bool cidr_match(const struct cidr *net, const struct cidr *ip)
{
	unsigned full = net->bits / 8, rest = net->bits % 8;

	if (net->af != ip->af || memcmp(net->a, ip->a, full))
		return false;
	if (rest) {
		unsigned char mask = (unsigned char)(0xff << (8 - rest));
		if ((net->a[full] ^ ip->a[full]) & mask)
			return false;
	}
	return true;
}

/* A scalar condition value as text (numbers as written); NULL for other types. */
static const char *scalar_text(yajl_val v)
{
	if (YAJL_IS_STRING(v))
		return v->u.string;
	if (YAJL_IS_NUMBER(v))
		return v->u.number.r;
	if (YAJL_IS_TRUE(v))
		return "true";
	if (YAJL_IS_FALSE(v))
		return "false";
	return NULL;
}

/* A string or a non-empty array of strings. */
static bool get_strs(struct pctx *c, yajl_val v, const char *field, struct strs *out)
{
	if (YAJL_IS_STRING(v)) {
		out->v = xcalloc(1, sizeof(*out->v));
		out->v[0] = v->u.string;
		out->n = 1;
		return true;
	}
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len)
		return fail(c, "%s must be a string or a non-empty array of strings", field);
	out->v = xcalloc(v->u.array.len, sizeof(*out->v));
	for (size_t i = 0; i < v->u.array.len; i++) {
		if (!YAJL_IS_STRING(v->u.array.values[i]))
			return fail(c, "%s must be a string or a non-empty array of strings",
				    field);
		out->v[out->n++] = v->u.array.values[i]->u.string;
	}
	return true;
}

/* One AWS principal: "*", a name, arn:aws:iam::<acct>:user/[path/]<name> or ...:root. */
static bool add_principal(struct pctx *c, struct stmt *s, const char *p, struct strs *names)
{
	if (!strcmp(p, "*")) {
		s->anyone = true;
		return true;
	}
	if (strpbrk(p, "*?")) {
		/* AWS allows no wildcards in a principal but the whole "*" */
	} else if (!strncmp(p, IAM_PREFIX, strlen(IAM_PREFIX))) {
		const char *tail = strchr(p + strlen(IAM_PREFIX), ':');
		if (tail && !strcmp(tail + 1, "root")) {
			s->any_auth = true;
			return true;
		}
		if (tail && !strncmp(tail + 1, "user/", 5)) {
			const char *name = strrchr(tail, '/') + 1;
			if (*name) {
				names->v[names->n++] = name;
				return true;
			}
		}
	} else if (*p && strncmp(p, "arn:", 4)) {
		names->v[names->n++] = p;
		return true;
	}
	return fail(c, "Invalid principal in policy: \"%.64s\"", p);
}

/* A service principal: a lowercase DNS name under amazonaws.com (logging.s3.amazonaws.com). */
static bool service_ok(const char *p)
{
	static const char suffix[] = ".amazonaws.com";
	size_t n = strlen(p), sl = strlen(suffix);

	if (n <= sl || n > 128 || strcmp(p + n - sl, suffix) || p[0] == '.' || p[0] == '-')
		return false;
	for (size_t i = 0; i < n - sl; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
		      p[i] == '-' || (p[i] == '.' && p[i + 1] != '.')))
			return false;
	return true;
}

/* A canonical user id: 64 hexadecimal digits (acl_canonical_id's form). */
static bool canonical_ok(const char *p)
{
	size_t n = 0;
	for (; p[n]; n++)
		if (!((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f') ||
		      (p[n] >= 'A' && p[n] <= 'F')))
			return false;
	return n == 64;
}

/* The "Service" or "CanonicalUser" member of a principal into out, each checked by good. */
static bool principal_list(struct pctx *c, yajl_val v, const char *type, bool (*good)(const char *),
			   struct strs *out)
{
	char field[32];

	snprintf(field, sizeof(field), "Principal.%s", type);
	if (!get_strs(c, v, field, out))
		return false;
	for (size_t i = 0; i < out->n; i++)
		if (!good(out->v[i]))
			return fail(c, "Invalid principal in policy: %s \"%.64s\"", type,
				    out->v[i]);
	return true;
}

/* Principal or NotPrincipal (field): "*", or an object of AWS, Service, CanonicalUser. */
static bool parse_principal(struct pctx *c, struct stmt *s, yajl_val v, const char *field)
{
	struct strs aws = {0};
	yajl_val list = NULL, svc = NULL, canon = NULL;
	bool ok = true;

	if (YAJL_IS_STRING(v)) {
		if (strcmp(v->u.string, "*"))
			return fail(c,
				    "Invalid principal in policy: \"%.64s\" (a string "
				    "%s must be \"*\")",
				    v->u.string, field);
		s->anyone = true;
		return true;
	}
	if (!YAJL_IS_OBJECT(v) || !v->u.object.len)
		return fail(c,
			    "Invalid principal in policy: %s must be \"*\" or an object of "
			    "\"AWS\", \"Service\" or \"CanonicalUser\"",
			    field);
	for (size_t i = 0; i < v->u.object.len; i++) {
		const char *k = v->u.object.keys[i];
		yajl_val *slot = !strcmp(k, "AWS")             ? &list
				 : !strcmp(k, "Service")       ? &svc
				 : !strcmp(k, "CanonicalUser") ? &canon
							       : NULL;
		if (!strcmp(k, "Federated"))
			return fail(c,
				    "Invalid principal in policy: unsupported principal "
				    "type \"%s\"",
				    k);
		if (!slot)
			return fail(c,
				    "Invalid principal in policy: unknown principal type "
				    "\"%.64s\"",
				    k);
		if (*slot)
			return fail(c, "Invalid principal in policy: duplicate \"%s\"", k);
		*slot = v->u.object.values[i];
	}
	if (svc && !principal_list(c, svc, "Service", service_ok, &s->service))
		return false;
	if (canon && !principal_list(c, canon, "CanonicalUser", canonical_ok, &s->canonical))
		return false;
	if (canon)
		c->needs |= POLICY_NEEDS_CANONICAL;
	if (!list)
		return true;
	if (!get_strs(c, list, "Principal.AWS", &aws)) {
		free(aws.v);
		return false;
	}
	s->name.v = xcalloc(aws.n, sizeof(*s->name.v));
	for (size_t i = 0; i < aws.n && ok; i++)
		ok = add_principal(c, s, aws.v[i], &s->name);
	free(aws.v);
	return ok;
}

static bool parse_actions(struct pctx *c, yajl_val v, const char *field, struct strs *out)
{
	if (!get_strs(c, v, field, out))
		return false;
	size_t plen = strlen(c->svc->prefix);

	for (size_t i = 0; i < out->n; i++) {
		const char *a = out->v[i], *name = a + (strlen(a) >= plen ? plen : 0);
		bool known = false;
		if (!strcmp(a, "*"))
			continue;
		if (strncasecmp(a, c->svc->prefix, plen) || !*name)
			return fail(c, "Policy has invalid action \"%.64s\" in %s", a, field);
		if (strpbrk(name, "*?"))
			continue; /* a pattern may match nothing, as s3:Get* does on AWS */
		for (size_t k = 0; k < c->svc->n && !known; k++)
			known = !strcasecmp(name, c->svc->actions[k]);
		if (!known)
			return fail(c, "Policy has invalid action \"%.64s\" in %s", a, field);
	}
	return true;
}

static bool parse_resources(struct pctx *c, yajl_val v, const char *field, struct strs *out)
{
	size_t plen = strlen(c->res_prefix);

	if (!get_strs(c, v, field, out))
		return false;
	for (size_t i = 0; i < out->n; i++) {
		const char *r = out->v[i], *b = r + plen, *slash;
		if (!c->bucket && !strcmp(r, "*"))
			continue; /* an identity policy's "every resource" */
		if (strncmp(r, c->res_prefix, plen))
			return fail(c,
				    "Policy has invalid resource \"%.64s\" in %s: not an "
				    "ARN under %.100s",
				    r, field, c->res_prefix);
		slash = strchr(b, '/');
		if (c->bucket && !glob(b, slash ? (size_t)(slash - b) : strlen(b), c->bucket,
				       strlen(c->bucket), false))
			return fail(c,
				    "Policy has invalid resource \"%.64s\" in %s: not in "
				    "bucket %.64s",
				    r, field, c->bucket);
	}
	return true;
}

/* One value of a condition key, converted for its operator. */
static bool parse_cval(struct pctx *c, const char *opname, const struct op_def *op, const char *key,
		       yajl_val v, struct cval *out)
{
	const char *s = scalar_text(v);

	if (!s)
		return fail(c,
			    "Condition %s: the value of \"%.64s\" must be a string, number "
			    "or boolean",
			    opname, key);
	out->s = s;
	switch (op->cmp) {
	case C_NUM_EQ:
	case C_NUM_LT:
	case C_NUM_LE:
	case C_NUM_GT:
	case C_NUM_GE:
		if (!parse_num(s, &out->num))
			return fail(c, "Condition %s: \"%.64s\" is not a number (key \"%.64s\")",
				    opname, s, key);
		break;
	case C_BOOL:
	case C_NULL:
		if (!parse_tf(s, &out->b))
			return fail(c,
				    "Condition %s: \"%.64s\" is not true or false (key "
				    "\"%.64s\")",
				    opname, s, key);
		break;
	case C_IP:
		if (!parse_ip(s, true, &out->ip))
			return fail(c,
				    "Condition %s: \"%.64s\" is not an IP address or CIDR "
				    "(key \"%.64s\")",
				    opname, s, key);
		break;
	case C_DATE_EQ:
	case C_DATE_LT:
	case C_DATE_LE:
	case C_DATE_GT:
	case C_DATE_GE:
		if (!parse_date(s, &out->num))
			return fail(c,
				    "Condition %s: \"%.64s\" is not an ISO 8601 date or epoch "
				    "seconds (key \"%.64s\")",
				    opname, s, key);
		break;
	case C_ARN:
		if (strcmp(s, "*") && strncmp(s, "arn:", 4) && !strstr(s, "${"))
			return fail(c, "Condition %s: \"%.64s\" is not an ARN (key \"%.64s\")",
				    opname, s, key);
		break;
	default:
		break;
	}
	return true;
}

static const struct op_def *find_op(const char *name, enum set_op *set, bool *if_exists)
{
	size_t n, sl = strlen("IfExists");

	*set = !strncmp(name, "ForAnyValue:", 12)    ? SET_ANY
	       : !strncmp(name, "ForAllValues:", 13) ? SET_ALL
						     : SET_NONE;
	name += *set == SET_ANY ? 12 : *set == SET_ALL ? 13 : 0;
	n = strlen(name);

	*if_exists = n > sl && !strcasecmp(name + n - sl, "IfExists");
	if (*if_exists)
		n -= sl;
	for (size_t i = 0; i < ARRAY_LEN(ops); i++)
		if (strlen(ops[i].name) == n && !strncasecmp(name, ops[i].name, n))
			return &ops[i];
	return NULL;
}

static bool parse_conditions(struct pctx *c, struct stmt *s, yajl_val v)
{
	size_t total = 0;

	if (!YAJL_IS_OBJECT(v))
		return fail(c, "Condition must be an object of operators");
	for (size_t i = 0; i < v->u.object.len; i++) {
		yajl_val keys = v->u.object.values[i];
		if (!YAJL_IS_OBJECT(keys) || !keys->u.object.len)
			return fail(c, "Condition %.64s must be a non-empty object of keys",
				    v->u.object.keys[i]);
		total += keys->u.object.len;
	}
	s->c = xcalloc(total ? total : 1, sizeof(*s->c));
	for (size_t i = 0; i < v->u.object.len; i++) {
		const char *opname = v->u.object.keys[i];
		yajl_val keys = v->u.object.values[i];
		bool if_exists;
		enum set_op set;
		const struct op_def *op = find_op(opname, &set, &if_exists);

		if (!op)
			return fail(c, "Invalid Condition type: unsupported operator \"%.64s\"",
				    opname);
		if (op->cmp == C_NULL && if_exists)
			return fail(c, "Invalid Condition type: Null cannot be ...IfExists");
		if (op->cmp == C_NULL && set)
			return fail(c, "Invalid Condition type: Null takes no ForAnyValue: or "
				       "ForAllValues:");
		for (size_t k = 0; k < keys->u.object.len; k++) {
			const char *key = keys->u.object.keys[k];
			yajl_val vals = keys->u.object.values[k];
			struct cond *cd = &s->c[s->nc++];
			size_t n = YAJL_IS_ARRAY(vals) ? vals->u.array.len : 1;

			cd->op = op;
			cd->set = set;
			cd->if_exists = if_exists;
			cd->key = key;
			if (!*key)
				return fail(c, "Condition %.64s has an empty key", opname);
			if (!strncasecmp(key, POLICY_EXISTING_TAG, strlen(POLICY_EXISTING_TAG)))
				c->needs |= POLICY_NEEDS_OBJECT_TAGS;
			if (!n)
				return fail(c, "Condition %.64s: key \"%.64s\" has no values",
					    opname, key);
			cd->v = xcalloc(n, sizeof(*cd->v));
			for (size_t j = 0; j < n; j++) {
				yajl_val one = YAJL_IS_ARRAY(vals) ? vals->u.array.values[j] : vals;
				if (!parse_cval(c, opname, op, key, one, &cd->v[cd->n++]))
					return false;
			}
		}
	}
	return true;
}

/* The members a statement may have, indexing stmt_fields. */
enum {
	F_SID,
	F_EFFECT,
	F_PRINCIPAL,
	F_NOTPRINCIPAL,
	F_ACTION,
	F_NOTACTION,
	F_RESOURCE,
	F_NOTRESOURCE,
	F_CONDITION,
	F_COUNT
};

static const char *const stmt_fields[F_COUNT] = {
	"Sid",       "Effect",   "Principal",   "NotPrincipal", "Action",
	"NotAction", "Resource", "NotResource", "Condition",
};

static bool parse_stmt(struct pctx *c, struct stmt *s, yajl_val v)
{
	yajl_val f[F_COUNT] = {0};

	if (!YAJL_IS_OBJECT(v))
		return fail(c, "a Statement must be an object");
	for (size_t i = 0; i < v->u.object.len; i++) {
		size_t k = 0;
		while (k < F_COUNT && strcmp(v->u.object.keys[i], stmt_fields[k]))
			k++;
		if (k == F_COUNT)
			return fail(c, "Unknown field %.64s", v->u.object.keys[i]);
		if (f[k])
			return fail(c, "Duplicate field %s", stmt_fields[k]);
		f[k] = v->u.object.values[i];
	}
	if (f[F_SID] && !YAJL_IS_STRING(f[F_SID]))
		return fail(c, "Sid must be a string");
	if (!f[F_EFFECT])
		return fail(c, "Missing required field Effect");
	if (!YAJL_IS_STRING(f[F_EFFECT]) ||
	    (strcmp(f[F_EFFECT]->u.string, "Allow") && strcmp(f[F_EFFECT]->u.string, "Deny")))
		return fail(c, "Invalid effect: Effect must be \"Allow\" or \"Deny\"");
	s->deny = !strcmp(f[F_EFFECT]->u.string, "Deny");
	if (!c->bucket) {
		/* an identity's own policy: it speaks of its holder alone */
		if (f[F_PRINCIPAL] || f[F_NOTPRINCIPAL])
			return fail(c, "An identity policy cannot name a Principal");
		s->anyone = true;
	} else if (f[F_NOTPRINCIPAL] && f[F_PRINCIPAL]) {
		return fail(c, "Principal and NotPrincipal cannot both be given");
	} else if (!f[F_PRINCIPAL] && !f[F_NOTPRINCIPAL]) {
		return fail(c, "Missing required field Principal");
	} else {
		s->not_principal = !f[F_PRINCIPAL];
		if (!parse_principal(c, s, s->not_principal ? f[F_NOTPRINCIPAL] : f[F_PRINCIPAL],
				     s->not_principal ? "NotPrincipal" : "Principal"))
			return false;
	}
	if (f[F_ACTION] && f[F_NOTACTION])
		return fail(c, "Action and NotAction cannot both be given");
	if (!f[F_ACTION] && !f[F_NOTACTION])
		return fail(c, "Missing required field Action");
	s->not_action = !f[F_ACTION];
	if (!parse_actions(c, s->not_action ? f[F_NOTACTION] : f[F_ACTION],
			   s->not_action ? "NotAction" : "Action", &s->action))
		return false;
	if (f[F_RESOURCE] && f[F_NOTRESOURCE])
		return fail(c, "Resource and NotResource cannot both be given");
	if (!f[F_RESOURCE] && !f[F_NOTRESOURCE])
		return fail(c, "Missing required field Resource");
	s->not_resource = !f[F_RESOURCE];
	if (!parse_resources(c, s->not_resource ? f[F_NOTRESOURCE] : f[F_RESOURCE],
			     s->not_resource ? "NotResource" : "Resource", &s->resource))
		return false;
	return !f[F_CONDITION] || parse_conditions(c, s, f[F_CONDITION]);
}

/* Refuses deep nesting without recursing (strings may hold brackets). */
static bool shallow(const char *json, size_t len)
{
	unsigned depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char ch = json[i];
		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = false;
		} else if (ch == '"') {
			in_str = true;
		} else if (ch == '[' || ch == '{') {
			if (++depth > DEPTH_MAX)
				return false;
		} else if ((ch == ']' || ch == '}') && depth) {
			depth--;
		}
	}
	return true;
}

struct bucket_policy *bucket_policy_parse(const char *json, size_t len, const char *bucket,
					  char *msg, size_t msglen)
{
	return bucket_policy_parse_for(json, len, &POLICY_S3, RES_PREFIX, bucket, msg, msglen);
}

static struct bucket_policy *parse_doc(const char *json, size_t len,
				       const struct policy_service *svc, const char *arn_prefix,
				       const char *bucket, char *msg, size_t msglen);

struct bucket_policy *bucket_policy_parse_identity(const char *json, size_t len, char *msg,
						   size_t msglen)
{
	return parse_doc(json, len, &POLICY_S3, RES_PREFIX, NULL, msg, msglen);
}

struct bucket_policy *bucket_policy_parse_for(const char *json, size_t len,
					      const struct policy_service *svc,
					      const char *arn_prefix, const char *bucket,
					      char *msg, size_t msglen)
{
	return parse_doc(json, len, svc, arn_prefix, bucket ? bucket : "", msg, msglen);
}

static struct bucket_policy *parse_doc(const char *json, size_t len,
				       const struct policy_service *svc, const char *arn_prefix,
				       const char *bucket, char *msg, size_t msglen)
{
	struct pctx c = {.svc = svc,
			 .res_prefix = arn_prefix,
			 .bucket = bucket,
			 .msg = msg,
			 .msglen = msglen};
	struct bucket_policy *p = xcalloc(1, sizeof(*p));
	yajl_val version = NULL, id = NULL, stmts = NULL;
	char err[128];

	if (msglen)
		msg[0] = '\0';
	if (!len || len > BUCKET_POLICY_MAX) {
		fail(&c, "Policies must be 1 to %u bytes (this one is %zu)", BUCKET_POLICY_MAX,
		     len);
		goto bad;
	}
	if (!shallow(json, len)) {
		fail(&c, "Policies must not nest more than %d deep", DEPTH_MAX);
		goto bad;
	}
	p->root = json_parse(json, len, err, sizeof(err));
	if (!p->root) {
		fail(&c, "Policies must be valid JSON: %s", err);
		goto bad;
	}
	if (!YAJL_IS_OBJECT(p->root)) {
		fail(&c, "Policies must be valid JSON and the first byte must be '{'");
		goto bad;
	}
	for (size_t i = 0; i < p->root->u.object.len; i++) {
		const char *k = p->root->u.object.keys[i];
		yajl_val *slot = !strcmp(k, "Version")     ? &version
				 : !strcmp(k, "Id")        ? &id
				 : !strcmp(k, "Statement") ? &stmts
							   : NULL;
		if (!slot) {
			fail(&c, "Unknown field %.64s", k);
			goto bad;
		}
		if (*slot) {
			fail(&c, "Duplicate field %s", k);
			goto bad;
		}
		*slot = p->root->u.object.values[i];
	}
	if (version && (!YAJL_IS_STRING(version) || (strcmp(version->u.string, "2012-10-17") &&
						     strcmp(version->u.string, "2008-10-17")))) {
		fail(&c, "Version must be \"2012-10-17\" or \"2008-10-17\"");
		goto bad;
	}
	if (id && !YAJL_IS_STRING(id)) {
		fail(&c, "Id must be a string");
		goto bad;
	}
	if (!stmts || (YAJL_IS_ARRAY(stmts) && !stmts->u.array.len)) {
		fail(&c, "Missing required field Statement");
		goto bad;
	}
	if (YAJL_IS_ARRAY(stmts)) {
		p->st = xcalloc(stmts->u.array.len, sizeof(*p->st));
		for (size_t i = 0; i < stmts->u.array.len; i++) {
			c.si = i + 1;
			p->nst++;
			if (!parse_stmt(&c, &p->st[i], stmts->u.array.values[i]))
				goto bad;
		}
	} else {
		p->st = xcalloc(1, sizeof(*p->st));
		p->nst = 1;
		c.si = 1;
		if (!parse_stmt(&c, &p->st[0], stmts))
			goto bad;
	}
	p->needs = c.needs;
	return p;
bad:
	bucket_policy_free(p);
	return NULL;
}

void bucket_policy_free(struct bucket_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nst; i++) {
		struct stmt *s = &p->st[i];
		free(s->name.v);
		free(s->service.v);
		free(s->canonical.v);
		free(s->action.v);
		free(s->resource.v);
		for (size_t k = 0; k < s->nc; k++)
			free(s->c[k].v);
		free(s->c);
	}
	free(p->st);
	if (p->root)
		yajl_tree_free(p->root);
	free(p);
}

static bool in_strs(const struct strs *l, const char *v, bool icase)
{
	for (size_t i = 0; v && i < l->n; i++)
		if (icase ? !strcasecmp(l->v[i], v) : !strcmp(l->v[i], v))
			return true;
	return false;
}

/* Whether the statement's Principal names r's caller (NotPrincipal: does not name it). */
static bool principal_match(const struct stmt *s, const struct policy_request *r)
{
	bool named;

	if (s->anyone)
		named = true;
	else if (r->service)
		named = in_strs(&s->service, r->service, false);
	else
		named = r->principal &&
			(s->any_auth || in_strs(&s->name, r->principal, false) ||
			 in_strs(&s->canonical, r->canonical_id, true));
	return named != s->not_principal;
}

unsigned bucket_policy_needs(const struct bucket_policy *p) { return p ? p->needs : 0; }

static const char *ctx_get(const struct policy_request *r, const char *key)
{
	for (size_t i = 0; i < r->nctx; i++)
		if (r->ctx[i].key && r->ctx[i].value && !strcasecmp(r->ctx[i].key, key))
			return r->ctx[i].value;
	return NULL;
}

/*
 * Policy variables: "${key}" in a Resource or a String condition value is the
 * request's value of key (aws:username, aws:SourceIp, s3:prefix, ...); ${*},
 * ${?} and ${$} are a literal '*', '?' and '$'. *out (free it) is p expanded,
 * with (*lit)[i] set where the text came from a variable, so it never acts as
 * a wildcard. False when a variable's key is not in the request: the element
 * then matches nothing, as in AWS. p without "${" is copied as it is.
 */
static bool expand_vars(const char *p, const struct policy_request *r, char **out, bool **lit)
{
	size_t n = 0, cap = strlen(p) + 1;
	char *o = xmalloc(cap);
	bool *l = xmalloc(cap * sizeof(*l));

	while (*p) {
		const char *end = p[0] == '$' && p[1] == '{' ? strchr(p + 2, '}') : NULL;
		const char *val = NULL, *lone = p;
		size_t vl = 1;
		bool from_var = end != NULL;

		if (end) {
			size_t kl = (size_t)(end - p - 2);
			if (kl == 1 && strchr("*?$", p[2])) {
				lone = p + 2;
			} else {
				char *key = xstrndup(p + 2, kl);
				val = ctx_get(r, key);
				free(key);
				if (!val) {
					free(o);
					free(l);
					return false;
				}
				vl = strlen(val);
			}
			p = end + 1;
		} else {
			p++;
		}
		if (n + vl + 1 > cap) {
			cap = (n + vl + 1) * 2;
			o = xrealloc(o, cap);
			l = xrealloc(l, cap * sizeof(*l));
		}
		memcpy(o + n, val ? val : lone, vl);
		for (size_t i = 0; i < vl; i++)
			l[n + i] = from_var;
		n += vl;
	}
	o[n] = '\0';
	*out = o;
	*lit = l;
	return true;
}

/*
 * Whether the policy value want, its variables expanded, matches have: as a
 * pattern ('*', '?') or as text; either case when icase.
 */
static bool match_vars(const char *want, const char *have, bool pattern, bool icase,
		       const struct policy_request *r)
{
	char *x = NULL;
	bool *lit = NULL, m;

	if (strstr(want, "${")) {
		if (!expand_vars(want, r, &x, &lit))
			return false;
		want = x;
	}
	if (pattern)
		m = glob_lit(want, lit, strlen(want), have, strlen(have), icase);
	else
		m = icase ? !strcasecmp(want, have) : !strcmp(want, have);
	free(x);
	free(lit);
	return m;
}

static bool any_glob(const struct strs *pats, const char *subject, bool icase,
		     const struct policy_request *r)
{
	for (size_t i = 0; i < pats->n; i++)
		if (match_vars(pats->v[i], subject, true, icase, r))
			return true;
	return false;
}

/*
 * ArnLike: the six colon-separated components of an ARN, each matched on its
 * own ('*' never runs across a ':'), the last one taking what remains.
 */
static bool arn_match(const char *want, const char *have, const struct policy_request *r)
{
	char *x = NULL;
	bool *lit = NULL, m = true;
	const char *w, *h;

	if (strstr(want, "${")) {
		if (!expand_vars(want, r, &x, &lit))
			return false;
		want = x;
	}
	w = want;
	h = have;
	if (!strcmp(want, "*")) {
		free(x);
		free(lit);
		return true;
	}
	for (int part = 0; part < 6 && m; part++) {
		const char *we = part < 5 ? strchr(w, ':') : NULL;
		const char *he = part < 5 ? strchr(h, ':') : NULL;
		size_t wn = we ? (size_t)(we - w) : strlen(w);
		size_t hn = he ? (size_t)(he - h) : strlen(h);
		if (part < 5 && (!we || !he)) {
			m = false;
			break;
		}
		m = glob_lit(w, lit ? lit + (w - want) : NULL, wn, h, hn, false);
		w += wn + (we != NULL);
		h += hn + (he != NULL);
	}
	free(x);
	free(lit);
	return m;
}

/* Whether the request value have equals / matches / satisfies one policy value. */
static bool cval_match(enum cmp cmp, const struct cval *v, const char *have, double num,
		       const struct cidr *ip, bool b, const struct policy_request *r)
{
	switch (cmp) {
	case C_STR_EQ:
		return match_vars(v->s, have, false, false, r);
	case C_STR_EQ_IC:
		return match_vars(v->s, have, false, true, r);
	case C_STR_LIKE:
		return match_vars(v->s, have, true, false, r);
	case C_NUM_EQ:
		return num == v->num;
	case C_NUM_LT:
		return num < v->num;
	case C_NUM_LE:
		return num <= v->num;
	case C_NUM_GT:
		return num > v->num;
	case C_NUM_GE:
		return num >= v->num;
	case C_BOOL:
		return b == v->b;
	case C_IP:
		return cidr_match(&v->ip, ip);
	case C_DATE_EQ:
		return num == v->num;
	case C_DATE_LT:
		return num < v->num;
	case C_DATE_LE:
		return num <= v->num;
	case C_DATE_GT:
		return num > v->num;
	case C_DATE_GE:
		return num >= v->num;
	case C_ARN:
		return arn_match(v->s, have, r);
	case C_NULL:
		break;
	}
	return false;
}

/*
 * Whether one request value satisfies the operator against some policy value
 * (the negated operators: against none). A value of the wrong type (not a
 * number, a date, an address, true/false) satisfies nothing, negated or not.
 */
static bool value_match(const struct cond *cd, const char *have, const struct policy_request *r)
{
	struct cidr ip = {0};
	double num = 0;
	bool b = false, any = false;

	switch (cd->op->cmp) {
	case C_NUM_EQ:
	case C_NUM_LT:
	case C_NUM_LE:
	case C_NUM_GT:
	case C_NUM_GE:
		if (!parse_num(have, &num))
			return false;
		break;
	case C_DATE_EQ:
	case C_DATE_LT:
	case C_DATE_LE:
	case C_DATE_GT:
	case C_DATE_GE:
		if (!parse_date(have, &num))
			return false;
		break;
	case C_BOOL:
		if (!parse_tf(have, &b))
			return false;
		break;
	case C_IP:
		if (!parse_ip(have, false, &ip))
			return false;
		break;
	default:
		break;
	}
	for (size_t i = 0; i < cd->n && !any; i++)
		any = cval_match(cd->op->cmp, &cd->v[i], have, num, &ip, b, r);
	return cd->op->neg ? !any : any;
}

static bool cond_match(const struct cond *cd, const struct policy_request *r)
{
	const char *have = ctx_get(r, cd->key);

	if (cd->op->cmp == C_NULL) {
		for (size_t i = 0; i < cd->n; i++)
			if (cd->v[i].b == !have)
				return true;
		return false;
	}
	if (cd->set != SET_NONE) {
		/* every value of the key: ForAnyValue wants one to hold, ForAllValues all
		   (none at all: ForAllValues holds, ForAnyValue does not, as in AWS) */
		bool all = true, some = false;
		for (size_t i = 0; i < r->nctx; i++) {
			bool m;
			const struct policy_kv *kv = &r->ctx[i];
			if (!kv->key || !kv->value || strcasecmp(kv->key, cd->key))
				continue;
			m = value_match(cd, r->ctx[i].value, r);
			all &= m;
			some |= m;
		}
		if (!have && cd->if_exists)
			return true;
		return cd->set == SET_ALL ? all : some;
	}
	if (!have)
		return cd->if_exists || cd->op->neg;
	return value_match(cd, have, r);
}

static bool stmt_match(const struct stmt *s, const struct policy_request *r)
{
	const char *action = r->action ? r->action : "";
	const char *resource = r->resource ? r->resource : "";

	if (!principal_match(s, r))
		return false;
	if (any_glob(&s->action, action, true, r) == s->not_action)
		return false;
	if (any_glob(&s->resource, resource, false, r) == s->not_resource)
		return false;
	for (size_t i = 0; i < s->nc; i++)
		if (!cond_match(&s->c[i], r))
			return false;
	return true;
}

bool bucket_policy_is_public(const struct bucket_policy *p)
{
	/* condition keys that tie a grant to fixed callers: it is then not public */
	static const char *const narrowing[] = {
		"aws:PrincipalAccount",
		"aws:PrincipalArn",
		"aws:PrincipalOrgID",
		"aws:SourceAccount",
		"aws:SourceArn",
		"aws:SourceIp",
		"aws:SourceOwner",
		"aws:SourceVpc",
		"aws:SourceVpce",
		"aws:userid",
		"aws:username",
		"s3:DataAccessPointArn",
		"s3:DataAccessPointAccount",
	};
	for (size_t i = 0; p && i < p->nst; i++) {
		const struct stmt *s = &p->st[i];
		bool narrowed = false;
		/* everyone: "*", or a NotPrincipal that leaves out only some */
		if (s->deny || s->anyone == s->not_principal)
			continue;
		for (size_t k = 0; k < s->nc && !narrowed; k++)
			for (size_t j = 0; j < sizeof(narrowing) / sizeof(*narrowing); j++)
				narrowed |= !strcasecmp(s->c[k].key, narrowing[j]);
		if (!narrowed)
			return true;
	}
	return false;
}

enum policy_effect bucket_policy_eval(const struct bucket_policy *p, const struct policy_request *r)
{
	bool allow = false;

	if (!p || !r)
		return POLICY_NO_MATCH;
	for (size_t i = 0; i < p->nst; i++) {
		const struct stmt *s = &p->st[i];
		if (s->deny && stmt_match(s, r))
			return POLICY_DENY; /* an explicit deny wins over any allow */
		if (!s->deny && !allow)
			allow = stmt_match(s, r);
	}
	return allow ? POLICY_ALLOW : POLICY_NO_MATCH;
}
