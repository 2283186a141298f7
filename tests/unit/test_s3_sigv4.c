/*
 * AWS Signature Version 4 (s3/sigv4.h): the published examples of the S3
 * API reference (single chunk, presigned URL, chunked upload, trailer),
 * vectors made by an independent signer (botocore) for awkward keys and
 * queries, other encodings of the same requests, round trips of our signer,
 * tampering, every malformed form, the clock, the payload modes and the
 * bounds.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include "s3/sigv4.h"
#include "tap.h"
#include "util.h"

/* The credentials of the AWS documentation examples. */
#define AK    "AKIAIOSFODNN7EXAMPLE"
#define SK    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T2013 1369353600 /* 20130524T000000Z */
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SCOPE AK "/20130524/us-east-1/s3/aws4_request"

/* A request under construction; strings are borrowed from literals or r->store. */
struct req {
	const char *method, *path, *query;
	struct sigv4_header h[64];
	size_t n;
	int64_t now;
	const char *region;
	char store[4][2048];
};

static void req_init(struct req *r, const char *method, const char *path, const char *query,
		     int64_t now)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->path = path;
	r->query = query;
	r->now = now;
}

static void req_add(struct req *r, const char *name, const char *value)
{
	r->h[r->n].name = name;
	r->h[r->n++].value = value;
}

/* Replaces the value of every header called name, or adds it. */
static void req_set(struct req *r, const char *name, const char *value)
{
	bool found = false;
	for (size_t i = 0; i < r->n; i++)
		if (!strcasecmp(r->h[i].name, name)) {
			r->h[i].value = value;
			found = true;
		}
	if (!found)
		req_add(r, name, value);
}

static void req_del(struct req *r, const char *name)
{
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (strcasecmp(r->h[i].name, name))
			r->h[k++] = r->h[i];
	r->n = k;
}

static struct sigv4_input req_in(const struct req *r)
{
	struct sigv4_input in = {r->method, r->path, r->query, r->h, r->n, r->now, r->region, NULL};
	return in;
}

/* Parses r, then verifies it with secret: the first error. */
static enum s3_err check(const struct req *r, const char *secret, struct sigv4_auth *a, char *msg)
{
	struct sigv4_input in = req_in(r);
	struct sigv4_auth local;
	char m[512];
	bool anon;
	enum s3_err e;
	if (!a)
		a = &local;
	if (!msg)
		msg = m;
	e = sigv4_parse(&in, a, &anon, msg, 512);
	if (e || anon)
		return e;
	return sigv4_verify(&in, a, secret, NULL);
}

/* Signs r with our signer (header auth) into r->store[0] and sets Authorization. */
static void sign_req(struct req *r, const char *signed_headers, const char *payload, const char *ak,
		     const char *sk, const char *amz_date)
{
	struct sigv4_signer s = {ak, sk, "us-east-1", NULL, amz_date};
	struct sigv4_input in;
	buf b = BUF_INIT;
	req_del(r, "authorization");
	in = req_in(r);
	ok(sigv4_sign_header(&in, signed_headers, payload, &s, &b), "signer accepts %s", r->path);
	snprintf(r->store[0], sizeof(r->store[0]), "%s", b.data ? b.data : "");
	req_add(r, "Authorization", r->store[0]);
	buf_free(&b);
}

static void sha256_of(const void *p, size_t n, uint8_t out[32]) { SHA256(p, n, out); }

/* ---- the examples of the S3 API reference ---- */

static void test_aws_get_object(void)
{
	struct req r;
	struct sigv4_auth a;
	struct sigv4_input in;
	buf b = BUF_INIT;
	req_init(&r, "GET", "/test.txt", NULL, T2013 + 60);
	req_add(&r, "Host", "examplebucket.s3.amazonaws.com");
	req_add(&r, "Range", "bytes=0-9");
	req_add(&r, "x-amz-content-sha256", EMPTY);
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "Authorization",
		"AWS4-HMAC-SHA256 Credential=" SCOPE ",SignedHeaders=host;range;"
		"x-amz-content-sha256;x-amz-date,Signature="
		"f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	is_int(check(&r, SK, &a, NULL), S3_OK, "AWS example GET Object verifies");
	is_str(a.access_key, AK, "access key");
	is_str(a.date, "20130524", "credential date");
	is_str(a.region, "us-east-1", "region");
	is_str(a.service, "s3", "service");
	is_str(a.amz_date, "20130524T000000Z", "request time");
	ok(a.time == T2013 && !a.presigned && a.expires == 0, "time, not presigned");
	is_int(a.payload, SIGV4_PAYLOAD_HASH, "payload mode: hash");
	is_str(a.payload_hash, EMPTY, "payload hash");
	ok(a.payload_sha256[0] == 0xe3 && a.payload_sha256[31] == 0x55, "payload hash decoded");
	is_int(a.nsigned, 4, "four signed headers");
	is_int(a.decoded_length, -1, "no decoded length");
	is_str(a.trailer, "", "no trailer");
	in = req_in(&r);
	sigv4_canonical_request(&in, &a, &b);
	is_str(b.data,
	       "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
	       "x-amz-content-sha256:" EMPTY "\nx-amz-date:20130524T000000Z\n\n"
	       "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY,
	       "canonical request as published");
	buf_reset(&b);
	sigv4_string_to_sign(&in, &a, &b);
	is_str(b.data,
	       "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
	       "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
	       "string to sign as published");
	buf_free(&b);
	is_int(check(&r, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ", NULL, NULL),
	       S3_SIGNATURE_MISMATCH, "a wrong secret does not verify");
	req_set(&r, "Range", "bytes=0-10");
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "a tampered Range fails");
}

static void test_aws_put_object(void)
{
	struct req r;
	req_init(&r, "PUT", "/test%24file.text", NULL, T2013 - 600);
	req_add(&r, "Host", "examplebucket.s3.amazonaws.com");
	req_add(&r, "Date", "Fri, 24 May 2013 00:00:00 GMT");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-storage-class", "REDUCED_REDUNDANCY");
	req_add(&r, "x-amz-content-sha256",
		"44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
	req_add(&r, "Authorization",
		"AWS4-HMAC-SHA256 Credential=" SCOPE ", SignedHeaders=date;host;"
		"x-amz-content-sha256;x-amz-date;x-amz-storage-class, Signature="
		"98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "AWS example PUT Object verifies");
	r.path = "/test$file.text"; /* '$' sent unencoded signs the same */
	is_int(check(&r, SK, NULL, NULL), S3_OK, "... with '$' unencoded in the path too");
	r.path = "/test%24file.txt";
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "a tampered path fails");
	r.path = "/test%24file.text";
	r.method = "POST";
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "a tampered method fails");
	r.method = "PUT";
	req_set(&r, "x-amz-storage-class", "STANDARD");
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "a tampered x-amz header fails");
}

static void test_aws_bucket_gets(void)
{
	struct req r;
	req_init(&r, "GET", "/", "lifecycle", T2013);
	req_add(&r, "Host", "examplebucket.s3.amazonaws.com");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-content-sha256", EMPTY);
	req_add(&r, "Authorization",
		"AWS4-HMAC-SHA256 Credential=" SCOPE ",SignedHeaders=host;x-amz-content-sha256;"
		"x-amz-date,Signature="
		"fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "AWS example GET Bucket Lifecycle verifies");
	r.query = "lifecycle=";
	is_int(check(&r, SK, NULL, NULL), S3_OK, "\"lifecycle=\" is the same canonical query");
	r.query = "acl";
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "a tampered query fails");

	req_init(&r, "GET", "/", "max-keys=2&prefix=J", T2013);
	req_add(&r, "Host", "examplebucket.s3.amazonaws.com");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-content-sha256", EMPTY);
	req_add(&r, "Authorization",
		"AWS4-HMAC-SHA256 Credential=" SCOPE ",SignedHeaders=host;x-amz-content-sha256;"
		"x-amz-date,Signature="
		"34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "AWS example GET Bucket (list) verifies");
	r.query = "prefix=J&max-keys=2";
	is_int(check(&r, SK, NULL, NULL), S3_OK, "... with the parameters in another order");
	r.query = "max-keys=2&prefix=%4A&";
	is_int(check(&r, SK, NULL, NULL), S3_OK, "... with %4A for J and a trailing '&'");
	r.query = "max-keys=3&prefix=J";
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "a tampered value fails");
	r.query = "max-keys=2&prefix=J&extra";
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "an added parameter fails");
}

#define PRESIGNED_2013                                                                         \
	"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2F" \
	"us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-" \
	"SignedHeaders=host&X-Amz-Signature="                                                  \
	"aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static void test_aws_presigned(void)
{
	struct req r;
	struct sigv4_auth a;
	char msg[512];
	req_init(&r, "GET", "/test.txt", PRESIGNED_2013, T2013 + 3600);
	req_add(&r, "Host", "examplebucket.s3.amazonaws.com");
	is_int(check(&r, SK, &a, NULL), S3_OK, "AWS example presigned GET verifies");
	ok(a.presigned && a.expires == 86400, "presigned, expires 86400");
	is_int(a.payload, SIGV4_PAYLOAD_UNSIGNED, "presigned URLs sign UNSIGNED-PAYLOAD");
	is_str(a.signature, "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
	       "claimed signature");
	r.now = T2013 + 86400;
	is_int(check(&r, SK, NULL, NULL), S3_OK, "still valid at the last second");
	r.now = T2013 + 86401;
	is_int(check(&r, SK, NULL, msg), S3_EXPIRED_REQUEST, "expired one second later");
	is_str(msg, "Request has expired", "expiry message");
	r.now = T2013 - 901;
	is_int(check(&r, SK, NULL, msg), S3_ACCESS_DENIED, "not valid 15 minutes before its date");
	r.now = T2013 - 900;
	is_int(check(&r, SK, NULL, NULL), S3_OK, "valid within the allowed skew");
	r.now = T2013;
	req_set(&r, "Host", "otherbucket.s3.amazonaws.com");
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "another host fails");
	req_set(&r, "Host", "examplebucket.s3.amazonaws.com");
	r.query = PRESIGNED_2013 "&x-id=GetObject";
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "an added parameter fails");
	r.query = "X-Amz-Expires=86400&" PRESIGNED_2013;
	is_int(check(&r, SK, NULL, msg), S3_AUTH_QUERY_ERROR,
	       "a repeated X-Amz-Expires is refused");
}

/* The chunked upload example: 65 KiB of 'a' in chunks of 64 KiB, 1 KiB and 0. */
static void test_aws_chunked(bool trailer)
{
	static const char *const seeds[2] = {
		"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
		"106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"};
	static const char *const chunks[2][3] = {
		{"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
		 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
		 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"},
		{"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
		 "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
		 "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"}};
	static const size_t sizes[3] = {65536, 1024, 0};
	const char *name = trailer ? "trailer example" : "chunked example";
	struct req r;
	struct sigv4_auth a;
	struct sigv4_chunk_ctx c, c2;
	uint8_t key[32], h[32];
	char *data = xmalloc(65536);
	memset(data, 'a', 65536);

	req_init(&r, "PUT", "/examplebucket/chunkObject.txt", NULL, T2013);
	req_add(&r, "Host", "s3.amazonaws.com");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-storage-class", "REDUCED_REDUNDANCY");
	req_add(&r, "Content-Encoding", "aws-chunked");
	req_add(&r, "x-amz-decoded-content-length", "66560");
	if (trailer) {
		req_add(&r, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER");
		req_add(&r, "x-amz-trailer", "x-amz-checksum-crc32c");
		snprintf(r.store[1], sizeof(r.store[1]),
			 "AWS4-HMAC-SHA256 Credential=" SCOPE
			 ",SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
			 "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer,"
			 "Signature=%s",
			 seeds[1]);
	} else {
		req_add(&r, "Content-Length", "66824");
		req_add(&r, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
		snprintf(r.store[1], sizeof(r.store[1]),
			 "AWS4-HMAC-SHA256 Credential=" SCOPE
			 ",SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;"
			 "x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,"
			 "Signature=%s",
			 seeds[0]);
	}
	req_add(&r, "Authorization", r.store[1]);
	struct sigv4_input in = req_in(&r);
	bool anon;
	char msg[256];
	is_int(sigv4_parse(&in, &a, &anon, msg, sizeof(msg)), S3_OK, name);
	is_int(a.payload, trailer ? SIGV4_STREAMING_SIGNED_TRAILER : SIGV4_STREAMING_SIGNED,
	       "streaming mode");
	is_int(a.decoded_length, 66560, "decoded length");
	is_str(a.trailer, trailer ? "x-amz-checksum-crc32c" : "", "trailer header");
	is_int(sigv4_verify(&in, &a, SK, key), S3_OK, "seed signature verifies");
	sigv4_chunk_init(&c, &a, key);
	c2 = c;
	for (int i = 0; i < 3; i++) {
		sha256_of(data, sizes[i], h);
		ok(!sigv4_chunk_check(&c, h, chunks[trailer][(i + 1) % 3]),
		   "%s: chunk %d with another chunk's signature fails", name, i);
		ok(sigv4_chunk_check(&c, h, chunks[trailer][i]), "%s: chunk %d signature", name, i);
		ok(!sigv4_chunk_check(&c, h, chunks[trailer][i]), "... and not twice");
	}
	/* the signer side gives the same chain */
	char sig[65];
	sha256_of(data, 65536, h);
	sigv4_chunk_sign(&c2, h, sig);
	is_str(sig, chunks[trailer][0], "chunk signer matches");
	if (trailer) {
		static const char tr[] = "x-amz-checksum-crc32c:sOO8/Q==\n";
		static const char want[] =
			"d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435";
		sha256_of(tr, strlen(tr), h);
		ok(!sigv4_trailer_check(&c, h, chunks[1][2]), "a chunk signature is no trailer's");
		c2 = c;
		ok(sigv4_trailer_check(&c, h, want), "trailer signature as published");
		sigv4_trailer_sign(&c2, h, sig);
		is_str(sig, want, "trailer signer matches");
	}
	/* a damaged body: the chain breaks at the first altered chunk */
	sigv4_chunk_init(&c, &a, key);
	data[100] = 'b';
	sha256_of(data, 65536, h);
	ok(!sigv4_chunk_check(&c, h, chunks[trailer][0]), "%s: altered chunk data fails", name);
	ok(!sigv4_chunk_check(&c, h, "zz"), "a short signature fails");
	ok(!sigv4_chunk_check(&c, h, NULL), "no signature fails");
	free(data);
}

/*
 * Keys come from each thread's cache of the last few: a hit gives the key of
 * exactly that secret and scope, whatever else went through since.
 */
static void test_signing_key_cache(const uint8_t published[32])
{
	static const char *const secrets[] = {"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
					      "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEZ", "s",
					      "secret-of-another-identity"};
	static const char *const dates[] = {"20150830", "20150831"};
	uint8_t first[2][4][2][32], again[32];
	char long_secret[300];
	bool same = true, distinct = true;

	for (int round = 0; round < 2; round++) /* the second round finds what the first left */
		for (int s = 0; s < 4; s++)
			for (int d = 0; d < 2; d++)
				sigv4_signing_key(secrets[s], dates[d], "us-east-1", "iam",
						  first[round][s][d]);
	for (int s = 0; s < 4; s++)
		for (int d = 0; d < 2; d++) {
			same &= !memcmp(first[0][s][d], first[1][s][d], 32);
			for (int t = 0; t < 4; t++)
				for (int e = 0; e < 2; e++)
					if ((s != t || d != e) &&
					    !memcmp(first[0][s][d], first[0][t][e], 32))
						distinct = false;
		}
	ok(same, "key cache: the same key for the same secret and scope, evicted or not");
	ok(distinct, "key cache: another secret or date never gets a cached key");
	ok(!memcmp(first[1][0][0], published, 32), "key cache: the published key again");
	sigv4_signing_key(secrets[0], "20150830", "us-east-2", "iam", again);
	ok(memcmp(again, published, 32) != 0, "key cache: another region, another key");
	sigv4_signing_key(secrets[0], "20150830", "us-east-1", "s3", again);
	ok(memcmp(again, published, 32) != 0, "key cache: another service, another key");
	memset(long_secret, 'k', sizeof(long_secret) - 1);
	long_secret[sizeof(long_secret) - 1] = '\0';
	sigv4_signing_key(long_secret, "20150830", "us-east-1", "iam", again);
	sigv4_signing_key(long_secret, "20150830", "us-east-1", "iam", first[0][0][0]);
	ok(!memcmp(again, first[0][0][0], 32) && memcmp(again, published, 32),
	   "key cache: a secret too long to keep is derived every time");
}

/*
 * The HMAC and SHA-256 of our own (a digest fetched once) agree with
 * OpenSSL's one-shot HMAC() and SHA256() around the 64-byte block edges and
 * for a key longer than a block (a secret of more than 60 characters).
 */
static void test_hmac_against_openssl(void)
{
	static const size_t lens[] = {0, 1, 55, 56, 63, 64, 65, 119, 120, 1000};
	uint8_t key[32], msg[1000], mac[32], k[32], want_k[32];
	char got[65], want[65];
	const char *secret =
		"0123456789012345678901234567890123456789012345678901234567890123456789";
	char *k0 = xasprintf("AWS4%s", secret);
	bool hmac_same = true, sha_same = true;
	unsigned int len;

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 31 + 5);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		sigv4_hmac_hex(key, (const char *)msg, lens[i], got);
		HMAC(EVP_sha256(), key, sizeof(key), msg, lens[i], mac, &len);
		hex_encode(mac, 32, want);
		hmac_same &= !strcmp(got, want);
		sigv4_sha256_hex(msg, lens[i], got);
		SHA256(msg, lens[i], mac);
		hex_encode(mac, 32, want);
		sha_same &= !strcmp(got, want);
	}
	ok(hmac_same, "HMAC-SHA256 equals OpenSSL's for messages of 0 to 1000 bytes");
	ok(sha_same, "SHA-256 equals OpenSSL's for messages of 0 to 1000 bytes");
	HMAC(EVP_sha256(), k0, (int)strlen(k0), (const uint8_t *)"20150830", 8, want_k, &len);
	HMAC(EVP_sha256(), want_k, 32, (const uint8_t *)"us-east-1", 9, mac, &len);
	HMAC(EVP_sha256(), mac, 32, (const uint8_t *)"iam", 3, want_k, &len);
	HMAC(EVP_sha256(), want_k, 32, (const uint8_t *)"aws4_request", 12, mac, &len);
	sigv4_signing_key(secret, "20150830", "us-east-1", "iam", k);
	ok(!memcmp(k, mac, 32), "a signing key from a secret longer than an HMAC block");
	free(k0);
}

static void test_signing_key(void)
{
	uint8_t k[32];
	char hex[65];
	static const char *const d = "0123456789abcdef";
	/* the key derivation example of the AWS General Reference */
	sigv4_signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1",
			  "iam", k);
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = d[k[i] >> 4];
		hex[2 * i + 1] = d[k[i] & 15];
	}
	hex[64] = '\0';
	is_str(hex, "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9",
	       "signing key as published");
	test_signing_key_cache(k);
	test_hmac_against_openssl();
	sigv4_sha256_hex("", 0, hex);
	is_str(hex, EMPTY, "SHA-256 of nothing");
	sigv4_hmac_hex(k, "", 0, hex);
	ok(strlen(hex) == 64 && strspn(hex, d) == 64, "HMAC hex is 64 lowercase digits");
	char t[17];
	sigv4_format_time(T2013, t);
	is_str(t, "20130524T000000Z", "format time");
	sigv4_format_time(951782400 + 86399, t); /* 2000-02-29 23:59:59 */
	is_str(t, "20000229T235959Z", "format a leap day");
}

static void test_uri_encode(void)
{
	buf b = BUF_INIT;
	static const char all[] = "AZaz09-._~/ +%!*'()&$@=;:,?#[]\"<>\\^`{|}";
	sigv4_uri_encode(all, strlen(all), true, &b);
	is_str(b.data,
	       "AZaz09-._~/%20%2B%25%21%2A%27%28%29%26%24%40%3D%3B%3A%2C%3F%23%5B%5D%22%3C%3E%5C"
	       "%5E%60%7B%7C%7D",
	       "URI encoding keeps unreserved and '/', %XX uppercase for the rest");
	buf_reset(&b);
	sigv4_uri_encode("a/b\xc3\xbc\x00\xff", 7, false, &b);
	is_str(b.data, "a%2Fb%C3%BC%00%FF", "'/' encoded when asked, bytes as they are");
	buf_free(&b);
}

/*
 * ---- an independent signer's vectors, and other encodings of them ----
 * Signatures computed by botocore 1.43.11 (S3SigV4Auth, S3SigV4QueryAuth) for
 * keys and queries with spaces, '+', '%', "//", "." segments, UTF-8 and
 * sub-delimiters, sent as botocore encodes them; the other two encodings of
 * each (lowercase hex, unencoded bytes, another parameter order, '/' or '+'
 * left raw) decode to the same request and must verify with the same signature.
 */

#define BOTO_AK   "AKIDEXAMPLE"
#define BOTO_SK   "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define BOTO_TIME 1796027219 /* 20261130T082659Z */
#define BOTO_CRED "Credential=AKIDEXAMPLE/20261130/us-west-2/s3/aws4_request, "
#define BOTO_SH   "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-note, Signature="

struct boto_case {
	const char *method, *paths[3], *queries[3], *sig;
};

static void test_botocore(void)
{
	static const struct boto_case cases[] = {
		{"PUT",
		 {"/bucket/a%20b%2Bc%25d.txt", "/bucket/a%20b%2bc%25d.txt",
		  "/bucket/a%20b+c%25d.txt"},
		 {NULL, "", NULL},
		 "0070ac3689716d1b1a2286095ac790c5ce812875aeef1b0e9da79cc7eb1a5d40"},
		{"GET",
		 {"/bucket/dir//x/./../%C3%BC%E2%82%AC%F0%9F%98%80~%21%2A%27%28%29%26%24%40%3D%3B%"
		  "3A%2C",
		  "/bucket/dir//x/./../%c3%bc%e2%82%ac%f0%9f%98%80%7E!*'()&$@=;:,",
		  "/bucket/dir//x/./../\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80~!*'()&$@=;:,"},
		 {NULL, NULL, NULL},
		 "79a540f69960a416cf89d051d67b9f37efdde1c0d1ae0601997c96f0b8d46fc7"},
		{"GET",
		 {"/bucket/", "/bucket/", "/bucket/"},
		 {"list-type=2&prefix=a%20b%2Bc%2F%C3%BC&delimiter=%2F&encoding-type=url",
		  "encoding-type=url&delimiter=/&list-type=2&prefix=a%20b+c/%c3%bc",
		  "prefix=a%20b%2Bc%2F\xc3\xbc&list-type=2&&delimiter=%2F&encoding-type=url&"},
		 "9214a80ab6cec1437db5b991f0093559af6700310cb8f1dae5bda3e26af68e70"},
		{"GET",
		 {"/bucket/k", "/bucket/%6B", "/bucket/k"},
		 {"uploads", "uploads=", "&uploads"},
		 "b028a2a7254c9dae02fea6f8775a384b012b5006a82597593e6a3497947b34e8"},
		{"GET",
		 {"/bucket/k", "/bucket/k", "/bucket/k"},
		 {"x=1&a=2&a=1&A=0", "A=0&a=1&a=2&x=1", "a=2&x=1&A=0&a=1"},
		 "7f5b25bad54a87f0e7dd940691dee40768cf5e9f7c90305f954743243fddf109"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct boto_case *c = &cases[i];
		struct req r;
		char auth[400];
		snprintf(auth, sizeof(auth), "AWS4-HMAC-SHA256 " BOTO_CRED BOTO_SH "%s", c->sig);
		for (int v = 0; v < 3; v++) {
			req_init(&r, c->method, c->paths[v], c->queries[v], BOTO_TIME);
			req_add(&r, "host", "s3.example.com");
			req_add(&r, "x-amz-meta-note", "  two   spaces\there  ");
			req_add(&r, "X-Amz-Date", "20261130T082659Z");
			req_add(&r, "X-Amz-Content-SHA256", EMPTY);
			req_add(&r, "Authorization", auth);
			is_int(check(&r, BOTO_SK, NULL, NULL), S3_OK,
			       v ? "botocore vector, encoded another way" : "botocore vector");
			if (v)
				continue;
			req_set(&r, "x-amz-meta-note", "two spaces here");
			is_int(check(&r, BOTO_SK, NULL, NULL), S3_OK, "... values are trimmed");
			req_set(&r, "x-amz-meta-note", "two spaces  here!");
			is_int(check(&r, BOTO_SK, NULL, NULL), S3_SIGNATURE_MISMATCH,
			       "... but a changed value fails");
		}
	}
	static const char *const pre[2][2] = {
		{"/bucket/a%20b%2Bc%25d.txt",
		 "a221ea95fc26d06cf8b2e8571156d07a0b21a32b0ad15495db99cc7a6f333eaf"},
		{"/bucket/dir//%C3%BC%E2%82%AC/x",
		 "0412b8b5dadfa9be124eb8aa601bf82fb226010d799ae2489eaac1feeacd7b5f"}};
	for (int i = 0; i < 2; i++) {
		struct req r;
		char q[600];
		snprintf(q, sizeof(q),
			 "response-content-type=text%%2Fplain%%3B%%20charset%%3Dutf-8&X-Amz-"
			 "Algorithm="
			 "AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%%2F20261130%%2Fus-west-2%%"
			 "2Fs3%%"
			 "2Faws4_request&X-Amz-Date=20261130T082659Z&X-Amz-Expires=3600&X-Amz-"
			 "SignedHeaders=host&X-Amz-Signature=%s",
			 pre[i][1]);
		req_init(&r, "GET", pre[i][0], q, BOTO_TIME + 10);
		req_add(&r, "Host", "s3.example.com");
		is_int(check(&r, BOTO_SK, NULL, NULL), S3_OK, "botocore presigned vector");
		r.region = "us-west-2";
		is_int(check(&r, BOTO_SK, NULL, NULL), S3_OK, "... in the gateway's region");
		r.region = "eu-west-1";
		is_int(check(&r, BOTO_SK, NULL, NULL), S3_AUTH_QUERY_ERROR,
		       "... refused when scoped to another region");
	}
}

static void base_req(struct req *r);

/* ---- our signer against our verifier ---- */

static void test_round_trips(void)
{
	static const char *const paths[] = {
		"/b/a%20b",
		"/b/a+b",
		"/b/a%2Bb",
		"/b/100%25",
		"/b//double//slash/",
		"/b/./dot/../dotdot",
		"/b/%E6%97%A5%E6%9C%AC%E8%AA%9E",
		"/b/%00nul",
		"/b/%2F",
		"/",
	};
	static const char *const queries[] = {
		NULL,
		"",
		"a=1&b",
		"prefix=a+b&delimiter=%2F",
		"k=%E2%82%AC%20x&k=%00&k=",
		"=&=x",
		"tagging&versionId=3%2B4",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		for (size_t j = 0; j < sizeof(queries) / sizeof(queries[0]); j++) {
			struct req r;
			struct sigv4_auth a;
			char msg[512];
			req_init(&r, "PUT", paths[i], queries[j], T2013 + 5);
			req_add(&r, "Host", "gw:8333");
			req_add(&r, "x-amz-date", "20130524T000000Z");
			req_add(&r, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
			req_add(&r, "x-amz-meta-a", " one ");
			req_add(&r, "X-Amz-Meta-A", "two  words");
			req_add(&r, "Content-Type", "text/plain");
			sign_req(&r,
				 "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-a",
				 "UNSIGNED-PAYLOAD", AK, SK, "20130524T000000Z");
			bool good = check(&r, SK, &a, msg) == S3_OK;
			ok(good, "round trip %s ? %s", paths[i],
			   queries[j] ? queries[j] : "(none)");
			if (!good)
				printf("# %s\n", msg);
			is_int(a.payload, SIGV4_PAYLOAD_UNSIGNED, "unsigned payload");
			is_int(check(&r, "other-secret", NULL, NULL), S3_SIGNATURE_MISMATCH,
			       "wrong secret");
			req_set(&r, "X-Amz-Meta-A", "two words!");
			is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH,
			       "a repeated header's second value is signed");
			req_set(&r, "X-Amz-Meta-A", "two  words");
			req_del(&r, "x-amz-meta-a");
			req_add(&r, "x-amz-meta-a", " one ");
			req_add(&r, "X-Amz-Meta-A", "two  words");
			is_int(check(&r, SK, NULL, NULL), S3_OK, "same values in the same order");

			/* presigned, same request */
			struct sigv4_signer s = {AK, SK, "us-east-1", NULL, "20130524T000000Z"};
			struct sigv4_input in;
			buf q = BUF_INIT;
			req_init(&r, "GET", paths[i], queries[j], T2013 + 5);
			req_add(&r, "Host", "gw:8333");
			in = req_in(&r);
			ok(sigv4_presign(&in, "host", 60, &s, &q), "presign");
			r.query = q.data;
			is_int(check(&r, SK, &a, NULL), S3_OK, "presigned round trip");
			ok(a.presigned && a.expires == 60, "presigned fields");
			r.now = T2013 + 61;
			is_int(check(&r, SK, NULL, NULL), S3_EXPIRED_REQUEST, "presigned expires");
			buf_free(&q);
		}
	/* a path and a query that are not percent-encoding cannot be signed */
	struct sigv4_signer s = {AK, SK, "us-east-1", NULL, "20130524T000000Z"};
	struct req r;
	buf b = BUF_INIT;
	req_init(&r, "GET", "/b/%zz", NULL, T2013);
	struct sigv4_input in = req_in(&r);
	ok(!sigv4_sign_header(&in, "host", EMPTY, &s, &b), "signer refuses a bad path escape");
	in.raw_path = "/b";
	in.raw_query = "a=%4";
	ok(!sigv4_presign(&in, "host", 60, &s, &b), "presign refuses a bad query escape");
	buf_free(&b);
	/* verify called on a request parse would refuse: never a match */
	struct sigv4_auth a;
	char sig[65];
	base_req(&r);
	is_int(check(&r, SK, &a, NULL), S3_OK, "a good request");
	in = req_in(&r);
	in.raw_path = "/b/%G1";
	ok(!sigv4_expected(&in, &a, SK, sig, NULL) && !sig[0], "no expected signature");
	is_int(sigv4_verify(&in, &a, SK, NULL), S3_SIGNATURE_MISMATCH, "verify says mismatch");
	r.method = "";
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_ARGUMENT, "an empty method");
}

/* ---- malformed and refused requests ---- */

/* A correctly signed header-auth request at T2013 to start from. */
static void base_req(struct req *r)
{
	req_init(r, "GET", "/bucket/key", "x=1", T2013 + 1);
	req_add(r, "Host", "gw");
	req_add(r, "x-amz-date", "20130524T000000Z");
	req_add(r, "x-amz-content-sha256", EMPTY);
	sign_req(r, "host;x-amz-content-sha256;x-amz-date", EMPTY, AK, SK, "20130524T000000Z");
}

struct bad_auth {
	const char *value;
	enum s3_err err;
	const char *what;
};

#define SIG64 "0000000000000000000000000000000000000000000000000000000000000000"
#define GOODC "Credential=" SCOPE

static void test_malformed_header(void)
{
	static const struct bad_auth cases[] = {
		{"AWS " AK ":frJIUN8DYpKDtOLCwo//yllqDzg=", S3_INVALID_REQUEST, "SigV2"},
		{"AWS4-ECDSA-P256-SHA256 Credential=" AK "/20130524/s3/aws4_request, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_INVALID_REQUEST, "SigV4a"},
		{"Bearer abc", S3_INVALID_ARGUMENT, "another scheme"},
		{"", S3_INVALID_ARGUMENT, "empty"},
		{"AWS4-HMAC-SHA512 " GOODC ", SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "wrong algorithm"},
		{"AWS4-HMAC-SHA256", S3_AUTH_HEADER_MALFORMED, "no components"},
		{"AWS4-HMAC-SHA256 " GOODC, S3_AUTH_HEADER_MALFORMED, "only a credential"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host", S3_AUTH_HEADER_MALFORMED,
		 "no signature"},
		{"AWS4-HMAC-SHA256 " GOODC ", Signature=" SIG64, S3_AUTH_HEADER_MALFORMED,
		 "no signed headers"},
		{"AWS4-HMAC-SHA256 " GOODC ", " GOODC ", SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "credential twice"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host, Signature=" SIG64
		 ", Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "signature twice"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host, Signature=" SIG64 ", Extra=1",
		 S3_AUTH_HEADER_MALFORMED, "unknown component"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host, Signature=" SIG64 ",",
		 S3_AUTH_HEADER_MALFORMED, "trailing comma"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "empty signed headers"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "component without '='"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host, Signature=" SIG64 "0",
		 S3_AUTH_HEADER_MALFORMED, "65 hex digits"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host, Signature="
		 "000000000000000000000000000000000000000000000000000000000000000",
		 S3_AUTH_HEADER_MALFORMED, "63 hex digits"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host, Signature="
		 "g000000000000000000000000000000000000000000000000000000000000000",
		 S3_AUTH_HEADER_MALFORMED, "non-hex signature"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3, SignedHeaders=host, "
		 "Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "credential with four parts"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request/x, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "credential with six parts"},
		{"AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "empty access key"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/2013052/us-east-1/s3/aws4_request, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "seven-digit date"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/2013O524/us-east-1/s3/aws4_request, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "letter in the date"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/20130524//s3/aws4_request, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "empty region"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/ec2/aws4_request, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "service ec2"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_requests, "
		 "SignedHeaders=host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "wrong terminal"},
		{"AWS4-HMAC-SHA256 Credential=" AK "/20130525/us-east-1/s3/aws4_request, "
		 "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "credential date differs from x-amz-date"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host;;x-amz-date, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "empty name in signed headers"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host;x-amz-date;, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "trailing ';' in signed headers"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=Host;x-amz-date, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "uppercase signed header"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host;x-amz-date;host, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "repeated signed header"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host:x, Signature=" SIG64,
		 S3_AUTH_HEADER_MALFORMED, "':' in signed headers"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=x-amz-content-sha256;x-amz-date, "
		 "Signature=" SIG64,
		 S3_ACCESS_DENIED, "host not signed"},
		{"AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=host;x-amz-content-sha256, "
		 "Signature=" SIG64,
		 S3_ACCESS_DENIED, "x-amz-date sent but not signed"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct req r;
		struct sigv4_auth a;
		char msg[512];
		base_req(&r);
		req_set(&r, "Authorization", cases[i].value);
		is_int(check(&r, SK, &a, msg), cases[i].err, cases[i].what);
		ok(msg[0] != '\0', "... with a message: %s", msg);
		ok(!a.access_key[0] && !a.signature[0], "... and nothing half-read left in auth");
	}
	struct req r;
	char msg[512];
	base_req(&r);
	is_int(check(&r, SK, NULL, NULL), S3_OK, "the base request verifies");
	req_set(&r, "x-amz-date", "20130524T000000Z ");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "spaces around x-amz-date are trimmed");
	r.region = "us-east-1";
	is_int(check(&r, SK, NULL, NULL), S3_OK, "the gateway's region");
	r.region = "eu-central-1";
	is_int(check(&r, SK, NULL, msg), S3_AUTH_HEADER_MALFORMED, "another region is refused");
	ok(strstr(msg, "'us-east-1' is wrong; expecting 'eu-central-1'") != NULL, "%s", msg);
	r.region = NULL;
	req_add(&r, "Authorization", r.store[0]);
	is_int(check(&r, SK, NULL, NULL), S3_AUTH_HEADER_MALFORMED, "two Authorization headers");
	base_req(&r);
	r.query = "x=1&X-Amz-Algorithm=AWS4-HMAC-SHA256";
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_ARGUMENT, "header and query auth together");
	base_req(&r);
	req_add(&r, "x-amz-meta-secret", "unsigned");
	req_add(&r, "X-Amz-Acl", "public-read");
	req_add(&r, "x-amz-meta-secret", "again");
	is_int(check(&r, SK, NULL, msg), S3_ACCESS_DENIED, "unsigned x-amz-* headers are refused");
	is_str(msg,
	       "There were headers present in the request which were not signed: "
	       "x-amz-meta-secret,x-amz-acl",
	       "... and listed once each");
	base_req(&r);
	req_add(&r, "x-amzn-trace-id", "Root=1");
	req_add(&r, "User-Agent", "test");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "other unsigned headers are fine");
	/* a signed value with a line break cannot pass for another request */
	req_init(&r, "GET", "/k", NULL, T2013);
	req_add(&r, "Host", "gw");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-content-sha256", EMPTY);
	req_add(&r, "x-amz-meta-a", "v\nx-amz-meta-b:w");
	sign_req(&r, "host;x-amz-content-sha256;x-amz-date;x-amz-meta-a", EMPTY, AK, SK,
		 "20130524T000000Z");
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_ARGUMENT, "control character in a value");
	/* a signed header the request does not carry signs as "name:" */
	req_init(&r, "GET", "/k", NULL, T2013);
	req_add(&r, "Host", "gw");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-content-sha256", EMPTY);
	sign_req(&r, "content-md5;host;x-amz-content-sha256;x-amz-date", EMPTY, AK, SK,
		 "20130524T000000Z");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "a signed header absent from the request");
	req_add(&r, "Content-MD5", "");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "... is the same as one sent empty");
	req_set(&r, "Content-MD5", "x");
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "... but not as one with a value");
	/* the signature may come in uppercase */
	base_req(&r);
	for (char *p = strstr(r.store[0], "Signature=") + 10; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	is_int(check(&r, SK, NULL, NULL), S3_OK, "an uppercase signature verifies");
	/* components in another order, spaces and no spaces */
	base_req(&r);
	{
		char *sig = strstr(r.store[0], "Signature=");
		char v[1024];
		snprintf(
			v, sizeof(v),
			"AWS4-HMAC-SHA256   %s ,SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
			"\t" GOODC "  ",
			sig);
		req_set(&r, "Authorization", v);
		is_int(check(&r, SK, NULL, NULL), S3_OK, "components in any order and spacing");
		r.method = "HEAD";
		is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH,
		       "... but signed all the same");
	}
}

static void test_dates(void)
{
	struct req r;
	char msg[512];
	base_req(&r);
	r.now = T2013 + 900;
	is_int(check(&r, SK, NULL, NULL), S3_OK, "15 minutes late is fine");
	r.now = T2013 + 901;
	is_int(check(&r, SK, NULL, msg), S3_REQUEST_TIME_SKEWED, "a second more is too skewed");
	r.now = T2013 - 900;
	is_int(check(&r, SK, NULL, NULL), S3_OK, "15 minutes early is fine");
	r.now = T2013 - 901;
	is_int(check(&r, SK, NULL, NULL), S3_REQUEST_TIME_SKEWED, "a second more is too skewed");
	r.now = INT64_MIN;
	is_int(check(&r, SK, NULL, NULL), S3_REQUEST_TIME_SKEWED, "a clock at INT64_MIN");
	r.now = INT64_MAX;
	is_int(check(&r, SK, NULL, NULL), S3_REQUEST_TIME_SKEWED, "a clock at INT64_MAX");
	r.now = T2013;
	static const char *const bad[] = {
		"20130524T000000",
		"20130524T000000z",
		"20130524 000000Z",
		"2013-05-24T00:00:00Z",
		"20130230T000000Z",
		"20131324T000000Z",
		"20130524T240000Z",
		"20130524T006000Z",
		"20130524T000060Z",
		"19691231T235959Z",
		"",
		"20130524T000000ZZ",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		req_set(&r, "x-amz-date", bad[i]);
		is_int(check(&r, SK, NULL, msg), S3_ACCESS_DENIED, bad[i]);
	}
	req_del(&r, "x-amz-date");
	is_int(check(&r, SK, NULL, msg), S3_ACCESS_DENIED, "no date at all");
	is_str(msg, "AWS authentication requires a valid Date or x-amz-date header", msg);
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	is_int(check(&r, SK, NULL, NULL), S3_ACCESS_DENIED, "two x-amz-date headers");
	/* Date alone, in its forms */
	static const char *const dates[] = {"Fri, 24 May 2013 00:00:00 GMT",
					    "Fri, 24 May 2013 00:00:00 +0000",
					    "Fri, 24 May 2013 00:00:00 UTC"};
	for (int i = 0; i < 3; i++) {
		req_init(&r, "GET", "/k", NULL, T2013 + 10);
		req_add(&r, "Host", "gw");
		req_add(&r, "Date", dates[i]);
		req_add(&r, "x-amz-content-sha256", EMPTY);
		sign_req(&r, "date;host;x-amz-content-sha256", EMPTY, AK, SK, "20130524T000000Z");
		is_int(check(&r, SK, NULL, NULL), S3_OK, dates[i]);
	}
	static const char *const bad_dates[] = {"Fri, 24 Mai 2013 00:00:00 GMT",
						"Fri, 24 May 2013 00:00:00 CET",
						"Friday, 24-May-13 00:00:00 GMT", "1369353600"};
	for (int i = 0; i < 4; i++) {
		req_set(&r, "Date", bad_dates[i]);
		is_int(check(&r, SK, NULL, NULL), S3_ACCESS_DENIED, bad_dates[i]);
	}
}

static void test_payload_modes(void)
{
	static const struct {
		const char *value;
		enum s3_err err;
		int mode;
	} cases[] = {
		{"UNSIGNED-PAYLOAD", S3_OK, SIGV4_PAYLOAD_UNSIGNED},
		{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", S3_OK, SIGV4_STREAMING_SIGNED},
		{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", S3_OK,
		 SIGV4_STREAMING_SIGNED_TRAILER},
		{"STREAMING-UNSIGNED-PAYLOAD-TRAILER", S3_OK, SIGV4_STREAMING_UNSIGNED_TRAILER},
		{EMPTY, S3_OK, SIGV4_PAYLOAD_HASH},
		{"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", S3_OK,
		 SIGV4_PAYLOAD_HASH},
		{"STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", S3_INVALID_REQUEST, -1},
		{"unsigned-payload", S3_INVALID_ARGUMENT, -1},
		{"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85",
		 S3_INVALID_ARGUMENT, -1},
		{"x3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		 S3_INVALID_ARGUMENT, -1},
		{"", S3_INVALID_ARGUMENT, -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct req r;
		struct sigv4_auth a;
		req_init(&r, "PUT", "/b/k", NULL, T2013);
		req_add(&r, "Host", "gw");
		req_add(&r, "x-amz-date", "20130524T000000Z");
		req_add(&r, "x-amz-content-sha256", cases[i].value);
		sign_req(&r, "host;x-amz-content-sha256;x-amz-date", cases[i].value, AK, SK,
			 "20130524T000000Z");
		is_int(check(&r, SK, &a, NULL), cases[i].err, cases[i].value);
		if (cases[i].mode >= 0)
			is_int(a.payload, cases[i].mode, "... mode");
	}
	struct req r;
	struct sigv4_auth a;
	char msg[512];
	base_req(&r);
	req_del(&r, "x-amz-content-sha256");
	is_int(check(&r, SK, NULL, msg), S3_INVALID_REQUEST,
	       "header auth needs x-amz-content-sha256");
	is_str(msg, "Missing required header for this request: x-amz-content-sha256", msg);
	base_req(&r);
	req_add(&r, "x-amz-content-sha256", EMPTY);
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_ARGUMENT, "two x-amz-content-sha256");
	/* x-amz-content-sha256 signs as the payload line even when not in SignedHeaders */
	req_init(&r, "PUT", "/b/k", NULL, T2013);
	req_add(&r, "Host", "gw");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-content-sha256", EMPTY);
	sign_req(&r, "host;x-amz-date", EMPTY, AK, SK, "20130524T000000Z");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "unsigned x-amz-content-sha256 is allowed");
	req_set(&r, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "... but its value is signed");
	/* decoded length and trailer */
	static const char *const lengths[] = {"0", "66560", " 5 ", "9223372036854775807"};
	static const int64_t want[] = {0, 66560, 5, INT64_MAX};
	static const char *const bad_lengths[] = {"-1", "x", "", "1e3", "9223372036854775808"};
	for (int i = 0; i < 4; i++) {
		base_req(&r);
		req_add(&r, "x-amz-decoded-content-length", lengths[i]);
		sign_req(&r, "host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length",
			 EMPTY, AK, SK, "20130524T000000Z");
		is_int(check(&r, SK, &a, NULL), S3_OK, lengths[i]);
		ok(a.decoded_length == want[i], "decoded length %s", lengths[i]);
	}
	for (int i = 0; i < 5; i++) {
		base_req(&r);
		req_add(&r, "x-amz-decoded-content-length", bad_lengths[i]);
		sign_req(&r, "host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length",
			 EMPTY, AK, SK, "20130524T000000Z");
		is_int(check(&r, SK, NULL, NULL), S3_INVALID_ARGUMENT, bad_lengths[i]);
	}
	char longtr[SIGV4_MAX_TRAILER + 2];
	memset(longtr, 'x', sizeof(longtr) - 1);
	longtr[sizeof(longtr) - 1] = '\0';
	base_req(&r);
	req_add(&r, "x-amz-trailer", longtr);
	sign_req(&r, "host;x-amz-content-sha256;x-amz-date;x-amz-trailer", EMPTY, AK, SK,
		 "20130524T000000Z");
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_ARGUMENT, "an overlong x-amz-trailer");
	/* the streaming-unsigned-trailer flow: seed verifies, no chunk signatures, trailer none */
	req_init(&r, "PUT", "/b/k", NULL, T2013);
	req_add(&r, "Host", "gw");
	req_add(&r, "x-amz-date", "20130524T000000Z");
	req_add(&r, "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	req_add(&r, "x-amz-trailer", " x-amz-checksum-crc32 ");
	req_add(&r, "x-amz-decoded-content-length", "11");
	sign_req(&r,
		 "host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-trailer",
		 "STREAMING-UNSIGNED-PAYLOAD-TRAILER", AK, SK, "20130524T000000Z");
	is_int(check(&r, SK, &a, NULL), S3_OK, "unsigned trailer upload");
	is_str(a.trailer, "x-amz-checksum-crc32", "trailer name trimmed");
	is_int(a.decoded_length, 11, "its decoded length");
}

static void test_presigned_malformed(void)
{
	static const struct {
		const char *query;
		enum s3_err err;
	} cases[] = {
		{"X-Amz-Credential=" AK "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
		 "20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-"
		 "Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date="
		 "20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-"
		 "Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-SignedHeaders=host&X-Amz-"
		 "Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-"
		 "Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host",
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host"
		 "&X-Amz-Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-"
		 "Amz-"
		 "SignedHeaders=host&X-Amz-Signature=" SIG64,
		 S3_INVALID_REQUEST},
		{"AWSAccessKeyId=" AK
		 "&Expires=1369357200&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D",
		 S3_INVALID_REQUEST},
		{"X-Amz-Signature=" SIG64, S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=2013-05-24&X-Amz-Expires=60&X-Amz-SignedHeaders=host"
		 "&X-Amz-Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604801&X-Amz-"
		 "SignedHeaders="
		 "host&X-Amz-Signature=" SIG64,
		 S3_ACCESS_DENIED},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=0&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64,
		 S3_EXPIRED_REQUEST},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=-5&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64,
		 S3_ACCESS_DENIED},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=1h&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64,
		 S3_ACCESS_DENIED},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130525%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fsts%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%00%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "x-amz-date&X-Amz-Signature=" SIG64,
		 S3_ACCESS_DENIED},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64 "&X-Amz-Signature=" SIG64,
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=xyz",
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64 "&X-Amz-Content-Sha256=abc",
		 S3_AUTH_QUERY_ERROR},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		 "%2F20130524%2Fus-east-1%2Fs3%"
		 "2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders="
		 "host&X-Amz-Signature=" SIG64 "&bad=%G0",
		 S3_INVALID_URI},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct req r;
		char msg[512];
		req_init(&r, "GET", "/b/k", cases[i].query, T2013 + 1);
		req_add(&r, "Host", "gw");
		is_int(check(&r, SK, NULL, msg), cases[i].err, "presigned malformed");
		ok(msg[0], "... %s", msg);
	}
	/* an unsigned x-amz-* header beside a presigned URL */
	struct req r;
	req_init(&r, "GET", "/test.txt", PRESIGNED_2013, T2013 + 3600);
	req_add(&r, "Host", "examplebucket.s3.amazonaws.com");
	req_add(&r, "x-amz-acl", "public-read");
	is_int(check(&r, SK, NULL, NULL), S3_ACCESS_DENIED,
	       "presigned: unsigned x-amz-acl refused");
	req_del(&r, "x-amz-acl");
	req_add(&r, "X-Amz-Content-SHA256", "UNSIGNED-PAYLOAD");
	is_int(check(&r, SK, NULL, NULL), S3_OK, "presigned: x-amz-content-sha256 tolerated");
	/* a presigned URL can carry a signed body hash */
	struct sigv4_signer s = {AK, SK, "us-east-1", NULL, "20130524T000000Z"};
	struct sigv4_auth a;
	buf q = BUF_INIT;
	req_init(&r, "PUT", "/b/k", "X-Amz-Content-Sha256=" EMPTY, T2013);
	req_add(&r, "Host", "gw");
	struct sigv4_input in = req_in(&r);
	sigv4_presign(&in, "host", 60, &s, &q);
	r.query = q.data;
	is_int(check(&r, SK, &a, NULL), S3_OK, "presigned with X-Amz-Content-Sha256");
	is_int(a.payload, SIGV4_PAYLOAD_HASH, "... the payload hash is to be checked");
	is_str(a.payload_hash, EMPTY, "... and known");
	buf_free(&q);
}

static void test_anonymous_and_bounds(void)
{
	struct req r;
	struct sigv4_auth a;
	struct sigv4_input in;
	bool anon = false;
	char msg[512];
	req_init(&r, "GET", "/b/%zz", "prefix=%G&Signature=x&x-amz-algorithm=1", T2013);
	req_add(&r, "Host", "gw");
	req_add(&r, "X-Amz-Date", "garbage");
	in = req_in(&r);
	is_int(sigv4_parse(&in, &a, &anon, msg, sizeof(msg)), S3_OK, "no authentication");
	ok(anon, "... is anonymous");
	r.query = "X-Amz-Algorith%6D=AWS4-HMAC-SHA256";
	in = req_in(&r);
	ok(sigv4_parse(&in, &a, &anon, msg, sizeof(msg)) != S3_OK && !anon,
	   "an encoded X-Amz-Algorithm name is seen");
	in.raw_query = NULL;
	in.nheaders = 0;
	is_int(sigv4_parse(&in, &a, &anon, NULL, 0), S3_OK, "no headers at all, no msg buffer");
	ok(anon, "... anonymous");

	/* bounds */
	static char big[SIGV4_MAX_QUERY + 2];
	base_req(&r);
	memset(big, 'a', SIGV4_MAX_PATH + 1);
	big[0] = '/';
	big[SIGV4_MAX_PATH + 1] = '\0';
	r.path = big;
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_URI, "an overlong path");
	big[SIGV4_MAX_PATH] = '\0';
	ok(check(&r, SK, NULL, NULL) == S3_SIGNATURE_MISMATCH, "the longest path is read");
	r.path = "/b/%zz";
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_URI, "a bad escape in the path");
	r.path = "/b/%4";
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_URI, "a cut escape in the path");
	r.path = "b/k";
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_URI, "a path without '/'");
	r.path = "/bucket/key";
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r.query = big;
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_URI, "an overlong query");
	for (size_t i = 0; i < 2 * (SIGV4_MAX_PARAMS + 1); i += 2) {
		big[i] = 'a';
		big[i + 1] = '&';
	}
	big[2 * (SIGV4_MAX_PARAMS + 1)] = '\0';
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_ARGUMENT, "too many parameters");
	big[2 * SIGV4_MAX_PARAMS] = '\0';
	is_int(check(&r, SK, NULL, NULL), S3_SIGNATURE_MISMATCH, "the most parameters are read");
	r.query = "x=%";
	is_int(check(&r, SK, NULL, NULL), S3_INVALID_URI, "a bad escape in the query");
	r.query = "x=1";
	while (r.n < 64)
		req_add(&r, "x-other", "v");
	struct sigv4_header *many = xcalloc(SIGV4_MAX_HEADERS + 1, sizeof(*many));
	in = req_in(&r);
	memcpy(many, r.h, r.n * sizeof(*many));
	for (size_t i = r.n; i <= SIGV4_MAX_HEADERS; i++)
		many[i] = (struct sigv4_header){"x-other", "v"};
	in.headers = many;
	in.nheaders = SIGV4_MAX_HEADERS + 1;
	is_int(sigv4_parse(&in, &a, &anon, msg, sizeof(msg)), S3_HEADER_TOO_LARGE,
	       "too many headers");
	in.nheaders = SIGV4_MAX_HEADERS;
	is_int(sigv4_parse(&in, &a, &anon, msg, sizeof(msg)), S3_OK, "the most headers are read");
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (size_t i = r.n; i < r.n + 4; i++)
		many[i].value = big;
	is_int(sigv4_parse(&in, &a, &anon, msg, sizeof(msg)), S3_HEADER_TOO_LARGE,
	       "too many header bytes");
	free(many);

	static char longauth[SIGV4_MAX_AUTH_LEN + 2];
	memset(longauth, ' ', sizeof(longauth) - 1);
	memcpy(longauth, "AWS4-HMAC-SHA256 ", 17);
	base_req(&r);
	req_set(&r, "Authorization", longauth);
	is_int(check(&r, SK, NULL, NULL), S3_AUTH_HEADER_MALFORMED, "an overlong Authorization");
	/* the most signed headers, and one more */
	static char names[SIGV4_MAX_SIGNED_LEN + 64];
	size_t len = 0;
	for (int i = 0; i < SIGV4_MAX_SIGNED - 2; i++) /* with the three below: one too many */
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%sh%03d", i ? ";" : "",
					i);
	snprintf(longauth, sizeof(longauth),
		 "AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=%s;host;x-amz-content-sha256;x-amz-date"
		 ", Signature=" SIG64,
		 names);
	req_set(&r, "Authorization", longauth);
	is_int(check(&r, SK, NULL, msg), S3_AUTH_HEADER_MALFORMED, "too many signed headers");
	names[len - 5] = '\0';
	snprintf(longauth, sizeof(longauth),
		 "AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=%s;host;x-amz-content-sha256;x-amz-date"
		 ", Signature=" SIG64,
		 names);
	req_set(&r, "Authorization", longauth);
	is_int(check(&r, SK, NULL, msg), S3_SIGNATURE_MISMATCH, "the most signed headers are read");
	char huge[SIGV4_MAX_SIGNED_LEN + 16];
	memset(huge, 'h', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	snprintf(longauth, sizeof(longauth),
		 "AWS4-HMAC-SHA256 " GOODC ", SignedHeaders=%s, Signature=" SIG64, huge);
	req_set(&r, "Authorization", longauth);
	is_int(check(&r, SK, NULL, NULL), S3_AUTH_HEADER_MALFORMED, "an overlong SignedHeaders");
	/* a message buffer of one byte stays terminated */
	base_req(&r);
	req_set(&r, "Authorization", "Bearer x");
	in = req_in(&r);
	msg[0] = 'x';
	msg[1] = 'y';
	sigv4_parse(&in, &a, &anon, msg, 1);
	ok(msg[0] == '\0' && msg[1] == 'y', "a one-byte message buffer");
}

int main(void)
{
	test_aws_get_object();
	test_aws_put_object();
	test_aws_bucket_gets();
	test_aws_presigned();
	test_aws_chunked(false);
	test_aws_chunked(true);
	test_signing_key();
	test_uri_encode();
	test_botocore();
	test_round_trips();
	test_malformed_header();
	test_dates();
	test_payload_modes();
	test_presigned_malformed();
	test_anonymous_and_bounds();
	return done_testing();
}
