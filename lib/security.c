#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "buf.h"
#include "log.h"
#include "security.h"
#include "util.h"

#define SECURITY_FILE_MAX (1u << 20)

/* ---- the TOML subset ---- */

enum toml_kind { TOML_STRING, TOML_INT, TOML_BOOL, TOML_ARRAY };

struct toml_value {
	enum toml_kind kind;
	buf str; /* TOML_STRING */
	long long i;
	bool b;
};

struct parser {
	const char *p, *end;
	int line;
	char *err;
	size_t errlen;
};

static wfs_err perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static wfs_err perr(struct parser *ps, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->errlen)
		snprintf(ps->err, ps->errlen, "line %d: %s", ps->line, msg);
	return WFS_EINVAL;
}

static void skip_blank(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
		ps->p++;
}

/* After a value or header: blanks, an optional comment, then the end of the line. */
static wfs_err end_of_line(struct parser *ps)
{
	skip_blank(ps);
	if (ps->p < ps->end && *ps->p == '#')
		while (ps->p < ps->end && *ps->p != '\n')
			ps->p++;
	if (ps->p < ps->end && *ps->p == '\r')
		ps->p++;
	if (ps->p < ps->end && *ps->p != '\n')
		return perr(ps, "unexpected '%c' after the value", *ps->p);
	return WFS_OK;
}

static bool bare_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* A dotted name of bare keys ("jwt.signing.read"), blanks allowed around dots. */
static wfs_err parse_name(struct parser *ps, buf *out)
{
	buf_reset(out);
	for (;;) {
		const char *s;
		skip_blank(ps);
		s = ps->p;
		while (ps->p < ps->end && bare_char(*ps->p))
			ps->p++;
		if (ps->p == s)
			return perr(ps, "expected a name");
		buf_append(out, s, (size_t)(ps->p - s));
		skip_blank(ps);
		if (ps->p >= ps->end || *ps->p != '.')
			return WFS_OK;
		ps->p++;
		buf_append(out, ".", 1);
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* cp as UTF-8 into out (3 bytes at most: \\u reaches U+FFFF); 0 for a surrogate. */
static size_t encode_utf8(unsigned cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp >= 0xD800 && cp <= 0xDFFF)
		return 0;
	out[0] = (char)(0xE0 | (cp >> 12));
	out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[2] = (char)(0x80 | (cp & 0x3F));
	return 3;
}

static wfs_err parse_basic_string(struct parser *ps, buf *out)
{
	ps->p++; /* the opening quote */
	while (ps->p < ps->end && *ps->p != '"') {
		char c = *ps->p++;
		if (c == '\n')
			return perr(ps, "a string must end on its line");
		if (c != '\\') {
			buf_append(out, &c, 1);
			continue;
		}
		if (ps->p >= ps->end)
			break;
		c = *ps->p++;
		switch (c) {
		case '"':
		case '\\':
			buf_append(out, &c, 1);
			break;
		case 'n':
			buf_append(out, "\n", 1);
			break;
		case 't':
			buf_append(out, "\t", 1);
			break;
		case 'r':
			buf_append(out, "\r", 1);
			break;
		case 'u': {
			unsigned cp = 0;
			char enc[4];
			size_t n;
			for (int k = 0; k < 4; k++) {
				int h = ps->p < ps->end ? hexval(*ps->p) : -1;
				if (h < 0)
					return perr(ps, "\\u needs four hex digits");
				cp = cp * 16 + (unsigned)h;
				ps->p++;
			}
			n = encode_utf8(cp, enc);
			if (!n)
				return perr(ps, "\\u%04X is not a character", cp);
			buf_append(out, enc, n);
			break;
		}
		default:
			return perr(ps, "unknown escape \\%c", c);
		}
	}
	if (ps->p >= ps->end)
		return perr(ps, "unterminated string");
	ps->p++;
	return WFS_OK;
}

static wfs_err parse_literal_string(struct parser *ps, buf *out)
{
	const char *s = ++ps->p;
	while (ps->p < ps->end && *ps->p != '\'' && *ps->p != '\n')
		ps->p++;
	if (ps->p >= ps->end || *ps->p != '\'')
		return perr(ps, "unterminated string");
	buf_append(out, s, (size_t)(ps->p - s));
	ps->p++;
	return WFS_OK;
}

static wfs_err parse_scalar(struct parser *ps, struct toml_value *v)
{
	const char *s = ps->p;
	char tmp[32], *endp;
	size_t n;

	buf_reset(&v->str);
	if (ps->p >= ps->end)
		return perr(ps, "expected a value");
	if (*ps->p == '"') {
		v->kind = TOML_STRING;
		if (ps->end - ps->p >= 3 && !memcmp(ps->p, "\"\"\"", 3))
			return perr(ps, "multi-line strings are not supported");
		return parse_basic_string(ps, &v->str);
	}
	if (*ps->p == '\'') {
		v->kind = TOML_STRING;
		return parse_literal_string(ps, &v->str);
	}
	while (ps->p < ps->end && (bare_char(*ps->p) || *ps->p == '+'))
		ps->p++;
	n = (size_t)(ps->p - s);
	if (n == 4 && !memcmp(s, "true", 4)) {
		v->kind = TOML_BOOL;
		v->b = true;
		return WFS_OK;
	}
	if (n == 5 && !memcmp(s, "false", 5)) {
		v->kind = TOML_BOOL;
		v->b = false;
		return WFS_OK;
	}
	if (n == 0 || n >= sizeof(tmp))
		return perr(ps, "expected a string, an integer, true or false");
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	for (char *q = tmp; *q; q++) /* TOML allows 1_000 */
		if (*q == '_')
			memmove(q, q + 1, strlen(q));
	errno = 0;
	v->i = strtoll(tmp, &endp, 10);
	if (errno || *endp || endp == tmp)
		return perr(ps, "\"%.*s\" is not a value this file can hold", (int)n, s);
	v->kind = TOML_INT;
	return WFS_OK;
}

static wfs_err parse_value(struct parser *ps, struct toml_value *v)
{
	struct toml_value item = {0};
	wfs_err err = WFS_OK;

	if (ps->p >= ps->end || *ps->p != '[')
		return parse_scalar(ps, v);
	/* arrays appear only in sections this file ignores ([guard] white_list) */
	ps->p++;
	v->kind = TOML_ARRAY;
	for (;;) {
		skip_blank(ps);
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		err = parse_scalar(ps, &item);
		if (err)
			break;
		skip_blank(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		err = perr(ps, "an array must be on one line, its items separated by ','");
		break;
	}
	buf_free(&item.str);
	return err;
}

/* ---- the sections this file knows ---- */

static struct security_key *key_section(struct security_conf *c, const char *table)
{
	if (!strcmp(table, "jwt.signing"))
		return &c->volume_write;
	if (!strcmp(table, "jwt.signing.read"))
		return &c->volume_read;
	if (!strcmp(table, "jwt.filer_signing"))
		return &c->filer_write;
	if (!strcmp(table, "jwt.filer_signing.read"))
		return &c->filer_read;
	return NULL;
}

static const char *const role_names[SECURITY_ROLE_COUNT] = {"master", "volume", "filer", "s3"};

static int tls_role(const char *table)
{
	if (strncmp(table, "https.", 6))
		return -1;
	for (int r = 0; r < SECURITY_ROLE_COUNT; r++)
		if (!strcmp(table + 6, role_names[r]))
			return r;
	return -1;
}

static bool known_table(const char *table)
{
	return !strcmp(table, "jwt") || !strcmp(table, "https") || !strncmp(table, "jwt.", 4) ||
	       !strncmp(table, "https.", 6);
}

static wfs_err want(struct parser *ps, const struct toml_value *v, enum toml_kind kind,
		    const char *key)
{
	static const char *const kinds[] = {"a string", "an integer", "true or false", "an array"};
	if (v->kind != kind)
		return perr(ps, "%s must be %s", key, kinds[kind]);
	return WFS_OK;
}

/* Sets *dst to the string value, "" meaning not set. */
static void set_path(char **dst, const struct toml_value *v)
{
	free(*dst);
	*dst = v->str.len ? xstrdup(v->str.data) : NULL;
}

static wfs_err assign(struct parser *ps, struct security_conf *c, const char *table,
		      const char *key, const struct toml_value *v, bool *disable_verify)
{
	struct security_key *k = key_section(c, table);
	int role = tls_role(table);
	wfs_err err;

	if (k && !strcmp(key, "key")) {
		if ((err = want(ps, v, TOML_STRING, key)))
			return err;
		free(k->key);
		k->key = NULL;
		if (v->str.len) {
			k->key = xmalloc(v->str.len + 1);
			memcpy(k->key, v->str.data, v->str.len + 1);
		}
		k->key_len = v->str.len;
		return WFS_OK;
	}
	if (k && !strcmp(key, "expires_after_seconds")) {
		if ((err = want(ps, v, TOML_INT, key)))
			return err;
		if (v->i < 1 || v->i > 86400 * 365)
			return perr(ps, "expires_after_seconds must be 1 to 31536000");
		k->expires_after_sec = (int)v->i;
		return WFS_OK;
	}
	if (!strcmp(table, "https.client")) {
		struct security_tls_client *t = &c->client;
		if (!strcmp(key, "enabled")) {
			if ((err = want(ps, v, TOML_BOOL, key)))
				return err;
			t->enabled = v->b;
			return WFS_OK;
		}
		if (!strcmp(key, "cert") || !strcmp(key, "key") || !strcmp(key, "ca")) {
			if ((err = want(ps, v, TOML_STRING, key)))
				return err;
			set_path(!strcmp(key, "cert") ? &t->cert : !strcmp(key, "key") ? &t->key : &t->ca,
				 v);
			return WFS_OK;
		}
	}
	if (role >= 0) {
		struct security_tls_server *t = &c->https[role];
		if (!strcmp(key, "cert") || !strcmp(key, "key") || !strcmp(key, "ca")) {
			if ((err = want(ps, v, TOML_STRING, key)))
				return err;
			set_path(!strcmp(key, "cert") ? &t->cert : !strcmp(key, "key") ? &t->key : &t->ca,
				 v);
			return WFS_OK;
		}
		if (!strcmp(key, "disable_tls_verify_client_cert")) {
			if ((err = want(ps, v, TOML_BOOL, key)))
				return err;
			disable_verify[role] = v->b;
			return WFS_OK;
		}
	}
	if (!known_table(table))
		return WFS_OK; /* another SeaweedFS section: not ours */
	return perr(ps, "unknown setting %s%s%s", table, *table ? "." : "", key);
}

/* What the sections must hold together once every line is read. */
static wfs_err check_conf(struct security_conf *c, const bool *disable_verify, char *errbuf,
			  size_t errlen)
{
	struct security_key *keys[] = {&c->volume_write, &c->volume_read, &c->filer_write,
				       &c->filer_read};
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		if (!keys[i]->expires_after_sec)
			keys[i]->expires_after_sec = SECURITY_EXPIRES_DEFAULT;
	for (int r = 0; r < SECURITY_ROLE_COUNT; r++) {
		struct security_tls_server *t = &c->https[r];
		if (!t->cert != !t->key) {
			snprintf(errbuf, errlen, "[https.%s] needs both cert and key", role_names[r]);
			return WFS_EINVAL;
		}
		if (!t->cert && t->ca) {
			snprintf(errbuf, errlen, "[https.%s] has a ca but no cert and key",
				 role_names[r]);
			return WFS_EINVAL;
		}
		t->verify_client = t->ca && !disable_verify[r];
	}
	if (!c->client.cert != !c->client.key) {
		snprintf(errbuf, errlen, "[https.client] needs both cert and key, or neither");
		return WFS_EINVAL;
	}
	return WFS_OK;
}

wfs_err security_conf_parse(const char *text, size_t len, struct security_conf *out, char *errbuf,
			    size_t errlen)
{
	struct parser ps = {.p = text, .end = text + len, .line = 1, .err = errbuf, .errlen = errlen};
	struct toml_value v = {0};
	bool disable_verify[SECURITY_ROLE_COUNT] = {false};
	buf table = BUF_INIT, key = BUF_INIT;
	wfs_err err = WFS_OK;

	memset(out, 0, sizeof(*out));
	if (errlen)
		errbuf[0] = '\0';
	buf_append(&table, "", 0);
	while (ps.p < ps.end && !err) {
		skip_blank(&ps);
		if (ps.p >= ps.end)
			break;
		if (*ps.p == '\n' || *ps.p == '#' || *ps.p == '\r') {
			err = end_of_line(&ps);
		} else if (*ps.p == '[') {
			ps.p++;
			if (ps.p < ps.end && *ps.p == '[') {
				err = perr(&ps, "arrays of tables are not supported");
				break;
			}
			err = parse_name(&ps, &table);
			if (!err && (ps.p >= ps.end || *ps.p != ']'))
				err = perr(&ps, "a table header ends with ']'");
			if (!err) {
				ps.p++;
				err = end_of_line(&ps);
			}
		} else {
			err = parse_name(&ps, &key);
			if (!err && (ps.p >= ps.end || *ps.p != '='))
				err = perr(&ps, "expected '=' after %s", key.data);
			if (!err) {
				ps.p++;
				skip_blank(&ps);
				err = parse_value(&ps, &v);
			}
			if (!err)
				err = end_of_line(&ps);
			if (!err && v.kind == TOML_STRING && v.str.len && memchr(v.str.data, '\0', v.str.len))
				err = perr(&ps, "%s holds a NUL byte", key.data);
			if (!err)
				err = assign(&ps, out, table.data, key.data, &v, disable_verify);
		}
		if (!err && ps.p < ps.end) { /* at the '\n' */
			ps.p++;
			ps.line++;
		}
	}
	if (!err)
		err = check_conf(out, disable_verify, errbuf, errlen);
	buf_free(&v.str);
	buf_free(&table);
	buf_free(&key);
	if (err)
		security_conf_free(out);
	return err;
}

void security_conf_free(struct security_conf *c)
{
	struct security_key *keys[] = {&c->volume_write, &c->volume_read, &c->filer_write,
				       &c->filer_read};
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		free(keys[i]->key);
	for (int r = 0; r < SECURITY_ROLE_COUNT; r++) {
		free(c->https[r].cert);
		free(c->https[r].key);
		free(c->https[r].ca);
	}
	free(c->client.cert);
	free(c->client.key);
	free(c->client.ca);
	memset(c, 0, sizeof(*c));
}

/* ---- the process-wide configuration ---- */

static struct security_conf current = {
	.volume_write = {.expires_after_sec = SECURITY_EXPIRES_DEFAULT},
	.volume_read = {.expires_after_sec = SECURITY_EXPIRES_DEFAULT},
	.filer_write = {.expires_after_sec = SECURITY_EXPIRES_DEFAULT},
	.filer_read = {.expires_after_sec = SECURITY_EXPIRES_DEFAULT},
};
static char *current_path;

static wfs_err check_readable(const char *what, const char *path, char *errbuf, size_t errlen)
{
	if (path && access(path, R_OK)) {
		snprintf(errbuf, errlen, "%s %s: %s", what, path, strerror(errno));
		return WFS_EIO;
	}
	return WFS_OK;
}

/* The file's text into out; WFS_ETOOBIG over SECURITY_FILE_MAX, WFS_EIO (errno set) otherwise. */
static wfs_err read_text(const char *path, buf *out)
{
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return WFS_EIO;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (out->len + n > SECURITY_FILE_MAX) {
			fclose(f);
			return WFS_ETOOBIG;
		}
		buf_append(out, chunk, n);
	}
	n = (size_t)ferror(f);
	fclose(f);
	return n ? WFS_EIO : WFS_OK;
}

static wfs_err check_files(const struct security_conf *c, char *errbuf, size_t errlen)
{
	wfs_err err = WFS_OK;
	for (int r = 0; r < SECURITY_ROLE_COUNT && !err; r++) {
		const struct security_tls_server *t = &c->https[r];
		if (!(err = check_readable("certificate", t->cert, errbuf, errlen)) &&
		    !(err = check_readable("key", t->key, errbuf, errlen)))
			err = check_readable("ca", t->ca, errbuf, errlen);
	}
	if (!err && !(err = check_readable("certificate", c->client.cert, errbuf, errlen)) &&
	    !(err = check_readable("key", c->client.key, errbuf, errlen)))
		err = check_readable("ca", c->client.ca, errbuf, errlen);
	return err;
}

wfs_err security_init(const char *path, char *errbuf, size_t errlen)
{
	struct security_conf c;
	buf text = BUF_INIT;
	wfs_err err;
	char msg[300];

	if (!path || !*path)
		return WFS_OK;
	errno = 0;
	err = read_text(path, &text);
	if (err) {
		snprintf(errbuf, errlen, "%s: %s", path,
			 err == WFS_ETOOBIG ? "over 1 MiB" : strerror(errno ? errno : EIO));
		buf_free(&text);
		return err == WFS_ETOOBIG ? WFS_EINVAL : WFS_EIO;
	}
	err = security_conf_parse(text.data, text.len, &c, msg, sizeof(msg));
	buf_free(&text);
	if (err) {
		snprintf(errbuf, errlen, "%s: %s", path, msg);
		return err;
	}
	err = check_files(&c, errbuf, errlen);
	if (err) {
		security_conf_free(&c);
		return err;
	}
	security_conf_free(&current);
	current = c;
	free(current_path);
	current_path = xstrdup(path);
	return WFS_OK;
}

const struct security_conf *security(void)
{
	return &current;
}

bool security_tls_requested(const struct security_conf *c)
{
	for (int r = 0; r < SECURITY_ROLE_COUNT; r++)
		if (c->https[r].cert)
			return true;
	return c->client.enabled;
}

const char *security_path(void)
{
	return current_path;
}

/* ---- reload hooks ---- */

struct reload_hook {
	security_reload_fn fn;
	void *arg;
};

static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reload_hook *hooks;
static size_t nhooks, hooks_cap;

void security_on_reload(security_reload_fn fn, void *arg)
{
	pthread_mutex_lock(&hooks_lock);
	if (nhooks == hooks_cap) {
		hooks_cap = hooks_cap ? hooks_cap * 2 : 8;
		hooks = xrealloc(hooks, hooks_cap * sizeof(*hooks));
	}
	hooks[nhooks++] = (struct reload_hook){fn, arg};
	pthread_mutex_unlock(&hooks_lock);
}

void security_off_reload(security_reload_fn fn, void *arg)
{
	pthread_mutex_lock(&hooks_lock);
	for (size_t i = 0; i < nhooks; i++)
		if (hooks[i].fn == fn && hooks[i].arg == arg) {
			memmove(&hooks[i], &hooks[i + 1], (nhooks - i - 1) * sizeof(*hooks));
			nhooks--;
			break;
		}
	if (!nhooks) {
		free(hooks);
		hooks = NULL;
		hooks_cap = 0;
	}
	pthread_mutex_unlock(&hooks_lock);
}

void security_reload(void)
{
	/* the lock is held while hooks run: a hook must not register or remove one */
	pthread_mutex_lock(&hooks_lock);
	log_info("reloading the certificates named in %s", current_path ? current_path : "(none)");
	for (size_t i = 0; i < nhooks; i++)
		hooks[i].fn(hooks[i].arg);
	pthread_mutex_unlock(&hooks_lock);
}
