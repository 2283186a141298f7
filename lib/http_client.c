/*
 * DESIGN: one CURL easy handle per thread (a pthread key), reset between
 * requests with curl_easy_reset(), which keeps the handle's live connections,
 * so consecutive requests from a thread to the same peer reuse one
 * keep-alive connection. The handle is cleaned up when the thread exits.
 */
#include "config.h"
#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "bigbuf.h"
#include "http_client.h"
#include "log.h"
#include "util.h"

static pthread_key_t client_key;
static pthread_once_t client_once = PTHREAD_ONCE_INIT;

static void client_handle_free(void *h) { curl_easy_cleanup(h); }

static void client_make_key(void)
{
	if (pthread_key_create(&client_key, client_handle_free))
		fatal("pthread_key_create failed");
}

void http_client_global_init(void)
{
	if (curl_global_init(CURL_GLOBAL_ALL))
		fatal("curl_global_init failed");
	pthread_once(&client_once, client_make_key);
}

/* This thread's handle, reset to defaults. */
static CURL *client_handle(void)
{
	CURL *h;
	pthread_once(&client_once, client_make_key);
	h = pthread_getspecific(client_key);
	if (h) {
		curl_easy_reset(h);
		return h;
	}
	h = curl_easy_init();
	if (!h)
		fatal("curl_easy_init failed");
	pthread_setspecific(client_key, h);
	return h;
}

static size_t client_write(char *data, size_t size, size_t n, void *arg)
{
	struct http_result *res = arg;
	buf_append(&res->body, data, size * n);
	return size * n;
}

static size_t client_header(char *data, size_t size, size_t n, void *arg)
{
	struct http_result *res = arg;
	size_t len = size * n;
	/* A status line starts a new response (100 Continue, redirects): keep only the last. */
	if (len >= 5 && !memcmp(data, "HTTP/", 5)) {
		buf_reset(&res->headers);
		return len;
	}
	if (len <= 2 || !memchr(data, ':', len))
		return len;
	if (len > 15 && !strncasecmp(data, "Content-Length:", 15)) {
		bigbuf_presize(&res->body, strtoull(data + 15, NULL, 10));
	}
	buf_append(&res->headers, data, len);
	if (len < 2 || data[len - 2] != '\r') {
		/* Normalise bare-LF lines to CRLF. */
		res->headers.len--;
		buf_append(&res->headers, "\r\n", 2);
	}
	return len;
}

static wfs_err client_map(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK:
		return WFS_OK;
	case CURLE_OPERATION_TIMEDOUT:
		return WFS_ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
		return WFS_EUNAVAIL;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return WFS_EINVAL;
	default:
		return WFS_EIO;
	}
}

wfs_err http_request(const char *method, const char *url, const char *const *headers,
		     const void *body, size_t len, long timeout_ms, struct http_result *res)
{
	struct curl_slist *hl = NULL;
	CURL *h = client_handle();
	CURLcode rc;
	wfs_err err;
	long status = 0;

	res->status = 0;
	buf_reset(&res->body);
	buf_reset(&res->headers);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	/* big reads want a big buffer; curl allocates it per transfer, and at 256 KiB that is
	   an mmap and munmap per request: small answers (POST, PUT) keep curl's default */
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, strcmp(method, "GET") ? 16L << 10 : 256L << 10);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, client_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, res);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, client_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, res);
	if (timeout_ms > 0) {
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	}
	if (!strcmp(method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (body || strcmp(method, "GET")) {
		if (body || !strcmp(method, "POST") || !strcmp(method, "PUT")) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		}
		if (strcmp(method, "POST"))
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	for (; headers && *headers; headers++)
		hl = curl_slist_append(hl, *headers);
	/* No "Expect: 100-continue" round trip on uploads. */
	hl = curl_slist_append(hl, "Expect:");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);

	rc = curl_easy_perform(h);
	err = client_map(rc);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		res->status = (int)status;
	} else {
		log_debug("%s %s: %s", method, url, curl_easy_strerror(rc));
	}
	/* The handle must not keep pointers into this call's memory. */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hl);
	return err;
}

wfs_err http_get(const char *url, long timeout_ms, struct http_result *res)
{
	return http_request("GET", url, NULL, NULL, 0, timeout_ms, res);
}

void http_result_init(struct http_result *res)
{
	res->status = 0;
	buf_init(&res->body);
	buf_init(&res->headers);
}

void http_result_free(struct http_result *res)
{
	buf_free(&res->body);
	buf_free(&res->headers);
	res->status = 0;
}

int http_result_header(const struct http_result *res, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name);
	const char *p = res->headers.data, *end = p ? p + res->headers.len : NULL;
	while (p && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		if ((size_t)(le - p) > nlen && p[nlen] == ':' && !strncasecmp(p, name, nlen)) {
			const char *v = p + nlen + 1, *ve = le;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			if (outlen) {
				size_t n = MIN((size_t)(ve - v), outlen - 1);
				memcpy(out, v, n);
				out[n] = '\0';
			}
			return 1;
		}
		p = eol ? eol + 1 : end;
	}
	return 0;
}
