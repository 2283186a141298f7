/*
 * Bucket logging's configuration and records (s3_logging.h): no I/O here.
 */
#include "config.h"
#include "s3/s3_logging.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "http_util.h"
#include "util.h"

#define MSG_MALFORMED                                                    \
	"The XML you provided was not well-formed or did not validate against " \
	"our published schema"

/* What S3 accepts as a grant's permission on log objects. */
static bool permission_ok(const char *p)
{
	return !strcmp(p, "FULL_CONTROL") || !strcmp(p, "READ") || !strcmp(p, "WRITE");
}

/* Writes one Grantee, its type given by xsi:type (or by which identifier it carries). */
static bool grantee_write(xml_w *w, const struct xml_node *g)
{
	const char *type = xml_attr(g, "type");
	const char *id = xml_child_text(g, "ID"), *mail = xml_child_text(g, "EmailAddress"),
		   *uri = xml_child_text(g, "URI"), *name = xml_child_text(g, "DisplayName");
	if (!type)
		type = id ? "CanonicalUser" : mail ? "AmazonCustomerByEmail" : uri ? "Group" : NULL;
	if (!type || (!strcmp(type, "CanonicalUser") && !id) ||
	    (!strcmp(type, "AmazonCustomerByEmail") && !mail) || (!strcmp(type, "Group") && !uri) ||
	    (strcmp(type, "CanonicalUser") && strcmp(type, "AmazonCustomerByEmail") &&
	     strcmp(type, "Group")))
		return false;
	xml_open_attrs(w, "Grantee",
		       (const char *const[]){"xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance",
					     "xsi:type", type, NULL});
	if (!strcmp(type, "CanonicalUser")) {
		xml_elem(w, "ID", id);
		if (name)
			xml_elem(w, "DisplayName", name);
	} else if (!strcmp(type, "Group")) {
		xml_elem(w, "URI", uri);
	} else {
		xml_elem(w, "EmailAddress", mail);
	}
	xml_close(w);
	return true;
}

/* Writes the TargetGrants tg into w in one form; false when a grant is malformed. */
static bool grants_write(xml_w *w, const struct xml_node *tg)
{
	bool ok = true;

	xml_open(w, "TargetGrants");
	for (const struct xml_node *g = xml_child(tg, "Grant"); g && ok; g = xml_next(g, "Grant")) {
		const struct xml_node *who = xml_child(g, "Grantee");
		const char *perm = xml_child_text(g, "Permission");
		ok = who && perm && permission_ok(perm);
		if (!ok)
			break;
		xml_open(w, "Grant");
		ok = grantee_write(w, who);
		xml_elem(w, "Permission", perm);
		xml_close(w);
	}
	xml_close(w);
	return ok;
}

/* TargetGrants, checked, as grants_write writes them into c->grants. */
static bool grants_read(const struct xml_node *tg, struct s3_logging_config *c)
{
	buf b = BUF_INIT;
	xml_w *w = xml_w_new(&b);
	bool ok = grants_write(w, tg);

	xml_w_free(w);
	if (ok)
		c->grants = buf_steal(&b, NULL);
	buf_free(&b);
	return ok;
}

/* TargetObjectKeyFormat: SimplePrefix, or PartitionedPrefix with its PartitionDateSource. */
static bool keys_read(const struct xml_node *f, struct s3_logging_config *c)
{
	const struct xml_node *simple = xml_child(f, "SimplePrefix"),
			      *part = xml_child(f, "PartitionedPrefix");
	const char *src;
	if ((simple && part) || (!simple && !part))
		return false;
	if (simple) {
		c->keys = S3_LOG_KEYS_SIMPLE;
		return true;
	}
	src = xml_child_text(part, "PartitionDateSource");
	if (!src || !strcmp(src, "EventTime"))
		c->keys = S3_LOG_KEYS_EVENT_TIME;
	else if (!strcmp(src, "DeliveryTime"))
		c->keys = S3_LOG_KEYS_DELIVERY_TIME;
	else
		return false;
	return true;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

enum s3_err s3_logging_parse(const char *data, size_t len, struct s3_logging_config *c,
			     char *msg, size_t msglen)
{
	struct xml_node *root = NULL;
	const struct xml_node *le, *f, *tg;
	const char *bucket, *prefix;
	enum s3_err e = S3_MALFORMED_XML;

	memset(c, 0, sizeof(*c));
	snprintf(msg, msglen, MSG_MALFORMED);
	if (xml_parse(data ? data : "", len, NULL, &root, NULL, 0) ||
	    strcmp(root->name, "BucketLoggingStatus"))
		goto out;
	le = xml_child(root, "LoggingEnabled");
	if (!le) {
		e = xml_count(root, "LoggingEnabled") ? S3_MALFORMED_XML : S3_OK;
		goto out;
	}
	bucket = xml_child_text(le, "TargetBucket");
	prefix = xml_child_text(le, "TargetPrefix");
	if (xml_count(root, "LoggingEnabled") != 1 || !bucket || !*bucket || !prefix)
		goto out;
	if (has_control(bucket) || has_control(prefix) || strlen(prefix) > 512) {
		e = S3_INVALID_ARGUMENT;
		snprintf(msg, msglen, "The target prefix must be at most 512 characters, none a "
				      "control character");
		goto out;
	}
	c->target_bucket = xstrdup(bucket);
	c->target_prefix = xstrdup(prefix);
	if ((f = xml_child(le, "TargetObjectKeyFormat")) && !keys_read(f, c))
		goto out;
	if ((tg = xml_child(le, "TargetGrants")) && !grants_read(tg, c))
		goto out;
	e = S3_OK;
out:
	xml_free(root);
	if (e)
		s3_logging_config_free(c);
	else
		msg[0] = '\0';
	return e;
}

void s3_logging_config_free(struct s3_logging_config *c)
{
	free(c->target_bucket);
	free(c->target_prefix);
	free(c->owner);
	free(c->grants);
	memset(c, 0, sizeof(*c));
}

static const char *const keys_code[] = {"S", "PE", "PD"};

void s3_logging_encode(const struct s3_logging_config *c, buf *out)
{
	buf_printf(out, "%s\n%s\n%s\n%s\n%s", c->target_bucket, c->target_prefix,
		   keys_code[c->keys], c->owner ? c->owner : "", c->grants ? c->grants : "");
}

/* The next '\n'-ended field of [*p, end) (copied), or NULL. */
static char *field(const char **p, const char *end)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	char *s;
	if (!nl)
		return NULL;
	s = xstrndup(*p, (size_t)(nl - *p));
	*p = nl + 1;
	return s;
}

bool s3_logging_decode(const char *v, size_t len, struct s3_logging_config *c)
{
	const char *p = v, *end = v + len;
	char *keys = NULL;
	bool ok = false;

	memset(c, 0, sizeof(*c));
	if (!v || !(c->target_bucket = field(&p, end)) || !(c->target_prefix = field(&p, end)) ||
	    !(keys = field(&p, end)) || !(c->owner = field(&p, end)))
		goto out;
	for (size_t i = 0; i < ARRAY_LEN(keys_code); i++)
		if (!strcmp(keys, keys_code[i])) {
			c->keys = (enum s3_log_keys)i;
			ok = *c->target_bucket;
		}
	if (ok && p < end)
		c->grants = xstrndup(p, (size_t)(end - p));
out:
	free(keys);
	if (!ok)
		s3_logging_config_free(c);
	return ok;
}

void s3_logging_xml(xml_w *w, const struct s3_logging_config *c)
{
	xml_open_s3(w, "BucketLoggingStatus");
	if (!c || !c->target_bucket) {
		xml_close(w);
		return;
	}
	xml_open(w, "LoggingEnabled");
	xml_elem(w, "TargetBucket", c->target_bucket);
	if (c->grants) {
		/* written by grants_read, so it parses and passes again */
		struct xml_node *tg = NULL;
		if (!xml_parse(c->grants, strlen(c->grants), NULL, &tg, NULL, 0))
			(void)grants_write(w, tg);
		xml_free(tg);
	}
	xml_elem(w, "TargetPrefix", c->target_prefix);
	if (c->keys != S3_LOG_KEYS_SIMPLE) {
		xml_open(w, "TargetObjectKeyFormat");
		xml_open(w, "PartitionedPrefix");
		xml_elem(w, "PartitionDateSource",
			 c->keys == S3_LOG_KEYS_EVENT_TIME ? "EventTime" : "DeliveryTime");
		xml_close(w);
		xml_close(w);
	}
	xml_close(w);
	xml_close(w);
}

/* ---- records ---- */

/* An unquoted field: '-' when empty; bytes that would split it are %-encoded. */
static void token(buf *out, const char *s)
{
	if (!s || !*s) {
		buf_append_byte(out, '-');
		return;
	}
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch <= 0x20 || ch == 0x7f || ch == '"' || ch == '%' || ch == '[' || ch == ']')
			buf_printf(out, "%%%02X", ch);
		else
			buf_append_byte(out, (char)ch);
	}
}

/* A quoted field: "-" when empty; a quote or backslash inside is escaped with '\'. */
static void quoted(buf *out, const char *s)
{
	buf_append_byte(out, '"');
	if (!s || !*s)
		buf_append_byte(out, '-');
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			buf_printf(out, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			buf_printf(out, "\\x%02X", ch);
		else
			buf_append_byte(out, (char)ch);
	}
	buf_append_byte(out, '"');
}

static void number(buf *out, int64_t v)
{
	if (v < 0)
		buf_append_byte(out, '-');
	else
		buf_printf(out, "%" PRId64, v);
}

void s3_logging_format(buf *out, const struct s3_log_record *rec)
{
	static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	time_t t = (time_t)(rec->time_ns / 1000000000);
	struct tm tm;
	buf line = BUF_INIT;

	gmtime_r(&t, &tm);
	token(out, rec->owner);
	buf_append_byte(out, ' ');
	token(out, rec->bucket);
	buf_printf(out, " [%02d/%s/%04d:%02d:%02d:%02d +0000] ", tm.tm_mday, mon[tm.tm_mon],
		   tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
	token(out, rec->remote_ip);
	buf_append_byte(out, ' ');
	token(out, rec->requester);
	buf_append_byte(out, ' ');
	token(out, rec->request_id);
	buf_append_byte(out, ' ');
	token(out, rec->operation);
	buf_append_byte(out, ' ');
	if (rec->key && *rec->key)
		url_encode_path(rec->key, out); /* S3 writes the key URL-encoded */
	else
		buf_append_byte(out, '-');
	buf_append_byte(out, ' ');
	if (rec->method && rec->uri)
		buf_printf(&line, "%s %s %s", rec->method, rec->uri,
			   rec->protocol ? rec->protocol : "HTTP/1.1");
	quoted(out, line.data ? (const char *)line.data : NULL);
	buf_free(&line);
	buf_append_byte(out, ' ');
	number(out, rec->status > 0 ? rec->status : -1);
	buf_append_byte(out, ' ');
	token(out, rec->error_code);
	buf_append_byte(out, ' ');
	number(out, rec->bytes_sent > 0 ? rec->bytes_sent : -1); /* S3 writes '-' for 0 */
	buf_append_byte(out, ' ');
	number(out, rec->object_size);
	buf_append_byte(out, ' ');
	number(out, rec->total_ms);
	buf_append_byte(out, ' ');
	number(out, rec->turnaround_ms);
	buf_append_byte(out, ' ');
	quoted(out, rec->referer);
	buf_append_byte(out, ' ');
	quoted(out, rec->user_agent);
	const char *rest[] = {rec->version_id,   rec->host_id,     rec->signature_version,
			      rec->cipher_suite, rec->auth_type,   rec->host,
			      rec->tls_version,  rec->access_point_arn, rec->acl_required};
	for (size_t i = 0; i < ARRAY_LEN(rest); i++) {
		buf_append_byte(out, ' ');
		token(out, rest[i]);
	}
	buf_append_byte(out, '\n');
}

void s3_logging_uri(const char *uri, buf *out)
{
	static const char *const secret[] = {"X-Amz-Signature", "Signature",
					     "X-Amz-Security-Token"};
	const char *p = strchr(uri, '?');

	if (!p) {
		buf_append_str(out, uri);
		return;
	}
	buf_append(out, uri, (size_t)(p - uri));
	while (*p) {
		size_t n = strcspn(p + 1, "&"), name = strcspn(p + 1, "=&");
		bool hide = false;
		for (size_t i = 0; i < ARRAY_LEN(secret) && !hide; i++)
			hide = name < n && name == strlen(secret[i]) &&
			       !strncasecmp(p + 1, secret[i], name);
		if (hide)
			buf_printf(out, "%c%.*s=-", *p, (int)name, p + 1);
		else
			buf_append(out, p, n + 1);
		p += n + 1;
	}
}

void s3_logging_operation(const char *method, bool has_key, const char *subresource,
			  char *out, size_t outlen)
{
	/* the subresources S3's records name differently from the parameter */
	static const char *const names[][2] = {
		{"logging", "LOGGING_STATUS"},
		{"policy", "BUCKETPOLICY"},
		{"versions", "BUCKETVERSIONS"},
		{"delete", "MULTI_OBJECT_DELETE"},
		{"object-lock", "OBJECT_LOCK_CONFIGURATION"},
		{"legal-hold", "LEGAL_HOLD"},
		{"policyStatus", "POLICY_STATUS"},
		{"uploadId", "UPLOAD"},
	};
	const char *res = !strcmp(method, "OPTIONS") ? "PREFLIGHT" : has_key ? "OBJECT" : "BUCKET";
	char up[40];

	if (subresource) {
		res = NULL;
		for (size_t i = 0; i < ARRAY_LEN(names) && !res; i++)
			if (!strcmp(subresource, names[i][0]))
				res = names[i][1];
		if (!res) {
			size_t n = 0;
			for (; subresource[n] && n + 1 < sizeof(up); n++)
				up[n] = subresource[n] == '-' ? '_'
					: (subresource[n] >= 'a' && subresource[n] <= 'z')
						? (char)(subresource[n] - 'a' + 'A')
						: subresource[n];
			up[n] = '\0';
			res = up;
		}
	}
	snprintf(out, outlen, "REST.%s.%s", method, res);
}

void s3_logging_object_key(const struct s3_logging_config *c, const char *source,
			   int64_t when_ns, uint64_t unique, const char *region, buf *out)
{
	time_t t = (time_t)(when_ns / 1000000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	buf_append_str(out, c->target_prefix);
	if (c->keys != S3_LOG_KEYS_SIMPLE)
		buf_printf(out, "%s/%s/%s/%04d/%02d/%02d/", c->owner && *c->owner ? c->owner : "-",
			   region, source, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
	buf_printf(out, "%04d-%02d-%02d-%02d-%02d-%02d-%016" PRIX64, tm.tm_year + 1900,
		   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, unique);
}
