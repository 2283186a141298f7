/*
 * Fuzzes the S3 XML reader and writer (s3/xml.h). The reader takes the bytes
 * as a request body, with the default bounds and with tight ones: it must
 * never crash, and a tree it returns must respect the bounds and hold only
 * UTF-8 text without NUL. The writer writes the bytes as an element's text
 * and as an attribute value: its output must be UTF-8 without a raw special,
 * must decode (by an independent unescaper here) to the input after the
 * documented replacements, and must parse back to it through the reader
 * whenever those replacements leave no C0 control (which XML 1.0 refuses).
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/xml.h"
#include "utf8.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks n's subtree against lim; returns the number of elements and attributes. */
static size_t check_tree(const struct xml_node *n, size_t depth, const struct xml_limits *lim,
			 size_t *text)
{
	size_t count = 1;
	if (depth > lim->max_depth || !n->name[0] || !n->ns || !n->text ||
	    strlen(n->text) != n->text_len || !utf8_valid(n->text, n->text_len) ||
	    !utf8_valid(n->name, strlen(n->name)))
		abort();
	*text += n->text_len;
	for (const struct xml_attr *a = n->attrs; a; a = a->next) {
		if (!a->name[0] || strlen(a->value) != a->value_len ||
		    !utf8_valid(a->value, a->value_len) || xml_attr(n, a->name) == NULL)
			abort();
		*text += a->value_len;
		count++;
	}
	for (const struct xml_node *c = n->first; c; c = c->next)
		count += check_tree(c, depth + 1, lim, text);
	return count;
}

static void check_parse(const char *data, size_t size, const struct xml_limits *lim)
{
	struct xml_node *root;
	char msg[96];
	size_t text = 0, nodes;
	enum s3_err e = xml_parse(data, size, lim, &root, msg, sizeof(msg));

	if (e != S3_OK) {
		if (e != S3_MALFORMED_XML || root || !msg[0])
			abort();
		return;
	}
	nodes = check_tree(root, 1, lim, &text);
	if (nodes > lim->max_nodes || text > lim->max_text)
		abort();
	xml_free(root);
}

/* The input after the writer's replacements: NUL, U+FFFE, U+FFFF, bad bytes -> U+FFFD. */
static void expected(const char *s, size_t len, buf *out, bool *has_ctl)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t i = 0, l;
	*has_ctl = false;
	while (i < len) {
		l = utf8_decode(p + i, len - i, &cp);
		if (l == 0 || cp == 0 || cp == 0xfffe || cp == 0xffff) {
			buf_append(out, "\xef\xbf\xbd", 3);
			i += l ? l : 1;
			continue;
		}
		if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
			*has_ctl = true;
		buf_append(out, p + i, l);
		i += l;
	}
}

/* Decodes written text (s[0..len)) by the rules a reader applies; false if not well formed. */
static bool unescape(const char *s, size_t len, bool attr, buf *out)
{
	static const struct {
		const char *ent;
		char c;
	} ents[] = {
		{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		if (c == '<' || c == '>' || c == '"' || c == '\'' || c == '\r' || c == 0 ||
		    (c < 0x20 && (attr || (c != '\t' && c != '\n'))))
			return false; /* the writer must not leave these raw */
		if (c != '&') {
			buf_append_byte(out, (char)c);
			i++;
			continue;
		}
		bool found = false;
		for (size_t k = 0; k < ARRAY_LEN(ents) && !found; k++) {
			size_t el = strlen(ents[k].ent);
			if (len - i >= el && !memcmp(s + i, ents[k].ent, el)) {
				buf_append_byte(out, ents[k].c);
				i += el;
				found = true;
			}
		}
		if (found)
			continue;
		if (len - i < 5 || memcmp(s + i, "&#x", 3))
			return false;
		int v = 0;
		size_t j = i + 3;
		for (; j < len && j < i + 5 && hex_digit_value(s[j]) >= 0; j++)
			v = v * 16 + hex_digit_value(s[j]);
		if (j == i + 3 || j >= len || s[j] != ';' || v == 0 || v >= 0x20)
			return false;
		buf_append_byte(out, (char)v);
		i = j + 1;
	}
	return true;
}

static void check_write(const char *data, size_t size)
{
	buf out = BUF_INIT, want = BUF_INIT, got = BUF_INIT, want_attr = BUF_INIT;
	bool ctl, ctl_attr;
	size_t alen = strnlen(data, size);
	char *attr = xstrndup(data, alen);
	const char *at[] = {"a", attr, NULL};
	struct xml_node *root;
	xml_w *w = xml_w_new(&out);
	const char *t, *e;

	xml_open(w, "R");
	xml_elem_len(w, "T", data, size);
	xml_open_attrs(w, "U", at);
	xml_w_free(w);
	expected(data, size, &want, &ctl);
	expected(attr, alen, &want_attr, &ctl_attr);

	if (!utf8_valid(out.data, out.len))
		abort();
	t = strstr(out.data, "<T>");
	e = strstr(out.data, "</T>");
	if (!t || !e || !unescape(t + 3, (size_t)(e - t - 3), false, &got) || got.len != want.len ||
	    memcmp(got.data, want.data, want.len))
		abort();
	buf_reset(&got);
	t = strstr(out.data, "<U a=\"");
	e = strstr(out.data, "\"></U>");
	if (!t || !e || !unescape(t + 6, (size_t)(e - t - 6), true, &got) ||
	    got.len != want_attr.len || memcmp(got.data, want_attr.data, want_attr.len))
		abort();

	enum s3_err err = xml_parse(out.data, out.len, NULL, &root, NULL, 0);
	if (ctl || ctl_attr) {
		if (err != S3_MALFORMED_XML) /* a reference to a C0 control is not XML 1.0 */
			abort();
	} else {
		const struct xml_node *tn = xml_child(root, "T");
		const char *av = xml_attr(xml_child(root, "U"), "a");
		if (err != S3_OK || !tn || tn->text_len != want.len ||
		    memcmp(tn->text, want.data, want.len) || !av || strlen(av) != want_attr.len ||
		    memcmp(av, want_attr.data, want_attr.len))
			abort();
		xml_free(root);
	}
	free(attr);
	buf_free(&out);
	buf_free(&want);
	buf_free(&want_attr);
	buf_free(&got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct xml_limits defaults = {XML_MAX_LEN, XML_MAX_DEPTH, XML_MAX_NODES,
						   XML_MAX_TEXT};
	static const struct xml_limits tight = {1024, 4, 16, 64};
	check_parse((const char *)data, size, &defaults);
	check_parse((const char *)data, size, &tight);
	check_write((const char *)data, size);
	return 0;
}
