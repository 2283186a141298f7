/*
 * XML for the S3 gateway (s3/xml.h): the writer's exact output and escaping of
 * every special class, round trips through the reader (expat), namespaces,
 * realistic S3 request bodies, malformed documents, DOCTYPE and entity attacks,
 * and every bound.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/xml.h"
#include "tap.h"
#include "util.h"

#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define FFFD "\xef\xbf\xbd"

/* What xml_escape makes of s[0..len), as a C string the caller frees. */
static char *escaped(const char *s, size_t len)
{
	buf b = BUF_INIT;
	xml_escape(&b, s, len);
	return buf_steal(&b, NULL);
}

static void check_escape(const char *in, size_t len, const char *want, const char *what)
{
	char *got = escaped(in, len);
	is_str(got, want, what);
	free(got);
}

static void test_escape(void)
{
	check_escape("a&b<c>d\"e'f", 11, "a&amp;b&lt;c&gt;d&quot;e&apos;f", "the five specials");
	check_escape("\t\n", 2, "\t\n", "tab and LF are copied");
	check_escape("a\rb\r\n", 5, "a&#xD;b&#xD;\n", "CR becomes &#xD;");
	check_escape("\x01\x08\x0b\x0c\x0e\x1f", 6, "&#x1;&#x8;&#xB;&#xC;&#xE;&#x1F;",
		     "C0 controls become character references");
	check_escape("a\0b", 3, "a" FFFD "b", "NUL becomes U+FFFD");
	check_escape("\x7f", 1, "\x7f", "DEL is copied (XML 1.0 allows it)");
	check_escape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
		     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "valid UTF-8 is copied");
	check_escape("\xc2\x85\xc2\x9f", 4, "\xc2\x85\xc2\x9f", "C1 controls are copied");
	check_escape("\xef\xbf\xbd", 3, FFFD, "U+FFFD itself is copied");
	check_escape("a\xffz", 3, "a" FFFD "z", "a stray byte becomes U+FFFD");
	check_escape("\xe2\x82", 2, FFFD FFFD, "a truncated sequence: one U+FFFD per byte");
	check_escape("\xe2\x82x", 3, FFFD FFFD "x", "a cut sequence before ASCII");
	check_escape("\xc0\xaf", 2, FFFD FFFD, "an overlong '/' is replaced");
	check_escape("\xed\xa0\x80", 3, FFFD FFFD FFFD, "a surrogate is replaced");
	check_escape("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD, "past U+10FFFF is replaced");
	check_escape("\xef\xbf\xbe|\xef\xbf\xbf", 7, FFFD "|" FFFD,
		     "U+FFFE and U+FFFF become one U+FFFD each");
	check_escape("", 0, "", "empty text");
	check_escape("<\xff&", 3, "&lt;" FFFD "&amp;", "specials next to a bad byte");
}

static void test_writer_shape(void)
{
	buf out = BUF_INIT;
	xml_w *w = xml_w_new(&out);

	is_str(out.data, DECL, "the declaration comes first");
	xml_open_s3(w, "ListBucketResult");
	xml_elem(w, "Name", "bucket");
	xml_elem(w, "Prefix", "");
	xml_elem(w, "Marker", NULL);
	xml_elem_u64(w, "MaxKeys", 1000);
	xml_elem_bool(w, "IsTruncated", false);
	xml_open(w, "Contents");
	is_int(xml_w_depth(w), 2, "two elements open");
	xml_elem(w, "Key", "a&b.txt");
	xml_elem_fmt(w, "ETag", "\"%s\"", "9b2cf535f27731c974343645a3985328");
	xml_elem_u64(w, "Size", UINT64_MAX);
	xml_elem_bool(w, "Flag", true);
	xml_elem_i64(w, "Neg", INT64_MIN);
	xml_close(w);
	is_int(xml_w_depth(w), 1, "one element open");
	xml_w_free(w);
	is_str(out.data,
	       DECL "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		    "<Name>bucket</Name><Prefix></Prefix><Marker></Marker><MaxKeys>1000</MaxKeys>"
		    "<IsTruncated>false</IsTruncated><Contents><Key>a&amp;b.txt</Key>"
		    "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>"
		    "<Size>18446744073709551615</Size><Flag>true</Flag>"
		    "<Neg>-9223372036854775808</Neg></Contents></ListBucketResult>",
	       "a listing, closed by xml_w_free");
	buf_free(&out);

	/* attributes, as an ACL's Grantee needs them */
	w = xml_w_new(&out);
	static const char *const at[] = {"xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance",
					 "xsi:type", "Canonical\"User<", NULL};
	xml_open_attrs(w, "Grantee", at);
	xml_elem(w, "ID", "abc");
	xml_close(w);
	xml_close(w); /* nothing open: does nothing */
	is_int(xml_w_depth(w), 0, "nothing open after an extra close");
	xml_w_free(w);
	is_str(out.data,
	       DECL "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
		    "xsi:type=\"Canonical&quot;User&lt;\"><ID>abc</ID></Grantee>",
	       "attributes with escaped values");
	buf_free(&out);

	/* names are copied; the caller may drain out between elements */
	w = xml_w_new(&out);
	char name[16];
	strcpy(name, "Outer");
	xml_open(w, name);
	strcpy(name, "Inner");
	xml_open(w, name);
	strcpy(name, "Clobbered");
	buf_reset(&out);
	xml_close(w);
	is_str(out.data, "</Inner>", "close writes the copied name after out was drained");
	buf_reset(&out);
	xml_open(w, "A");
	xml_open(w, "B");
	xml_open(w, "C");
	xml_close_to(w, 2); /* Outer and A stay open */
	is_str(out.data, "<A><B><C></C></B>", "close_to stops at the given depth");
	xml_w_free(w);
	is_str(out.data, "<A><B><C></C></B></A></Outer>", "free closes the rest, innermost first");
	buf_free(&out);
	xml_w_free(NULL);
	ok(1, "xml_w_free(NULL) does nothing");

	/* a long formatted text takes the heap path; it is escaped after formatting */
	w = xml_w_new(&out);
	buf_reset(&out);
	char big[300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[10] = '<';
	xml_elem_fmt(w, "M", "%s|%d", big, 42);
	ok(out.len == 3 + 298 + 4 + 3 + 4 && strstr(out.data, "xx&lt;xx") &&
		   !strcmp(out.data + out.len - 7, "|42</M>"),
	   "a 300-byte formatted text is complete and escaped");
	xml_w_free(w);
	buf_free(&out);

	/* deep nesting grows the stack */
	w = xml_w_new(&out);
	for (int i = 0; i < 100; i++)
		xml_open(w, i % 2 ? "Odd" : "Even");
	is_int(xml_w_depth(w), 100, "100 open elements");
	xml_w_free(w);
	ok(out.len > 13 && !strcmp(out.data + out.len - 13, "</Odd></Even>"),
	   "closed down to the first");
	buf_free(&out);
}

/* Writes <T>s</T> and <T a="s"/> and parses them back; both must give want. */
static void round_trip(const char *s, size_t len, const char *want, const char *what)
{
	buf out = BUF_INIT;
	xml_w *w = xml_w_new(&out);
	struct xml_node *root;
	char msg[128];
	char *sz = xstrndup(s, len);
	const char *at[] = {"a", sz, NULL};
	xml_open(w, "R");
	xml_elem_len(w, "T", s, len);
	xml_open_attrs(w, "U", at);
	xml_w_free(w);
	is_int(xml_parse(out.data, out.len, NULL, &root, msg, sizeof(msg)), S3_OK, what);
	if (root) {
		const struct xml_node *t = xml_child(root, "T");
		ok(t && t->text_len == strlen(want) && !strcmp(t->text, want),
		   "%s: text reads back", what);
		if (!memchr(s, '\0', len)) /* a value is a C string */
			is_str(xml_attr(xml_child(root, "U"), "a"), want,
			       "attribute value reads back");
	}
	xml_free(root);
	free(sz);
	buf_free(&out);
}

static void test_round_trip(void)
{
	char all[128];
	size_t n = 0;
	for (int c = 0x20; c < 0x7f; c++)
		all[n++] = (char)c;
	all[n] = '\0';
	round_trip(all, n, all, "all printable ASCII");
	round_trip("\t line\nbreak \r end \r\n", 21, "\t line\nbreak \r end \r\n",
		   "tab, LF and CR (even CR LF) survive as written");
	round_trip("  padded  ", 10, "  padded  ", "no trimming");
	round_trip("\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80", 11,
		   "\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80", "multibyte UTF-8");
	round_trip("a\xff\0b\xef\xbf\xbe", 7, "a" FFFD FFFD "b" FFFD,
		   "bad bytes, NUL and U+FFFE read back as U+FFFD");
	round_trip("]]>&amp;", 8, "]]>&amp;", "]]> and an entity-looking text");

	/* a reader normalises raw whitespace in values: the writer writes references */
	buf out = BUF_INIT;
	struct xml_node *root;
	xml_w *w = xml_w_new(&out);
	static const char *const at[] = {"v", "a\tb\nc\rd", NULL};
	xml_open_attrs(w, "R", at);
	xml_w_free(w);
	ok(strstr(out.data, "v=\"a&#x9;b&#xA;c&#xD;d\"") != NULL, "TAB, LF, CR in a value");
	is_int(xml_parse(out.data, out.len, NULL, &root, NULL, 0), S3_OK, "attribute parses");
	is_str(xml_attr(root, "v"), "a\tb\nc\rd", "and read back as written");
	xml_free(root);
	buf_free(&out);

	/* S3 writes control characters as references; a strict reader refuses them */
	w = xml_w_new(&out);
	xml_elem(w, "Key", "a\x01z");
	xml_w_free(w);
	ok(strstr(out.data, "<Key>a&#x1;z</Key>") != NULL, "the writer emits &#x1;");
	is_int(xml_parse(out.data, out.len, NULL, &root, NULL, 0), S3_MALFORMED_XML,
	       "and the XML 1.0 reader refuses it (documented)");
	ok(root == NULL, "no tree on error");
	buf_free(&out);
}

/* Parses a NUL-terminated document that must be accepted. */
static struct xml_node *parse_ok(const char *doc, const char *what)
{
	struct xml_node *root = NULL;
	char msg[128];
	enum s3_err e = xml_parse(doc, strlen(doc), NULL, &root, msg, sizeof(msg));
	if (!is_int(e, S3_OK, what))
		printf("# %s\n", msg);
	return root;
}

/* A document that must be refused, with msg holding want_msg (if not NULL). */
static void parse_bad(const char *doc, size_t len, const struct xml_limits *lim,
		      const char *want_msg, const char *what)
{
	struct xml_node *root = (struct xml_node *)1;
	char msg[128] = "unset";
	enum s3_err e = xml_parse(doc, len, lim, &root, msg, sizeof(msg));
	is_int(e, S3_MALFORMED_XML, what);
	ok(root == NULL && msg[0] && strcmp(msg, "unset"), "%s: no tree, a message (%s)", what,
	   msg);
	if (want_msg && !strstr(msg, want_msg))
		ok(0, "%s: message \"%s\" lacks \"%s\"", what, msg, want_msg);
}

static void test_namespaces(void)
{
	struct xml_node *r;

	r = parse_ok("<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
		     "</Delete>",
		     "default namespace");
	is_str(r->name, "Delete", "name without namespace");
	is_str(r->ns, XML_S3_NS, "namespace kept apart");
	is_str(xml_child_text(r, "Quiet"), "true", "child inherits the namespace");
	is_str(xml_child(r, "Quiet")->ns, XML_S3_NS, "child namespace");
	xml_free(r);

	r = parse_ok("<Delete><Quiet>true</Quiet></Delete>", "no namespace");
	is_str(r->name, "Delete", "plain name");
	is_str(r->ns, "", "empty namespace");
	is_str(xml_child_text(r, "Quiet"), "true", "same lookup works");
	xml_free(r);

	r = parse_ok("<s3:Delete xmlns:s3=\"" XML_S3_NS "\"><s3:Quiet>false</s3:Quiet>"
		     "<Other xmlns=\"urn:x\"/></s3:Delete>",
		     "prefixed names");
	is_str(r->name, "Delete", "prefix stripped");
	is_str(r->ns, XML_S3_NS, "prefix resolved");
	is_str(xml_child_text(r, "Quiet"), "false", "prefixed child found by local name");
	is_str(xml_child(r, "Other")->ns, "urn:x", "a nested default namespace");
	ok(r->attrs == NULL, "xmlns declarations are not attributes");
	xml_free(r);

	parse_bad("<s3:Delete/>", 12, NULL, "prefix", "an unbound prefix is refused");
	parse_bad("<a xmlns:p=\"urn:p\" p:x=\"1\" xmlns:q=\"urn:p\" q:x=\"2\"/>", 52, NULL, NULL,
		  "the same attribute twice through two prefixes");
}

static void test_complete_multipart(void)
{
	const char *doc =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
		"  <Part>\n"
		"    <PartNumber>1</PartNumber>\n"
		"    <ETag>&quot;a54357aff0632cce46d942af68356b38&quot;</ETag>\n"
		"  </Part>\n"
		"  <Part>\n"
		"    <ChecksumCRC32C>sOO8/Q==</ChecksumCRC32C>\n"
		"    <ETag>\"0c78aef83f66abc1fa1e8477f296d394\"</ETag>\n"
		"    <PartNumber>2</PartNumber>\n"
		"  </Part>\n"
		"  "
		"<Part><PartNumber>3</PartNumber><ETag>acbd18db4cc2f85cedef654fccc4a4d8</ETag></"
		"Part>\n"
		"</CompleteMultipartUpload>\n";
	struct xml_node *r = parse_ok(doc, "CompleteMultipartUpload");
	const char *etags[] = {"\"a54357aff0632cce46d942af68356b38\"",
			       "\"0c78aef83f66abc1fa1e8477f296d394\"",
			       "acbd18db4cc2f85cedef654fccc4a4d8"};
	size_t i = 0;
	bool good = true;

	is_str(r->name, "CompleteMultipartUpload", "root name");
	is_int(xml_count(r, "Part"), 3, "three parts");
	is_int(xml_count(r, NULL), 3, "three children in all");
	ok(r->text_len > 0 && strspn(r->text, " \n") == r->text_len,
	   "the root's own text is the indentation, untrimmed");
	xml_foreach(p, r, "Part")
	{
		uint64_t num;
		good &= parse_u64(xml_child_text(p, "PartNumber"), &num) && num == i + 1;
		good &= !strcmp(xml_child_text(p, "ETag"), etags[i]);
		i++;
	}
	ok(good && i == 3, "part numbers and ETags in document order, entities resolved");
	is_str(xml_child_text(xml_child(r, "Part")->next, "ChecksumCRC32C"),
	       "sOO8/Q==", "a checksum");
	ok(xml_child_text(xml_child(r, "Part"), "ChecksumCRC32C") == NULL,
	   "an absent child gives NULL");
	xml_free(r);
}

static void test_delete(void)
{
	const char *doc =
		"<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Object><Key>photos/2006/January/sample.jpg</Key></Object>"
		"<Object><Key>a &amp; b &lt;c&gt; &#xE9;&#233; \xe2\x82\xac</Key>"
		"<VersionId>UIORUnfndfiufdisojhr398493jfdkjFJjkndnqUifhnw89493jJFJ</VersionId>"
		"</Object>"
		"<Object><Key><![CDATA[<raw & cdata>]]></Key></Object>"
		"<Quiet>true</Quiet>"
		"</Delete>";
	struct xml_node *r = parse_ok(doc, "Delete");
	const struct xml_node *o;

	is_int(xml_count(r, "Object"), 3, "three objects");
	is_str(xml_child_text(r, "Quiet"), "true", "Quiet");
	o = xml_child(r, "Object");
	is_str(xml_child_text(o, "Key"), "photos/2006/January/sample.jpg", "first key");
	ok(xml_child_text(o, "VersionId") == NULL, "first has no version");
	o = xml_next(o, "Object");
	is_str(xml_child_text(o, "Key"), "a & b <c> \xc3\xa9\xc3\xa9 \xe2\x82\xac",
	       "entities and character references resolved to UTF-8");
	is_str(xml_child_text(o, "VersionId"),
	       "UIORUnfndfiufdisojhr398493jfdkjFJjkndnqUifhnw89493jJFJ", "version id");
	o = xml_next(o, "Object");
	is_str(xml_child_text(o, "Key"), "<raw & cdata>", "CDATA is text");
	ok(xml_next(o, "Object") == NULL, "no fourth object");
	ok(xml_next(o, NULL) && !strcmp(xml_next(o, NULL)->name, "Quiet"),
	   "next with any name reaches Quiet");
	xml_free(r);
}

static void test_tagging_versioning(void)
{
	struct xml_node *r;
	const struct xml_node *ts;
	const char *keys[] = {"Project", "Cost Center", ""}, *vals[] = {"Project One", "", "x"};
	size_t i = 0;
	bool good = true;

	r = parse_ok("<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>"
		     "<Tag><Key>Project</Key><Value>Project One</Value></Tag>"
		     "<Tag><Key>Cost Center</Key><Value></Value></Tag>"
		     "<Tag><Key/><Value>x</Value></Tag>"
		     "</TagSet></Tagging>",
		     "Tagging");
	ts = xml_child(r, "TagSet");
	is_int(xml_count(ts, "Tag"), 3, "three tags");
	xml_foreach(t, ts, "Tag")
	{
		good &= !strcmp(xml_child_text(t, "Key"), keys[i]) &&
			!strcmp(xml_child_text(t, "Value"), vals[i]);
		i++;
	}
	ok(good, "keys and values, empty ones as \"\"");
	ok(xml_child(xml_child(ts, "Tag"), "Key")->text_len == 7, "text_len");
	xml_free(r);

	r = parse_ok(
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n"
		"<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\r\n"
		"  <Status>Enabled</Status>\r\n"
		"  <MfaDelete>Disabled</MfaDelete>\r\n"
		"</VersioningConfiguration>",
		"VersioningConfiguration with CR LF");
	is_str(xml_child_text(r, "Status"), "Enabled", "Status");
	is_str(xml_child_text(r, "MfaDelete"), "Disabled", "MfaDelete");
	ok(!strchr(r->text, '\r') && strchr(r->text, '\n'), "CR LF read as LF");
	xml_free(r);

	r = parse_ok("<VersioningConfiguration><Status> Suspended\n</Status>"
		     "</VersioningConfiguration>",
		     "Status with spaces");
	is_str(xml_child_text(r, "Status"), " Suspended\n", "text exactly as sent");
	xml_free(r);
}

static void test_cors_lifecycle_acl(void)
{
	struct xml_node *r;
	const struct xml_node *rule, *n;

	r = parse_ok("<CORSConfiguration>"
		     "<CORSRule><ID>r1</ID>"
		     "<AllowedOrigin>http://www.example.com</AllowedOrigin>"
		     "<AllowedMethod>PUT</AllowedMethod><AllowedMethod>POST</AllowedMethod>"
		     "<AllowedMethod>DELETE</AllowedMethod>"
		     "<AllowedHeader>*</AllowedHeader>"
		     "<MaxAgeSeconds>3000</MaxAgeSeconds>"
		     "<ExposeHeader>x-amz-server-side-encryption</ExposeHeader>"
		     "<ExposeHeader>x-amz-request-id</ExposeHeader>"
		     "</CORSRule>"
		     "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
		     "</CORSRule>"
		     "</CORSConfiguration>",
		     "CORSConfiguration");
	rule = xml_child(r, "CORSRule");
	is_int(xml_count(r, "CORSRule"), 2, "two rules");
	is_int(xml_count(rule, "AllowedMethod"), 3, "three methods");
	n = xml_next(xml_child(rule, "AllowedMethod"), "AllowedMethod");
	is_str(n ? n->text : NULL, "POST", "second method");
	is_int(xml_count(rule, "ExposeHeader"), 2, "two exposed headers");
	is_str(xml_child_text(rule, "MaxAgeSeconds"), "3000", "max age");
	is_int(xml_count(xml_next(rule, "CORSRule"), "AllowedHeader"), 0, "none in the second");
	xml_free(r);

	r = parse_ok("<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		     "<Rule><ID>archive</ID>"
		     "<Filter><And><Prefix>logs/</Prefix>"
		     "<Tag><Key>k1</Key><Value>v1</Value></Tag>"
		     "<Tag><Key>k2</Key><Value>v2</Value></Tag></And></Filter>"
		     "<Status>Enabled</Status>"
		     "<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>"
		     "<Expiration><Days>365</Days></Expiration>"
		     "<NoncurrentVersionExpiration><NoncurrentDays>7</NoncurrentDays>"
		     "</NoncurrentVersionExpiration>"
		     "</Rule>"
		     "<Rule><ID>mpu</ID><Filter><Prefix></Prefix></Filter><Status>Disabled</Status>"
		     "<AbortIncompleteMultipartUpload><DaysAfterInitiation>3</DaysAfterInitiation>"
		     "</AbortIncompleteMultipartUpload></Rule>"
		     "</LifecycleConfiguration>",
		     "LifecycleConfiguration");
	rule = xml_child(r, "Rule");
	n = xml_child(xml_child(rule, "Filter"), "And");
	is_str(xml_child_text(n, "Prefix"), "logs/", "And/Prefix");
	is_int(xml_count(n, "Tag"), 2, "And/Tag twice");
	is_str(xml_child_text(xml_child(rule, "Transition"), "StorageClass"), "GLACIER",
	       "transition class");
	is_str(xml_child_text(xml_child(rule, "Expiration"), "Days"), "365", "expiration days");
	rule = xml_next(rule, "Rule");
	is_str(xml_child_text(xml_child(rule, "Filter"), "Prefix"), "", "an empty prefix is \"\"");
	is_str(xml_child_text(xml_child(rule, "AbortIncompleteMultipartUpload"),
			      "DaysAfterInitiation"),
	       "3", "abort days");
	xml_free(r);

	r = parse_ok("<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		     "<Owner><ID>owner-id</ID></Owner><AccessControlList><Grant>"
		     "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
		     "xsi:type=\"CanonicalUser\"><ID>user-id</ID></Grantee>"
		     "<Permission>FULL_CONTROL</Permission></Grant></AccessControlList>"
		     "</AccessControlPolicy>",
		     "AccessControlPolicy");
	n = xml_child(xml_child(xml_child(r, "AccessControlList"), "Grant"), "Grantee");
	is_str(xml_attr(n, "type"), "CanonicalUser", "xsi:type by local name");
	ok(n && n->attrs && !n->attrs->next && n->attrs->value_len == 13,
	   "one attribute, xmlns:xsi excluded");
	ok(xml_attr(n, "xsi") == NULL && xml_attr(n, "nope") == NULL, "absent attributes");
	xml_free(r);
}

static void test_text_semantics(void)
{
	struct xml_node *r;
	r = parse_ok("<a>one<b>two</b>three<c/>four</a>", "mixed content");
	is_str(r->text, "onethreefour", "an element's own text is its pieces concatenated");
	is_str(xml_child_text(r, "b"), "two", "the child's text is its own");
	is_str(xml_child_text(r, "c"), "", "an empty element has \"\"");
	ok(xml_child(r, "c")->text_len == 0 && xml_child(r, "c")->first == NULL,
	   "no text, no child");
	xml_free(r);

	r = parse_ok("<a>&#x20AC;&#8364;&lt;&gt;&amp;&quot;&apos;<![CDATA[&lt;]]></a>",
		     "references");
	is_str(r->text, "\xe2\x82\xac\xe2\x82\xac<>&\"'&lt;", "references resolved, CDATA kept");
	is_int(r->text_len, 15, "length in bytes");
	xml_free(r);

	r = parse_ok("<!-- c --><?pi data?><a><!-- inside -->x<?other?>y</a><!-- after -->\n",
		     "comments and processing instructions");
	is_str(r->text, "xy", "comments and PIs are skipped");
	xml_free(r);

	/* the document's declared encoding is honoured, the tree is UTF-8 */
	static const char latin1[] =
		"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>caf\xe9</a>";
	r = parse_ok(latin1, "ISO-8859-1 document");
	is_str(r ? r->text : NULL, "caf\xc3\xa9", "converted to UTF-8");
	xml_free(r);
	static const char utf16[] = "\xff\xfe<\0a\0>\0\xac\x20<\0/\0a\0>\0";
	is_int(xml_parse(utf16, sizeof(utf16) - 1, NULL, &r, NULL, 0), S3_OK,
	       "UTF-16LE with a BOM");
	is_str(r ? r->text : NULL, "\xe2\x82\xac", "converted to UTF-8");
	xml_free(r);
}

static void test_malformed(void)
{
	struct {
		const char *doc, *what;
	} bad[] = {
		{"", "an empty body"},
		{"   \n", "only spaces"},
		{"not xml", "plain text"},
		{"<a>", "unclosed"},
		{"<a><b></a></b>", "mismatched tags"},
		{"<a></b>", "a wrong end tag"},
		{"<a/><b/>", "two roots"},
		{"<a/>junk", "garbage after the root"},
		{"<a/><", "a stray < after the root"},
		{"<a>\xff</a>", "invalid UTF-8"},
		{"<a>\xc0\xaf</a>", "an overlong sequence"},
		{"<a>\xed\xa0\x80</a>", "a UTF-8 surrogate"},
		{"<a>&undefined;</a>", "an undefined entity"},
		{"<a>&#1;</a>", "a reference to a control character"},
		{"<a>&#0;</a>", "a reference to NUL"},
		{"<a>&#xD800;</a>", "a reference to a surrogate"},
		{"<a>a & b</a>", "a bare ampersand"},
		{"<a>x < y</a>", "a bare <"},
		{"<a b='1' b='2'/>", "a repeated attribute"},
		{"<a b=1/>", "an unquoted attribute"},
		{"<1a/>", "a bad name"},
		{"<a/><?xml version=\"1.0\"?>", "a declaration after the root"},
		{" <?xml version=\"1.0\"?><a/>", "a declaration not at the start"},
		{"<?xml version=\"1.0\" encoding=\"EBCDIC-XYZ\"?><a/>", "an unknown encoding"},
		{"<a>\x01</a>", "a raw control character"},
		{"<a><![CDATA[x]]</a>", "an unterminated CDATA section"},
		{"<a><!-- x</a>", "an unterminated comment"},
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		parse_bad(bad[i].doc, strlen(bad[i].doc), NULL, NULL, bad[i].what);
	parse_bad("<a>\0</a>", 8, NULL, NULL, "a NUL byte");
	parse_bad("<a/>\0", 5, NULL, NULL, "a NUL after the root");

	struct xml_node *r = (struct xml_node *)1;
	is_int(xml_parse("<a>", 3, NULL, &r, NULL, 0), S3_MALFORMED_XML, "no message buffer");
	ok(r == NULL, "root cleared");
	char tiny[8];
	is_int(xml_parse("<a>", 3, NULL, &r, tiny, sizeof(tiny)), S3_MALFORMED_XML, "tiny buffer");
	ok(strlen(tiny) == 7, "the message is cut to the buffer");
	xml_free(NULL);
	ok(1, "xml_free(NULL) does nothing");
}

static void test_doctype(void)
{
	const char *xxe = "<?xml version=\"1.0\"?>\n"
			  "<!DOCTYPE Delete [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>\n"
			  "<Delete><Object><Key>&xxe;</Key></Object></Delete>";
	const char *laughs =
		"<?xml version=\"1.0\"?>\n"
		"<!DOCTYPE lolz [\n"
		" <!ENTITY lol \"lol\">\n"
		" <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
		" <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
		" <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
		"]>\n<lolz>&lol3;</lolz>";
	const char *ext = "<!DOCTYPE Tagging SYSTEM \"http://attacker.example/evil.dtd\">"
			  "<Tagging/>";
	const char *param = "<!DOCTYPE a [<!ENTITY % p SYSTEM \"http://attacker.example/p\"> %p;]>"
			    "<a/>";
	const char *plain = "<!DOCTYPE a><a/>";
	const char *internal = "<!DOCTYPE a [<!ELEMENT a (#PCDATA)>]><a>x</a>";
	const char *attdefault = "<!DOCTYPE a [<!ATTLIST a b CDATA \"&#38;\">]><a/>";

	parse_bad(xxe, strlen(xxe), NULL, "DOCTYPE", "an external entity (XXE)");
	parse_bad(laughs, strlen(laughs), NULL, "DOCTYPE", "entity expansion (billion laughs)");
	parse_bad(ext, strlen(ext), NULL, "DOCTYPE", "an external DTD");
	parse_bad(param, strlen(param), NULL, "DOCTYPE", "a parameter entity");
	parse_bad(plain, strlen(plain), NULL, "DOCTYPE", "a bare DOCTYPE");
	parse_bad(internal, strlen(internal), NULL, "DOCTYPE", "an internal subset");
	parse_bad(attdefault, strlen(attdefault), NULL, "DOCTYPE", "an attribute default");
	parse_bad("<a/><!DOCTYPE a>", 16, NULL, NULL, "a DOCTYPE after the root");
	parse_bad("<a><!ENTITY x \"y\"></a>", 22, NULL, NULL, "an entity declaration in content");
}

/* "<a><a>...</a></a>", depth levels deep. */
static char *nested(size_t depth)
{
	buf b = BUF_INIT;
	for (size_t i = 0; i < depth; i++)
		buf_append(&b, "<a>", 3);
	for (size_t i = 0; i < depth; i++)
		buf_append(&b, "</a>", 4);
	return buf_steal(&b, NULL);
}

static void test_bounds(void)
{
	struct xml_node *r;
	struct xml_limits lim = {0};
	char *d;

	d = nested(XML_MAX_DEPTH);
	is_int(xml_parse(d, strlen(d), NULL, &r, NULL, 0), S3_OK, "default depth reached");
	const struct xml_node *n = r;
	size_t k = 0;
	for (; n; n = n->first)
		k++;
	is_int(k, XML_MAX_DEPTH, "every level is in the tree");
	xml_free(r);
	free(d);
	d = nested(XML_MAX_DEPTH + 1);
	parse_bad(d, strlen(d), NULL, "deeper than 32", "one level deeper");
	free(d);
	d = nested(100000);
	parse_bad(d, strlen(d), NULL, "deeper", "100000 levels");
	free(d);
	lim.max_depth = 2;
	parse_bad("<a><b><c/></b></a>", 18, &lim, "deeper than 2", "a caller's depth");

	lim = (struct xml_limits){.max_nodes = 3};
	is_int(xml_parse("<a><b/><c/></a>", 15, &lim, &r, NULL, 0), S3_OK, "exactly 3 nodes");
	xml_free(r);
	parse_bad("<a><b/><c/><d/></a>", 19, &lim, "more than 3", "a fourth element");
	parse_bad("<a x='1'><b/><c/></a>", 21, &lim, "more than 3", "an attribute counts");

	lim = (struct xml_limits){.max_text = 6};
	is_int(xml_parse("<a>abc<b>def</b></a>", 20, &lim, &r, NULL, 0), S3_OK,
	       "exactly 6 bytes of text");
	xml_free(r);
	parse_bad("<a>abc<b>defg</b></a>", 21, &lim, "bytes of text", "a seventh byte");
	parse_bad("<a x='abcd'>abc</a>", 19, &lim, "bytes of text", "attribute values count");
	parse_bad("<a>&#x20AC;&#x20AC;&#x20AC;</a>", 31, &lim, "bytes of text",
		  "counted in UTF-8 bytes after references");

	lim = (struct xml_limits){.max_len = 10};
	is_int(xml_parse("<a>1234</a>", 11 - 1, &lim, &r, NULL, 0), S3_MALFORMED_XML,
	       "(a cut document)");
	parse_bad("<a>12345</a>", 12, &lim, "larger than 10", "a body over max_len");
	is_int(xml_parse("<a>123</a>", 10, &lim, &r, NULL, 0), S3_OK, "a body of max_len");
	xml_free(r);

	/* the largest real body: 10000 parts, over several feeds, text across feed edges */
	buf b = BUF_INIT;
	buf_append_str(&b, "<CompleteMultipartUpload>");
	for (int i = 1; i <= 10000; i++)
		buf_printf(&b,
			   "<Part><PartNumber>%d</PartNumber>"
			   "<ETag>&quot;%032x&quot;</ETag></Part>\n",
			   i, i);
	buf_append_str(&b, "</CompleteMultipartUpload>");
	is_int(xml_parse(b.data, b.len, NULL, &r, NULL, 0), S3_OK, "10000 parts");
	is_int(xml_count(r, "Part"), 10000, "all of them");
	bool good = true;
	int i = 1;
	char want[40];
	xml_foreach(p, r, "Part")
	{
		snprintf(want, sizeof(want), "\"%032x\"", i);
		good &= atoi(xml_child_text(p, "PartNumber")) == i &&
			!strcmp(xml_child_text(p, "ETag"), want);
		i++;
	}
	ok(good, "in order, every ETag intact");
	xml_free(r);

	buf_reset(&b);
	buf_append_str(&b, "<a>");
	for (int j = 0; j < 300000; j++)
		buf_append_byte(&b, (char)('a' + j % 26));
	buf_append_str(&b, "<b/></a>");
	is_int(xml_parse(b.data, b.len, NULL, &r, NULL, 0), S3_OK, "300 kB of text");
	ok(r->text_len == 300000 && !memcmp(r->text, b.data + 3, 300000) &&
		   strlen(r->text) == 300000,
	   "text joined across expat's pieces");
	xml_free(r);
	buf_free(&b);
}

static void test_helpers(void)
{
	struct xml_node *r = parse_ok("<r><x>1</x><y>2</y><x>3</x></r>", "helpers");
	ok(xml_child(NULL, "x") == NULL && xml_child_text(NULL, "x") == NULL &&
		   xml_count(NULL, NULL) == 0 && xml_next(NULL, NULL) == NULL &&
		   xml_attr(NULL, "a") == NULL,
	   "NULL nodes are empty");
	is_str(xml_child(r, NULL)->name, "x", "any first child");
	is_int(xml_count(r, "x"), 2, "two x");
	is_int(xml_count(r, "y"), 1, "one y");
	is_int(xml_count(r, "z"), 0, "no z");
	is_int(xml_count(r, NULL), 3, "three in all");
	is_str(xml_next(xml_child(r, "x"), "x")->text, "3", "the next x skips y");
	ok(xml_child(r, "X") == NULL, "names are case-sensitive");
	size_t k = 0;
	xml_foreach(c, r, NULL) k++;
	is_int(k, 3, "foreach over all");
	xml_free(r);
}

int main(void)
{
	test_escape();
	test_writer_shape();
	test_round_trip();
	test_namespaces();
	test_complete_multipart();
	test_delete();
	test_tagging_versioning();
	test_cors_lifecycle_acl();
	test_text_semantics();
	test_malformed();
	test_doctype();
	test_bounds();
	test_helpers();
	return done_testing();
}
