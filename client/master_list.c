/*
 * DESIGN: the list is fixed at creation; only the index of the current master
 * changes (under a mutex), so callers on many threads share one list. A
 * request walks the list at most once from the current entry: a follower
 * proxies to the leader, so any live master gives a real answer, and a 5xx
 * (no leader yet, the leader unreachable) is worth one try elsewhere.
 */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/master_list.h"
#include "util.h"

struct master_list {
	char *spec;
	char **addr;
	size_t n;
	pthread_mutex_t lock;
	size_t cur; /* protected by lock */
};

static bool addr_valid(const char *a, size_t len)
{
	const char *colon = NULL;
	uint64_t port;
	char digits[8];
	size_t plen;

	for (size_t i = 0; i < len; i++)
		if (a[i] == ':')
			colon = a + i;
	if (!colon || colon == a || len >= MASTER_ADDR_MAX)
		return false;
	plen = len - (size_t)(colon + 1 - a);
	if (plen == 0 || plen >= sizeof(digits))
		return false;
	memcpy(digits, colon + 1, plen);
	digits[plen] = '\0';
	return parse_u64(digits, &port) && port >= 1 && port <= 65535 &&
	       memchr(a, '/', len) == NULL && memchr(a, ' ', len) == NULL;
}

master_list *master_list_new(const char *spec, char *msg, size_t msglen)
{
	master_list *ml;
	const char *p;

	if (!spec || !*spec) {
		snprintf(msg, msglen, "no master address given");
		return NULL;
	}
	ml = xcalloc(1, sizeof(*ml));
	ml->spec = xstrdup(spec);
	pthread_mutex_init(&ml->lock, NULL);
	for (p = spec; p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (!addr_valid(p, len)) {
			snprintf(msg, msglen, "invalid master address \"%.*s\" in \"%.200s\" (want "
				 "host:port[,host:port...])", (int)MIN(len, 200), p, spec);
			master_list_free(ml);
			return NULL;
		}
		ml->addr = xrealloc(ml->addr, (ml->n + 1) * sizeof(*ml->addr));
		ml->addr[ml->n++] = xstrndup(p, len);
		p = c ? c + 1 : NULL;
	}
	return ml;
}

void master_list_free(master_list *ml)
{
	if (!ml)
		return;
	for (size_t i = 0; i < ml->n; i++)
		free(ml->addr[i]);
	free(ml->addr);
	free(ml->spec);
	pthread_mutex_destroy(&ml->lock);
	free(ml);
}

const char *master_list_spec(const master_list *ml) { return ml->spec; }

size_t master_list_count(const master_list *ml) { return ml->n; }

const char *master_list_at(const master_list *ml, size_t i) { return ml->addr[i]; }

static size_t current(master_list *ml)
{
	size_t c;
	pthread_mutex_lock(&ml->lock);
	c = ml->cur;
	pthread_mutex_unlock(&ml->lock);
	return c;
}

void master_list_current(master_list *ml, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s", ml->addr[current(ml)]);
}

void master_list_prefer(master_list *ml, const char *addr)
{
	for (size_t i = 0; i < ml->n; i++) {
		if (!strcmp(ml->addr[i], addr)) {
			pthread_mutex_lock(&ml->lock);
			ml->cur = i;
			pthread_mutex_unlock(&ml->lock);
			return;
		}
	}
}

wfs_err master_list_request(master_list *ml, const char *method, const char *path_query,
			    const char *const *headers, const void *body, size_t len,
			    long timeout_ms, struct http_result *res, char *used, size_t usedlen)
{
	size_t start = current(ml);
	wfs_err err = WFS_EUNAVAIL;

	for (size_t k = 0; k < ml->n; k++) {
		size_t i = (start + k) % ml->n;
		char *url = xasprintf("http://%s%s", ml->addr[i], path_query);
		if (k > 0) {
			http_result_free(res);
			http_result_init(res);
		}
		err = http_request(method, url, headers, body, len, timeout_ms, res);
		free(url);
		if (used)
			snprintf(used, usedlen, "%s", ml->addr[i]);
		if (!err && res->status < 500) {
			if (i != start) {
				pthread_mutex_lock(&ml->lock);
				ml->cur = i;
				pthread_mutex_unlock(&ml->lock);
			}
			break;
		}
	}
	return err;
}
