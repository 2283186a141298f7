/*
 * DESIGN: everything here is pure (no I/O, no globals besides const tables)
 * so servers, clients and fuzz targets share it. The multipart parser is a
 * byte-level state machine: the delimiter "\r\n--boundary" contains '\r' only
 * at its start (boundaries may not hold CR or LF), so a partial match at the
 * end of a piece is just a count k of matched delimiter bytes, and those bytes
 * are re-emitted from the delimiter itself when the match fails. No piece is
 * ever buffered except part headers (bounded at 8 KiB).
 */
#include "config.h"
#include <ctype.h>
#include <netdb.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http_util.h"
#include "util.h"

/* ---- ranges ---- */

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Parses 1+ digits; false on none or overflow. */
static bool parse_digits(const char **pp, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p)) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		p++;
	}
	*pp = p;
	*out = v;
	return true;
}

wfs_err http_parse_range(const char *header, uint64_t size, struct http_range *out, int max, int *n)
{
	const char *p;
	int listed = 0, got = 0;

	*n = 0;
	if (!header || max <= 0)
		return WFS_EINVAL;
	p = skip_ows(header);
	if (strncasecmp(p, "bytes", 5))
		return WFS_EINVAL;
	p = skip_ows(p + 5);
	if (*p++ != '=')
		return WFS_EINVAL;
	for (;;) {
		uint64_t a = 0, b = 0;
		bool suffix = false, open = false;
		p = skip_ows(p);
		if (*p == ',') { /* empty list element */
			p++;
			continue;
		}
		if (*p == '\0')
			break;
		if (*p == '-') {
			p++;
			suffix = true;
			if (!parse_digits(&p, &b))
				return WFS_EINVAL;
		} else {
			if (!parse_digits(&p, &a) || *p++ != '-')
				return WFS_EINVAL;
			if (isdigit((unsigned char)*p)) {
				if (!parse_digits(&p, &b) || b < a)
					return WFS_EINVAL;
			} else {
				open = true;
			}
		}
		p = skip_ows(p);
		if (*p != ',' && *p != '\0')
			return WFS_EINVAL;
		if (++listed > max)
			return WFS_EINVAL;
		if (suffix) {
			if (b > 0 && size > 0) {
				uint64_t len = b < size ? b : size;
				out[got].start = size - len;
				out[got].len = len;
				got++;
			}
		} else if (a < size) {
			uint64_t last = open || b >= size ? size - 1 : b;
			out[got].start = a;
			out[got].len = last - a + 1;
			got++;
		}
		if (*p == ',')
			p++;
	}
	if (listed == 0)
		return WFS_EINVAL;
	if (got == 0)
		return WFS_ERANGE;
	*n = got;
	return WFS_OK;
}

/* ---- dates ---- */

static const char wdays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char *const long_wdays[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
					  "Thursday", "Friday", "Saturday"};

void http_date_format(time_t t, char *out, size_t outlen)
{
	struct tm tm;
	if (!gmtime_r(&t, &tm)) {
		if (outlen)
			out[0] = '\0';
		return;
	}
	snprintf(out, outlen, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday % 7],
		 tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
		 tm.tm_sec);
}

/* Reads exactly n digits. */
static bool date_num(const char **pp, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*pp)[i]))
			return false;
		v = v * 10 + ((*pp)[i] - '0');
	}
	*pp += n;
	*out = v;
	return true;
}

static bool date_month(const char **pp, int *out)
{
	for (int i = 0; i < 12; i++) {
		if (!strncmp(*pp, months[i], 3)) {
			*out = i;
			*pp += 3;
			return true;
		}
	}
	return false;
}

static bool date_lit(const char **pp, const char *lit)
{
	size_t n = strlen(lit);
	if (strncmp(*pp, lit, n))
		return false;
	*pp += n;
	return true;
}

/* "HH:MM:SS" */
static bool date_clock(const char **pp, struct tm *tm)
{
	return date_num(pp, 2, &tm->tm_hour) && date_lit(pp, ":") && date_num(pp, 2, &tm->tm_min) &&
	       date_lit(pp, ":") && date_num(pp, 2, &tm->tm_sec);
}

static bool date_valid(const struct tm *tm)
{
	static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return tm->tm_mday >= 1 && tm->tm_mday <= mdays[tm->tm_mon] && tm->tm_hour <= 23 &&
	       tm->tm_min <= 59 && tm->tm_sec <= 60;
}

bool http_date_parse(const char *s, time_t *out)
{
	struct tm tm;
	const char *p = s;
	int i, year;

	memset(&tm, 0, sizeof(tm));
	if (!s)
		return false;
	for (i = 0; i < 7; i++)
		if (!strncmp(p, long_wdays[i], strlen(long_wdays[i])))
			break;
	if (i < 7 && p[strlen(long_wdays[i])] == ',') {
		/* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"; two-digit years within 50 years. */
		p += strlen(long_wdays[i]) + 1;
		if (!date_lit(&p, " ") || !date_num(&p, 2, &tm.tm_mday) || !date_lit(&p, "-") ||
		    !date_month(&p, &tm.tm_mon) || !date_lit(&p, "-") || !date_num(&p, 2, &year) ||
		    !date_lit(&p, " ") || !date_clock(&p, &tm) || !date_lit(&p, " GMT"))
			return false;
		tm.tm_year = year < 70 ? year + 100 : year;
	} else {
		for (i = 0; i < 7; i++)
			if (!strncmp(p, wdays[i], 3))
				break;
		if (i == 7)
			return false;
		p += 3;
		if (*p == ',') {
			/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
			p++;
			if (!date_lit(&p, " ") || !date_num(&p, 2, &tm.tm_mday) ||
			    !date_lit(&p, " ") || !date_month(&p, &tm.tm_mon) ||
			    !date_lit(&p, " ") || !date_num(&p, 4, &year) || !date_lit(&p, " ") ||
			    !date_clock(&p, &tm) || !date_lit(&p, " GMT"))
				return false;
		} else {
			/* asctime: "Sun Nov  6 08:49:37 1994" */
			if (!date_lit(&p, " ") || !date_month(&p, &tm.tm_mon) || !date_lit(&p, " "))
				return false;
			if (*p == ' ') {
				p++;
				if (!date_num(&p, 1, &tm.tm_mday))
					return false;
			} else if (!date_num(&p, 2, &tm.tm_mday)) {
				return false;
			}
			if (!date_lit(&p, " ") || !date_clock(&p, &tm) || !date_lit(&p, " ") ||
			    !date_num(&p, 4, &year))
				return false;
		}
		tm.tm_year = year - 1900;
	}
	if (*p != '\0' || !date_valid(&tm))
		return false;
	*out = timegm(&tm);
	return true;
}

bool iso8601_parse(const char *s, time_t *out)
{
	struct tm tm = {0};
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return false;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (strcmp(p, "Z") || !date_valid(&tm))
		return false;
	*out = timegm(&tm);
	return true;
}

/* ---- MIME ---- */

static const struct {
	const char *ext;
	const char *type;
} mime_table[] = {
	{"7z", "application/x-7z-compressed"},
	{"aac", "audio/aac"},
	{"apk", "application/vnd.android.package-archive"},
	{"avi", "video/x-msvideo"},
	{"avif", "image/avif"},
	{"bin", "application/octet-stream"},
	{"bmp", "image/bmp"},
	{"bz2", "application/x-bzip2"},
	{"css", "text/css; charset=utf-8"},
	{"csv", "text/csv; charset=utf-8"},
	{"doc", "application/msword"},
	{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
	{"eot", "application/vnd.ms-fontobject"},
	{"epub", "application/epub+zip"},
	{"flac", "audio/flac"},
	{"gif", "image/gif"},
	{"gz", "application/gzip"},
	{"heic", "image/heic"},
	{"htm", "text/html; charset=utf-8"},
	{"html", "text/html; charset=utf-8"},
	{"ico", "image/vnd.microsoft.icon"},
	{"ics", "text/calendar; charset=utf-8"},
	{"jar", "application/java-archive"},
	{"jpeg", "image/jpeg"},
	{"jpg", "image/jpeg"},
	{"js", "text/javascript; charset=utf-8"},
	{"json", "application/json"},
	{"jsonld", "application/ld+json"},
	{"m4a", "audio/mp4"},
	{"md", "text/markdown; charset=utf-8"},
	{"mid", "audio/midi"},
	{"mjs", "text/javascript; charset=utf-8"},
	{"mkv", "video/x-matroska"},
	{"mov", "video/quicktime"},
	{"mp3", "audio/mpeg"},
	{"mp4", "video/mp4"},
	{"mpeg", "video/mpeg"},
	{"odp", "application/vnd.oasis.opendocument.presentation"},
	{"ods", "application/vnd.oasis.opendocument.spreadsheet"},
	{"odt", "application/vnd.oasis.opendocument.text"},
	{"oga", "audio/ogg"},
	{"ogg", "audio/ogg"},
	{"ogv", "video/ogg"},
	{"otf", "font/otf"},
	{"pdf", "application/pdf"},
	{"png", "image/png"},
	{"ppt", "application/vnd.ms-powerpoint"},
	{"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
	{"rar", "application/vnd.rar"},
	{"rtf", "application/rtf"},
	{"sh", "application/x-sh"},
	{"svg", "image/svg+xml"},
	{"tar", "application/x-tar"},
	{"tgz", "application/gzip"},
	{"tif", "image/tiff"},
	{"tiff", "image/tiff"},
	{"ts", "video/mp2t"},
	{"ttf", "font/ttf"},
	{"txt", "text/plain; charset=utf-8"},
	{"wasm", "application/wasm"},
	{"wav", "audio/wav"},
	{"weba", "audio/webm"},
	{"webm", "video/webm"},
	{"webp", "image/webp"},
	{"woff", "font/woff"},
	{"woff2", "font/woff2"},
	{"xhtml", "application/xhtml+xml"},
	{"xls", "application/vnd.ms-excel"},
	{"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
	{"xml", "text/xml; charset=utf-8"},
	{"xz", "application/x-xz"},
	{"yaml", "application/yaml"},
	{"yml", "application/yaml"},
	{"zip", "application/zip"},
	{"zst", "application/zstd"},
};

const char *http_mime_by_ext(const char *name)
{
	const char *dot, *slash;
	char ext[8];
	size_t n, i;

	if (!name)
		return NULL;
	dot = strrchr(name, '.');
	slash = strrchr(name, '/');
	if (!dot || (slash && slash > dot) || !dot[1])
		return NULL;
	n = strlen(dot + 1);
	if (n >= sizeof(ext))
		return NULL;
	for (i = 0; i < n; i++)
		ext[i] = (char)tolower((unsigned char)dot[1 + i]);
	ext[n] = '\0';
	/* The table is sorted: binary search. */
	size_t lo = 0, hi = ARRAY_LEN(mime_table);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(ext, mime_table[mid].ext);
		if (c == 0)
			return mime_table[mid].type;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* ---- URL coding ---- */

bool url_decode(const char *s, size_t n, bool plus_is_space, buf *out)
{
	size_t i = 0, start = out->len;
	buf_reserve(out, n);
	while (i < n) {
		/* Copy runs without escapes in one go. */
		size_t j = i;
		while (j < n && s[j] != '%' && !(plus_is_space && s[j] == '+') && s[j] != '\0')
			j++;
		if (j > i)
			buf_append(out, s + i, j - i);
		if (j == n)
			break;
		if (s[j] == '\0')
			goto bad;
		if (s[j] == '+') {
			buf_append_byte(out, ' ');
			i = j + 1;
			continue;
		}
		if (j + 2 >= n)
			goto bad;
		int hi = hex_digit_value((unsigned char)s[j + 1]),
		    lo = hex_digit_value((unsigned char)s[j + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			goto bad;
		buf_append_byte(out, (char)(hi << 4 | lo));
		i = j + 3;
	}
	return true;
bad:
	out->len = start;
	if (out->data)
		out->data[start] = '\0';
	return false;
}

static bool unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static void url_encode(const char *s, bool keep_slash, buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (unreserved(*p) || (keep_slash && *p == '/')) {
			buf_append_byte(out, (char)*p);
		} else {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
			buf_append(out, e, 3);
		}
	}
}

void url_encode_path(const char *s, buf *out) { url_encode(s, true, out); }

void url_encode_query(const char *s, buf *out) { url_encode(s, false, out); }

/* ---- multipart ---- */

#define MP_MAX_BOUNDARY 70
#define MP_MAX_HEADERS  8192

enum mp_state {
	MP_PREAMBLE,    /* discarding until the first delimiter */
	MP_AFTER_DELIM, /* just after "--boundary": "--", padding or CRLF */
	MP_AFTER_DASH,  /* saw one '-' of the closing "--" */
	MP_PAD,         /* transport padding before CRLF */
	MP_CR,          /* saw CR, expect LF */
	MP_HEADERS,     /* collecting part headers up to a blank line */
	MP_BODY,        /* part data until the next delimiter */
	MP_EPILOGUE,    /* after the close delimiter: ignored */
	MP_FAILED
};

struct multipart {
	struct multipart_cb cb;
	void *arg;
	enum mp_state state;
	char delim[4 + MP_MAX_BOUNDARY + 1]; /* "\r\n--" + boundary */
	size_t dlen;
	size_t k; /* delimiter bytes matched so far */
	bool in_part;
	buf hdr; /* current part's raw headers */
	buf name, filename, ctype;
	bool has_filename, has_ctype;
};

/* Reads a token or quoted-string parameter value at *pp into out; advances. */
static bool mp_param_value(const char **pp, buf *out)
{
	const char *p = *pp;
	buf_reset(out);
	if (*p == '"') {
		p++;
		while (*p && *p != '"') {
			if (*p == '\\' && p[1])
				p++;
			buf_append_byte(out, *p++);
		}
		if (*p != '"')
			return false;
		p++;
	} else {
		while (*p && *p != ';' && *p != ' ' && *p != '\t')
			buf_append_byte(out, *p++);
	}
	*pp = p;
	return true;
}

/*
 * Walks "type; a=b; c="d"" calling fn for each parameter (name lower-cased is not
 * needed: names are compared case-insensitively by fn). Returns false if malformed.
 */
typedef bool (*mp_param_fn)(const char *name, size_t nlen, const buf *value, void *arg);
static bool mp_params(const char *s, mp_param_fn fn, void *arg)
{
	buf v = BUF_INIT;
	bool okay = false;
	const char *p = strchr(s, ';');
	while (p) {
		p = skip_ows(p + 1);
		if (*p == '\0')
			break;
		const char *name = p;
		while (*p && *p != '=' && *p != ';' && *p != ' ' && *p != '\t')
			p++;
		size_t nlen = (size_t)(p - name);
		p = skip_ows(p);
		if (*p != '=') {
			/* A parameter without value: skip it. */
			p = strchr(p, ';');
			continue;
		}
		p = skip_ows(p + 1);
		if (!mp_param_value(&p, &v))
			goto out;
		if (!fn(name, nlen, &v, arg))
			goto out;
		p = skip_ows(p);
		if (*p && *p != ';')
			goto out;
		if (!*p)
			break;
	}
	okay = true;
out:
	buf_free(&v);
	return okay;
}

static bool mp_boundary_param(const char *name, size_t nlen, const buf *value, void *arg)
{
	buf *b = arg;
	if (nlen == 8 && !strncasecmp(name, "boundary", 8)) {
		buf_reset(b);
		buf_append(b, value->data ? value->data : "", value->len);
	}
	return true;
}

multipart *multipart_new(const char *content_type, const struct multipart_cb *cb, void *arg)
{
	buf b = BUF_INIT;
	multipart *m = NULL;

	if (!content_type || strncasecmp(skip_ows(content_type), "multipart/", 10))
		goto out;
	if (!mp_params(content_type, mp_boundary_param, &b))
		goto out;
	if (b.len == 0 || b.len > MP_MAX_BOUNDARY || strlen(b.data) != b.len)
		goto out;
	for (size_t i = 0; i < b.len; i++)
		if ((unsigned char)b.data[i] < 0x20 || (unsigned char)b.data[i] > 0x7e)
			goto out;
	m = xcalloc(1, sizeof(*m));
	m->cb = *cb;
	m->arg = arg;
	memcpy(m->delim, "\r\n--", 4);
	memcpy(m->delim + 4, b.data, b.len);
	m->dlen = 4 + b.len;
	/* The first delimiter may open the body without a CRLF: pretend one was seen. */
	m->k = 2;
	m->state = MP_PREAMBLE;
out:
	buf_free(&b);
	return m;
}

void multipart_free(multipart *m)
{
	if (!m)
		return;
	buf_free(&m->hdr);
	buf_free(&m->name);
	buf_free(&m->filename);
	buf_free(&m->ctype);
	free(m);
}

static bool mp_disposition_param(const char *name, size_t nlen, const buf *value, void *arg)
{
	multipart *m = arg;
	const char *v = value->data ? value->data : "";
	if (nlen == 4 && !strncasecmp(name, "name", 4)) {
		buf_reset(&m->name);
		buf_append(&m->name, v, value->len);
	} else if (nlen == 8 && !strncasecmp(name, "filename", 8)) {
		/* filename* wins over filename whichever comes first. */
		if (!m->has_filename) {
			buf_reset(&m->filename);
			buf_append(&m->filename, v, value->len);
			m->has_filename = true;
		}
	} else if (nlen == 9 && !strncasecmp(name, "filename*", 9)) {
		/* RFC 5987 ext-value: charset'language'percent-encoded */
		const char *q1 = strchr(v, '\''), *q2 = q1 ? strchr(q1 + 1, '\'') : NULL;
		if (!q2 || (size_t)(q1 - v) != 5 || strncasecmp(v, "utf-8", 5))
			return true; /* unknown charset: keep the plain filename */
		buf_reset(&m->filename);
		if (!url_decode(q2 + 1, strlen(q2 + 1), false, &m->filename))
			return false;
		m->has_filename = true;
	}
	return true;
}

/* Parses the collected part headers and announces the part. */
static bool mp_begin_part(multipart *m)
{
	char *p = m->hdr.data ? m->hdr.data : (char *)"";
	char *end = p + m->hdr.len;
	bool have_disp = false;

	buf_reset(&m->name);
	buf_reset(&m->filename);
	buf_reset(&m->ctype);
	m->has_filename = false;
	m->has_ctype = false;
	while (p < end) {
		char *eol = strstr(p, "\r\n");
		if (!eol)
			return false;
		*eol = '\0';
		if (eol == p)
			break;
		char *colon = strchr(p, ':');
		if (!colon || colon == p || *p == ' ' || *p == '\t')
			return false;
		*colon = '\0';
		char *v = (char *)skip_ows(colon + 1);
		size_t vl = strlen(v);
		while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			v[--vl] = '\0';
		if (!strcasecmp(p, "content-disposition")) {
			if (have_disp)
				return false;
			have_disp = true;
			if (!mp_params(v, mp_disposition_param, m))
				return false;
		} else if (!strcasecmp(p, "content-type")) {
			buf_reset(&m->ctype);
			buf_append(&m->ctype, v, vl);
			m->has_ctype = true;
		}
		p = eol + 2;
	}
	struct multipart_part part = {
		.name = m->name.data ? m->name.data : "",
		.filename = m->has_filename ? (m->filename.data ? m->filename.data : "") : NULL,
		.content_type = m->has_ctype ? m->ctype.data : NULL,
	};
	m->in_part = true;
	return !m->cb.on_part || m->cb.on_part(&part, m->arg);
}

static bool mp_emit(multipart *m, const char *data, size_t len)
{
	if (m->state != MP_BODY || len == 0 || !m->cb.on_data)
		return true;
	return m->cb.on_data(data, len, m->arg);
}

/* Scans preamble or body bytes for the delimiter; returns bytes consumed or SIZE_MAX on error. */
static size_t mp_scan(multipart *m, const char *data, size_t len)
{
	size_t i = 0;
	while (i < len) {
		if (m->k == 0) {
			const char *cr = memchr(data + i, '\r', len - i);
			size_t run = cr ? (size_t)(cr - (data + i)) : len - i;
			if (!mp_emit(m, data + i, run))
				return SIZE_MAX;
			i += run;
			if (!cr)
				break;
			m->k = 1;
			i++;
			continue;
		}
		if (data[i] == m->delim[m->k]) {
			i++;
			if (++m->k == m->dlen) {
				m->k = 0;
				if (m->in_part) {
					m->in_part = false;
					if (m->cb.on_part_end)
						m->cb.on_part_end(m->arg);
				}
				m->state = MP_AFTER_DELIM;
				return i;
			}
			continue;
		}
		/* Mismatch: the held bytes were data after all (only delim[0] is '\r'). */
		if (!mp_emit(m, m->delim, m->k))
			return SIZE_MAX;
		m->k = 0;
	}
	return i;
}

wfs_err multipart_feed(multipart *m, const char *data, size_t len)
{
	size_t i = 0;
	while (i < len && m->state != MP_FAILED) {
		char c = data[i];
		switch (m->state) {
		case MP_PREAMBLE:
		case MP_BODY: {
			size_t n = mp_scan(m, data + i, len - i);
			if (n == SIZE_MAX)
				goto fail;
			i += n;
			break;
		}
		case MP_AFTER_DELIM:
			i++;
			if (c == '-')
				m->state = MP_AFTER_DASH;
			else if (c == ' ' || c == '\t')
				m->state = MP_PAD;
			else if (c == '\r')
				m->state = MP_CR;
			else
				goto fail;
			break;
		case MP_AFTER_DASH:
			i++;
			if (c != '-')
				goto fail;
			m->state = MP_EPILOGUE;
			break;
		case MP_PAD:
			i++;
			if (c == '\r')
				m->state = MP_CR;
			else if (c != ' ' && c != '\t')
				goto fail;
			break;
		case MP_CR:
			i++;
			if (c != '\n')
				goto fail;
			buf_reset(&m->hdr);
			m->state = MP_HEADERS;
			break;
		case MP_HEADERS: {
			/* Copy up to the end of the header block, bounded. */
			size_t j = i;
			bool done = false;
			while (j < len) {
				buf_append_byte(&m->hdr, data[j++]);
				size_t hl = m->hdr.len;
				if ((hl == 2 && !memcmp(m->hdr.data, "\r\n", 2)) ||
				    (hl >= 4 && !memcmp(m->hdr.data + hl - 4, "\r\n\r\n", 4))) {
					done = true;
					break;
				}
				if (hl > MP_MAX_HEADERS)
					goto fail;
			}
			i = j;
			if (done) {
				m->state = MP_BODY;
				if (!mp_begin_part(m))
					goto fail;
			}
			break;
		}
		case MP_EPILOGUE:
			return WFS_OK;
		case MP_FAILED:
			break;
		}
	}
	return m->state == MP_FAILED ? WFS_EINVAL : WFS_OK;
fail:
	m->state = MP_FAILED;
	return WFS_EINVAL;
}

wfs_err multipart_finish(multipart *m) { return m->state == MP_EPILOGUE ? WFS_OK : WFS_EINVAL; }

bool host_port_resolve(const char *host_port, struct sockaddr_storage *ss, unsigned *len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	const char *colon = strrchr(host_port, ':');
	char host[256];
	size_t hl;

	if (!colon || (hl = (size_t)(colon - host_port)) >= sizeof(host) || !hl)
		return false;
	memcpy(host, host_port, hl);
	host[hl] = '\0';
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
		return false;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = (unsigned)ai->ai_addrlen;
	freeaddrinfo(ai);
	return true;
}

char *url_query_param(const char *raw_query, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = raw_query; p && *p;) {
		const char *end = strchr(p, '&'), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		eq = memchr(p, '=', len);
		if ((eq ? (size_t)(eq - p) : len) == n && !strncmp(p, name, n)) {
			buf b;
			buf_init(&b);
			if (!eq || !url_decode(eq + 1, len - n - 1, true, &b)) {
				buf_free(&b);
				return xstrdup("");
			}
			buf_append_byte(&b, '\0');
			return b.data;
		}
		p = end ? end + 1 : NULL;
	}
	return NULL;
}
