/*
 * DESIGN
 *
 * Writer. Answers are appended to the caller's buf as they are produced, so a
 * listing of thousands of keys costs one pass and no tree. The open element
 * names are copied into the writer's own stack (a byte buffer of names plus
 * their offsets): xml_close() needs no name, names need not outlive the call,
 * and the caller may flush and empty its buf between elements. Escaping
 * follows what S3 itself emits: the five XML specials as entities, C0 control
 * characters as numeric references (&#x1; - S3 lists such keys this way,
 * which strict XML 1.0 readers refuse, hence S3's encoding-type=url), CR as
 * &#xD; so that it survives end-of-line normalisation. What no XML can carry
 * (NUL, U+FFFE, U+FFFF, bytes that are not UTF-8) becomes U+FFFD, one per
 * bad byte, so the output is always valid UTF-8. Safe runs, multibyte UTF-8
 * included, are copied with one append.
 *
 * Reader. expat does the XML (a mature, heavily fuzzed parser); this file
 * only builds a small tree and enforces bounds. S3 request bodies never carry
 * a DOCTYPE, so any DOCTYPE is refused the moment expat reports it: no entity
 * can then be declared, which rules out external entities (XXE) and entity
 * expansion (billion laughs) without relying on expat's amplification limits.
 * Every bound (body length, depth, elements plus attributes, text bytes) is
 * checked in the handler before anything is allocated, and expat is fed in
 * chunks so its own buffer stays small. Names are stored without their
 * namespace (S3 clients send bodies with and without xmlns) and the namespace
 * URI is kept apart. The tree lives in an arena freed by one call; an
 * element's own text may resume after a child closes, so pending text sits in
 * one stack buffer (each open element owns the tail from its offset) and is
 * copied into the arena when the element ends.
 */
#include "config.h"
#include <expat.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "s3/xml.h"
#include "utf8.h"
#include "util.h"

/* ---- writer ---- */

struct xml_w {
	buf *out;    /* borrowed */
	buf names;   /* the open names, each NUL-terminated, innermost last */
	size_t *off; /* off[i]: where the i-th open name starts in names */
	size_t depth, cap;
};

static const char xml_decl[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* 1 for a byte that needs a look before it is copied: in text, and in attribute values. */
static const unsigned char special_text[256] = {
	[0 ... 8] = 1, [11 ... 31] = 1, ['&'] = 1,  ['<'] = 1,
	['>'] = 1,     ['"'] = 1,       ['\''] = 1, [128 ... 255] = 1,
};
static const unsigned char special_attr[256] = {
	[0 ... 31] = 1, ['&'] = 1, ['<'] = 1, ['>'] = 1, ['"'] = 1, ['\''] = 1, [128 ... 255] = 1,
};

/* Length of the valid UTF-8 character at p that XML can carry, or 0. */
static size_t utf8_xml_char(const unsigned char *p, size_t n)
{
	uint32_t cp = 0;
	size_t l = utf8_decode(p, n, &cp);
	return cp == 0xfffe || cp == 0xffff ? 0 : l;
}

/* xml_escape; special says which bytes need a look (attribute values add TAB and LF). */
static void escape(buf *out, const char *s, size_t len, const unsigned char *special)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, start, l;

	while (i < len) {
		start = i;
		while (i < len) {
			if (!special[p[i]])
				i++;
			else if (p[i] >= 0x80 && (l = utf8_xml_char(p + i, len - i)) != 0)
				i += l;
			else
				break;
		}
		if (i > start)
			buf_append(out, p + start, i - start);
		if (i == len)
			break;
		switch (p[i]) {
		case '&':
			buf_append(out, "&amp;", 5);
			break;
		case '<':
			buf_append(out, "&lt;", 4);
			break;
		case '>':
			buf_append(out, "&gt;", 4);
			break;
		case '"':
			buf_append(out, "&quot;", 6);
			break;
		case '\'':
			buf_append(out, "&apos;", 6);
			break;
		case 0:
			buf_append(out, replacement, 3);
			break;
		default:
			if (p[i] < 0x20) {
				char ref[7] = {'&', '#', 'x'};
				size_t n = 3;
				if (p[i] >= 0x10)
					ref[n++] = '1';
				ref[n++] = hex[p[i] & 0xf];
				ref[n++] = ';';
				buf_append(out, ref, n);
			} else {
				/* not UTF-8, or U+FFFE / U+FFFF (the whole character goes) */
				l = utf8_decode(p + i, len - i, NULL);
				buf_append(out, replacement, 3);
				i += l ? l - 1 : 0;
			}
		}
		i++;
	}
}

void xml_escape(buf *out, const char *s, size_t len) { escape(out, s, len, special_text); }

xml_w *xml_w_new(buf *out)
{
	xml_w *w = xcalloc(1, sizeof(*w));
	w->out = out;
	buf_append(out, xml_decl, sizeof(xml_decl) - 1);
	return w;
}

void xml_open_attrs(xml_w *w, const char *name, const char *const *attrs)
{
	size_t nl = strlen(name);

	if (w->depth == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 8;
		w->off = xrealloc(w->off, w->cap * sizeof(*w->off));
	}
	w->off[w->depth++] = w->names.len;
	buf_append(&w->names, name, nl + 1);

	buf_append_byte(w->out, '<');
	buf_append(w->out, name, nl);
	for (; attrs && attrs[0]; attrs += 2) {
		buf_append_byte(w->out, ' ');
		buf_append_str(w->out, attrs[0]);
		buf_append(w->out, "=\"", 2);
		escape(w->out, attrs[1], strlen(attrs[1]), special_attr);
		buf_append_byte(w->out, '"');
	}
	buf_append_byte(w->out, '>');
}

void xml_open(xml_w *w, const char *name) { xml_open_attrs(w, name, NULL); }

void xml_open_s3(xml_w *w, const char *name)
{
	static const char *const ns[] = {"xmlns", XML_S3_NS, NULL};
	xml_open_attrs(w, name, ns);
}

void xml_close(xml_w *w)
{
	size_t off;
	if (!w->depth)
		return;
	off = w->off[--w->depth];
	buf_append(w->out, "</", 2);
	buf_append(w->out, w->names.data + off, w->names.len - off - 1);
	buf_append_byte(w->out, '>');
	w->names.len = off;
}

void xml_close_to(xml_w *w, size_t depth)
{
	while (w->depth > depth)
		xml_close(w);
}

size_t xml_w_depth(const xml_w *w) { return w->depth; }

void xml_elem_len(xml_w *w, const char *name, const char *text, size_t len)
{
	size_t nl = strlen(name);
	buf_append_byte(w->out, '<');
	buf_append(w->out, name, nl);
	buf_append_byte(w->out, '>');
	xml_escape(w->out, text, len);
	buf_append(w->out, "</", 2);
	buf_append(w->out, name, nl);
	buf_append_byte(w->out, '>');
}

void xml_elem(xml_w *w, const char *name, const char *text)
{
	xml_elem_len(w, name, text ? text : "", text ? strlen(text) : 0);
}

void xml_elem_fmt(xml_w *w, const char *name, const char *fmt, ...)
{
	char small[128], *s = small;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0, small[0] = '\0';
	if ((size_t)n >= sizeof(small)) {
		s = xmalloc((size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(s, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	xml_elem_len(w, name, s, (size_t)n);
	if (s != small)
		free(s);
}

void xml_elem_u64(xml_w *w, const char *name, uint64_t v)
{
	char s[24];
	int n = snprintf(s, sizeof(s), "%" PRIu64, v);
	xml_elem_len(w, name, s, (size_t)n);
}

void xml_elem_i64(xml_w *w, const char *name, int64_t v)
{
	char s[24];
	int n = snprintf(s, sizeof(s), "%" PRId64, v);
	xml_elem_len(w, name, s, (size_t)n);
}

void xml_elem_bool(xml_w *w, const char *name, bool v)
{
	xml_elem_len(w, name, v ? "true" : "false", v ? 4 : 5);
}

void xml_w_free(xml_w *w)
{
	if (!w)
		return;
	xml_close_to(w, 0);
	buf_free(&w->names);
	free(w->off);
	free(w);
}

/* ---- reader: arena ---- */

struct blk {
	struct blk *next;
	size_t cap, used;
	alignas(max_align_t) unsigned char data[];
};

/* The tree's owner; the root node sits inside so xml_free(root) finds it. */
struct xml_doc {
	struct blk *blocks; /* the head is the one being filled */
	size_t next_cap;
	struct xml_node root;
};

#define ARENA_MIN 1024
#define ARENA_MAX (64 << 10)

static void *arena_alloc(struct xml_doc *d, size_t n)
{
	struct blk *b = d->blocks;
	n = (n + 7) & ~(size_t)7;
	if (!b || b->cap - b->used < n) {
		if (n > ARENA_MAX / 4 && b) {
			/* a big piece gets its own block behind the head, which goes on filling */
			struct blk *own = xmalloc(sizeof(*own) + n);
			own->cap = own->used = n;
			own->next = b->next;
			b->next = own;
			return own->data;
		}
		size_t cap = MAX(MAX(d->next_cap, (size_t)ARENA_MIN), n);
		d->next_cap = MIN(2 * cap, (size_t)ARENA_MAX);
		b = xmalloc(sizeof(*b) + cap);
		b->cap = cap;
		b->used = 0;
		b->next = d->blocks;
		d->blocks = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

static const char *arena_str(struct xml_doc *d, const char *s, size_t n)
{
	char *p;
	if (!n)
		return "";
	p = arena_alloc(d, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void xml_free(struct xml_node *root)
{
	struct xml_doc *d;
	struct blk *b, *next;
	if (!root)
		return;
	d = (struct xml_doc *)((char *)root - offsetof(struct xml_doc, root));
	for (b = d->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	free(d);
}

/* ---- reader: expat handlers ---- */

/* Separates namespace URI and local name in expat's names; no XML string holds it. */
#define NS_SEP '\x01'
#define FEED   (64 << 10) /* bytes handed to expat per call */

struct frame {
	struct xml_node *node;
	struct xml_node *last; /* last child so far */
	struct xml_attr *last_attr;
	size_t text_off; /* where this element's pending text starts in text */
};

struct parse {
	XML_Parser xp;
	struct xml_limits lim;
	struct xml_doc *doc;
	struct frame *st;
	size_t depth, st_cap;
	buf text; /* pending text of the open elements */
	size_t nodes, text_bytes;
	const char *last_ns; /* reused while consecutive elements share a namespace */
	bool failed;
	char *msg;
	size_t msglen;
};

static void fail(struct parse *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parse *ps, const char *fmt, ...)
{
	va_list ap;
	if (ps->failed)
		return;
	ps->failed = true;
	if (ps->msglen) {
		va_start(ap, fmt);
		vsnprintf(ps->msg, ps->msglen, fmt, ap);
		va_end(ap);
	}
	XML_StopParser(ps->xp, XML_FALSE);
}

/* Counts one more node and n more text bytes against the limits. */
static bool charge(struct parse *ps, size_t nodes, size_t n)
{
	if (ps->nodes + nodes > ps->lim.max_nodes) {
		fail(ps, "more than %zu elements and attributes", ps->lim.max_nodes);
		return false;
	}
	if (n > ps->lim.max_text - ps->text_bytes) {
		fail(ps, "more than %zu bytes of text", ps->lim.max_text);
		return false;
	}
	ps->nodes += nodes;
	ps->text_bytes += n;
	return true;
}

/* The local part of an expat name ("uri" NS_SEP "local" or "local"). */
static const char *local_name(const char *name)
{
	const char *s = strchr(name, NS_SEP);
	return s ? s + 1 : name;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
	struct parse *ps = ud;
	struct xml_doc *d = ps->doc;
	struct xml_node *n;
	struct frame *f;
	const char *local = local_name(name);

	if (ps->failed)
		return;
	if (ps->depth >= ps->lim.max_depth) {
		fail(ps, "elements nested deeper than %zu", ps->lim.max_depth);
		return;
	}
	if (!charge(ps, 1, 0))
		return;
	if (ps->depth == 0) {
		n = &d->root;
	} else {
		n = arena_alloc(d, sizeof(*n));
		memset(n, 0, sizeof(*n));
	}
	n->name = arena_str(d, local, strlen(local));
	n->text = "";
	if (local == name) {
		n->ns = "";
	} else {
		size_t ul = (size_t)(local - 1 - name);
		if (!ps->last_ns || strlen(ps->last_ns) != ul || memcmp(ps->last_ns, name, ul))
			ps->last_ns = arena_str(d, name, ul);
		n->ns = ps->last_ns;
	}

	if (ps->depth == ps->st_cap) {
		ps->st_cap = ps->st_cap ? 2 * ps->st_cap : 8;
		ps->st = xrealloc(ps->st, ps->st_cap * sizeof(*ps->st));
	}
	if (ps->depth > 0) {
		f = &ps->st[ps->depth - 1];
		if (f->last)
			f->last->next = n;
		else
			f->node->first = n;
		f->last = n;
	}
	f = &ps->st[ps->depth++];
	f->node = n;
	f->last = NULL;
	f->last_attr = NULL;
	f->text_off = ps->text.len;

	for (; atts[0]; atts += 2) {
		size_t vl = strlen(atts[1]);
		struct xml_attr *a;
		if (!charge(ps, 1, vl))
			return;
		a = arena_alloc(d, sizeof(*a));
		local = local_name(atts[0]);
		a->name = arena_str(d, local, strlen(local));
		a->value = arena_str(d, atts[1], vl);
		a->value_len = vl;
		a->next = NULL;
		if (f->last_attr)
			f->last_attr->next = a;
		else
			n->attrs = a;
		f->last_attr = a;
	}
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct parse *ps = ud;
	struct frame *f;

	if (ps->failed || !ps->depth)
		return;
	f = &ps->st[--ps->depth];
	f->node->text_len = ps->text.len - f->text_off;
	/* a document with no text at all (<a/>) never allocated the buffer */
	f->node->text = arena_str(ps->doc, ps->text.data ? ps->text.data + f->text_off : "",
				  f->node->text_len);
	ps->text.len = f->text_off;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct parse *ps = ud;
	if (ps->failed || !ps->depth || len <= 0 || !charge(ps, 0, (size_t)len))
		return;
	buf_append(&ps->text, s, (size_t)len);
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			       const XML_Char *pubid, int has_internal_subset)
{
	fail(ud, "DOCTYPE not allowed");
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
			      int value_len, const XML_Char *base, const XML_Char *sysid,
			      const XML_Char *pubid, const XML_Char *notation)
{
	fail(ud, "entity declarations not allowed");
}

static const XML_Memory_Handling_Suite xml_mem = {xmalloc, xrealloc, free};

enum s3_err xml_parse(const char *data, size_t len, const struct xml_limits *lim,
		      struct xml_node **root, char *msg, size_t msglen)
{
	struct parse ps = {.msg = msg, .msglen = msglen};
	size_t off = 0;
	const char sep[2] = {NS_SEP, '\0'};

	*root = NULL;
	if (msglen)
		msg[0] = '\0';
	if (lim)
		ps.lim = *lim;
	if (!ps.lim.max_len)
		ps.lim.max_len = XML_MAX_LEN;
	if (!ps.lim.max_depth)
		ps.lim.max_depth = XML_MAX_DEPTH;
	if (!ps.lim.max_nodes)
		ps.lim.max_nodes = XML_MAX_NODES;
	if (!ps.lim.max_text)
		ps.lim.max_text = XML_MAX_TEXT;
	if (len > ps.lim.max_len) {
		if (msglen)
			snprintf(msg, msglen, "body larger than %zu bytes", ps.lim.max_len);
		return S3_MALFORMED_XML;
	}

	ps.doc = xcalloc(1, sizeof(*ps.doc));
	ps.xp = XML_ParserCreate_MM(NULL, &xml_mem, sep);
	if (!ps.xp)
		abort(); /* only on allocation failure, which xmalloc already aborts on */
	XML_SetUserData(ps.xp, &ps);
	XML_SetElementHandler(ps.xp, on_start, on_end);
	XML_SetCharacterDataHandler(ps.xp, on_text);
	XML_SetStartDoctypeDeclHandler(ps.xp, on_doctype);
	XML_SetEntityDeclHandler(ps.xp, on_entity);
	XML_SetParamEntityParsing(ps.xp, XML_PARAM_ENTITY_PARSING_NEVER);

	do {
		size_t n = MIN(len - off, (size_t)FEED);
		if (XML_Parse(ps.xp, data + off, (int)n, off + n == len) != XML_STATUS_OK) {
			if (!ps.failed && msglen)
				snprintf(msg, msglen, "line %lu column %lu: %s",
					 (unsigned long)XML_GetCurrentLineNumber(ps.xp),
					 (unsigned long)XML_GetCurrentColumnNumber(ps.xp) + 1,
					 XML_ErrorString(XML_GetErrorCode(ps.xp)));
			ps.failed = true;
			break;
		}
		off += n;
	} while (off < len);

	XML_ParserFree(ps.xp);
	buf_free(&ps.text);
	free(ps.st);
	if (ps.failed || !ps.doc->root.name) {
		if (!ps.failed && msglen)
			snprintf(msg, msglen, "no root element");
		xml_free(&ps.doc->root);
		return S3_MALFORMED_XML;
	}
	*root = &ps.doc->root;
	return S3_OK;
}

/* ---- reader: lookups ---- */

static bool named(const struct xml_node *n, const char *name)
{
	return !name || !strcmp(n->name, name);
}

const struct xml_node *xml_child(const struct xml_node *n, const char *name)
{
	const struct xml_node *c;
	for (c = n ? n->first : NULL; c && !named(c, name); c = c->next)
		;
	return c;
}

const struct xml_node *xml_next(const struct xml_node *c, const char *name)
{
	for (c = c ? c->next : NULL; c && !named(c, name); c = c->next)
		;
	return c;
}

const char *xml_child_text(const struct xml_node *n, const char *name)
{
	const struct xml_node *c = xml_child(n, name);
	return c ? c->text : NULL;
}

size_t xml_count(const struct xml_node *n, const char *name)
{
	size_t k = 0;
	for (const struct xml_node *c = xml_child(n, name); c; c = xml_next(c, name))
		k++;
	return k;
}

const char *xml_attr(const struct xml_node *n, const char *name)
{
	for (const struct xml_attr *a = n ? n->attrs : NULL; a; a = a->next)
		if (!strcmp(a->name, name))
			return a->value;
	return NULL;
}
