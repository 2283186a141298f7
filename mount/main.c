/*
 * weedfs-mount: the cluster as a POSIX directory through FUSE (docs/mount.md,
 * man/weedfs-mount.1).
 *
 * DESIGN: main parses the Go-style flags, builds the filer client
 * (filer_rpc), the data path (mount_data), the inode table and the FUSE
 * session (low-level API, default_permissions, 1 MiB writes), starts the
 * event follower and runs the multi-threaded loop. SIGTERM, SIGINT and SIGHUP
 * end the loop (our handlers, see on_stop_signal); then every dirty open file is committed
 * before the file system is unmounted, so stopping a mount never drops data
 * that could still be written.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "client/filer_meta.h"
#include "flags.h"
#include "fuse_locks.h"
#include "fuse_ops.h"
#include "http_client.h"
#include "chunk_cache.h"
#include "file_data.h"
#include "daemon.h"
#include "log.h"
#include "security.h"
#include "meta_follower.h"
#include "metrics.h"
#include "util.h"

static const char summary[] =
	"Mounts the filer's namespace (or the subtree -filer.path) at MOUNTPOINT through FUSE.\n"
	"Data goes straight to and from the volume servers; a chunk cache in memory and in\n"
	"-cacheDir serves repeated reads. Stop it with fusermount3 -u MOUNTPOINT or SIGTERM\n"
	"(dirty data is committed first).\n"
	"Usage: weedfs-mount -filer=HOST:PORT [flags] [-o opt,opt] MOUNTPOINT";

struct opts {
	const char *filer, *filer_path, *cache_dir, *collection, *replication, *ttl, *level;
	const char *security_file;
	long long cache_mb, mem_mb, chunk_mb, dirty_mb, inline_kb;
	double entry_timeout, attr_timeout;
	bool writeback, foreground, allow_other, read_only, noatime, short_circuit;
	int retry_seconds, timeout_seconds, threads, commit_seconds, lock_lease_seconds;
	int metrics_port;
	struct flag_list o;
};

/* What the metrics port reports: the data path's counters and where the mount is. */
struct mount_metrics {
	mount_data *md;
	const char *filer, *root, *mountpoint;
};

static void mount_collect(metric_emit *e, void *ctx)
{
	struct mount_metrics *mm = ctx;
	struct mount_data_stats st;
	struct chunk_cache_stats cs;
	mount_data_get_stats(mm->md, &st);
	mount_data_cache_stats(mm->md, &cs);
	metric_emit_sample(e, "weedfs_mount_chunk_cache_hits_total",
			   "Chunk reads served by the chunk cache.", METRIC_COUNTER,
			   (double)cs.mem_hits, "tier", "memory", NULL);
	metric_emit_sample(e, "weedfs_mount_chunk_cache_hits_total", NULL, METRIC_COUNTER,
			   (double)cs.disk_hits, "tier", "disk", NULL);
	metric_emit_sample(e, "weedfs_mount_chunk_cache_misses_total",
			   "Chunk reads the cache could not serve.", METRIC_COUNTER,
			   (double)cs.misses, NULL);
	metric_emit_sample(e, "weedfs_mount_chunk_cache_bytes", "Bytes the chunk cache holds.",
			   METRIC_GAUGE, (double)cs.mem_bytes, "tier", "memory", NULL);
	metric_emit_sample(e, "weedfs_mount_chunk_cache_bytes", NULL, METRIC_GAUGE,
			   (double)cs.disk_bytes, "tier", "disk", NULL);
	metric_emit_sample(e, "weedfs_mount_dirty_bytes", "Written bytes not yet uploaded.",
			   METRIC_GAUGE, (double)st.dirty, NULL);
	metric_emit_sample(e, "weedfs_mount_read_bytes_total", "Bytes read from volume servers.",
			   METRIC_COUNTER, (double)st.fetched_bytes, NULL);
	metric_emit_sample(e, "weedfs_mount_written_bytes_total",
			   "Bytes of chunks uploaded to volume servers.", METRIC_COUNTER,
			   (double)st.uploaded_bytes, NULL);
}

static void mount_page(buf *out, bool json, void *ctx)
{
	struct mount_metrics *mm = ctx;
	const struct metrics_status_item items[] = {
		{"Mountpoint", mm->mountpoint},
		{"Filer", mm->filer},
		{"FilerPath", mm->root},
	};
	metrics_status_write(out, json, "mount", items, ARRAY_LEN(items), &mm->filer, 1);
}

/* Canonical form of -filer.path: absolute, no trailing or doubled slash. */
static char *canonical_root(const char *p)
{
	buf b;
	const char *s = p;

	if (!p || p[0] != '/')
		return NULL;
	buf_init(&b);
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')) {
			buf_free(&b);
			return NULL;
		}
		buf_append_byte(&b, '/');
		buf_append(&b, s, len);
		s += len;
	}
	if (!b.len)
		buf_append_byte(&b, '/');
	buf_append_byte(&b, '\0');
	return buf_steal(&b, NULL);
}

/*
 * libfuse's loop notices the session's exit flag only when a signal interrupts
 * one of its own threads (the main thread sleeps in sem_wait, the workers in
 * read). libfuse's handler just raises the flag, so a stop signal the kernel
 * hands to any other thread (event follower, commit, lock renewal, pool
 * workers, curl's resolver) left the mount running. Ours passes it on to the
 * loop's thread, whose sem_wait it interrupts.
 */
static struct fuse_session *stop_session;
static pthread_t loop_thread;

static void on_stop_signal(int sig)
{
	fuse_session_exit(stop_session);
	if (!pthread_equal(pthread_self(), loop_thread))
		pthread_kill(loop_thread, sig);
}

/*
 * With se: installs the handlers (called by the thread that will run the
 * loop). With NULL: back to the defaults (se stays known to a handler still
 * running).
 */
static void stop_signals_install(struct fuse_session *se)
{
	static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa = {0};
	bool on = se != NULL;

	if (on) {
		stop_session = se;
		loop_thread = pthread_self();
	}
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on ? on_stop_signal : SIG_DFL;
	for (size_t i = 0; i < ARRAY_LEN(stops); i++)
		sigaction(stops[i], &sa, NULL);
	sa.sa_handler = on ? SIG_IGN : SIG_DFL;
	sigaction(SIGPIPE, &sa, NULL);
}

static uint64_t random_id(void)
{
	uint64_t v = time_now_ns() ^ ((uint64_t)getpid() << 32);
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			v ^= time_mono_ns();
		close(fd);
	}
	return v;
}

/* The filer client, its requests signed with the mount's signature (events it caused). */
static filer_rpc *new_rpc(const struct opts *o, const struct mount_ctx *m)
{
	return filer_rpc_new(o->filer, (long)o->timeout_seconds * 1000,
			     o->retry_seconds ? o->retry_seconds : 1, m->signature);
}

int main(int argc, char **argv)
{
	struct opts o = {
		.filer = "127.0.0.1:8888",
		.filer_path = "/",
		.level = "info",
		.cache_mb = 1024,
		.mem_mb = 128,
		.chunk_mb = 4,
		.dirty_mb = 256,
		.inline_kb = 4,
		.entry_timeout = 1,
		.attr_timeout = 1,
		.foreground = true,
		.retry_seconds = 30,
		.timeout_seconds = 30,
		.commit_seconds = 30,
		.lock_lease_seconds = 15,
		.short_circuit = true,
	};
	const struct flag flags[] = {
		{"filer", FLAG_STRING, &o.filer, "the filer, HOST:PORT"},
		{"filer.path", FLAG_STRING, &o.filer_path, "the filer directory to mount"},
		{"cacheDir", FLAG_STRING, &o.cache_dir, "persistent chunk cache directory (none)"},
		{"cacheCapacityMB", FLAG_I64, &o.cache_mb, "capacity of -cacheDir in MiB"},
		{"memCacheMB", FLAG_I64, &o.mem_mb, "chunk cache in memory, MiB"},
		{"chunkSizeMB", FLAG_I64, &o.chunk_mb, "size of uploaded chunks, MiB"},
		{"dirtyMB", FLAG_I64, &o.dirty_mb, "unwritten data the mount holds; writers wait"},
		{"inlineKB", FLAG_I64, &o.inline_kb,
		 "files up to this size are kept in their filer entry, not in chunks (0..64)"},
		{"entryTimeout", FLAG_DOUBLE, &o.entry_timeout, "kernel name cache, seconds"},
		{"attrTimeout", FLAG_DOUBLE, &o.attr_timeout, "kernel attribute cache, seconds"},
		{"writebackCache", FLAG_BOOL, &o.writeback, "kernel writeback cache"},
		{"collection", FLAG_STRING, &o.collection, "collection of new chunks"},
		{"replication", FLAG_STRING, &o.replication, "replication of new chunks"},
		{"ttl", FLAG_STRING, &o.ttl, "time to live of new chunks"},
		{"retrySeconds", FLAG_INT, &o.retry_seconds,
		 "how long a call retries an unreachable filer before EIO"},
		{"timeoutSeconds", FLAG_INT, &o.timeout_seconds, "timeout of one filer request"},
		{"commitSeconds", FLAG_INT, &o.commit_seconds,
		 "files dirty this long are committed without a close or fsync (0 = never)"},
		{"threads", FLAG_INT, &o.threads, "FUSE worker threads at most (0 = 16)"},
		{"shortCircuit", FLAG_BOOL, &o.short_circuit,
		 "read blobs of volume servers on this host from their files (a Unix socket), not over HTTP"},
		{"lockLeaseSeconds", FLAG_INT, &o.lock_lease_seconds,
		 "the filer frees this mount's locks and hidden files this long after it died"},
		{"metricsPort", FLAG_INT, &o.metrics_port,
		 "serve /metrics and a status page on 127.0.0.1:PORT (0 = none)"},
		{"foreground", FLAG_BOOL, &o.foreground, "stay in the foreground"},
		{"allowOthers", FLAG_BOOL, &o.allow_other, "let other users in (-o allow_other)"},
		{"readOnly", FLAG_BOOL, &o.read_only, "mount read-only (-o ro)"},
		{"noatime", FLAG_BOOL, &o.noatime, "reads do not update the atime (-o noatime)"},
		{"o", FLAG_LIST, &o.o, "FUSE mount options (allow_other, ro, ...)"},
		{"security", FLAG_STRING, &o.security_file, SECURITY_FLAG_HELP},
		{"v", FLAG_STRING, &o.level, "log level: error, warn, info or debug"},
	};
	struct mount_ctx m;
	struct mount_data_opts mdo;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	struct fuse_loop_config *lc = NULL;
	meta_follower *mf = NULL;
	filer_rpc *rpc = NULL;
	mount_data *md = NULL;
	itable *it = NULL;
	struct mount_metrics mm = {0};
	metrics_server *ms = NULL;
	metric_collector *collector = NULL;
	const char *mountpoint = NULL;
	char *root = NULL, *fsname = NULL;
	wfs_err err = WFS_OK;
	buf opt;
	int npos, rc, lvl, status = 1;

	memset(&m, 0, sizeof(m));
	buf_init(&opt);
	rc = flags_parse(flags, ARRAY_LEN(flags), argc - 1, argv + 1, "weedfs-mount", summary,
			 &npos);
	if (rc)
		return rc > 0 ? 0 : 2;
	npos++; /* index into argv */
	if (npos < argc)
		mountpoint = argv[npos++];
	/* flags may also follow the mount point (mount(8) helpers put -o last) */
	if (npos < argc) {
		int more;
		rc = flags_parse(flags, ARRAY_LEN(flags), argc - npos, argv + npos, "weedfs-mount",
				 summary, &more);
		if (rc)
			return rc > 0 ? 0 : 2;
		if (more != argc - npos) {
			fprintf(stderr, "weedfs-mount: unexpected argument \"%s\"\n",
				argv[npos + more]);
			return 2;
		}
	}
	if (!mountpoint) {
		fprintf(stderr, "weedfs-mount: a MOUNTPOINT is required (see weedfs-mount -h)\n");
		return 2;
	}
	lvl = log_parse_level(o.level);
	if (lvl < 0) {
		fprintf(stderr, "weedfs-mount: bad -v \"%s\"\n", o.level);
		return 2;
	}
	log_set_level((enum log_level)lvl);
	log_set_prefix("mount");
	if (daemon_load_security("mount", flags, ARRAY_LEN(flags)) >= 0)
		return 2;
	root = canonical_root(o.filer_path);
	if (!root) {
		fprintf(stderr, "weedfs-mount: -filer.path must be an absolute path\n");
		return 2;
	}
	if (o.entry_timeout < 0 || o.attr_timeout < 0 || o.chunk_mb < 1 || o.dirty_mb < 1 ||
	    o.mem_mb < 0 || o.cache_mb < 0 || o.retry_seconds < 0 || o.timeout_seconds < 1 ||
	    o.inline_kb < 0 || o.inline_kb > 64 || o.commit_seconds < 0 ||
	    o.lock_lease_seconds < 1 || o.lock_lease_seconds > 3600) {
		fprintf(stderr, "weedfs-mount: a size or time flag is out of range\n");
		free(root);
		return 2;
	}
	/* checked before mounting: after the fork an error would go unseen */
	if (!metrics_port_valid(o.metrics_port) ||
	    (o.metrics_port && !metrics_port_probe("127.0.0.1", o.metrics_port))) {
		free(root);
		return 2;
	}

	http_client_global_init();
	m.mount_id = random_id();
	m.signature = (int32_t)(m.mount_id >> 34) + 1; /* 1..2^30: never 0 */
	rpc = new_rpc(&o, &m);
	memset(&mdo, 0, sizeof(mdo));
	mdo.filer = o.filer;
	mdo.chunk_size = (uint64_t)o.chunk_mb << 20;
	mdo.dirty_max = (uint64_t)o.dirty_mb << 20;
	mdo.inline_max = (uint64_t)o.inline_kb << 10;
	mdo.timeout_ms = (long)o.timeout_seconds * 1000;
	mdo.short_circuit_off = !o.short_circuit;
	mdo.mem_cache_bytes = (uint64_t)o.mem_mb << 20;
	mdo.cache_dir = o.cache_dir && *o.cache_dir ? o.cache_dir : NULL;
	mdo.cache_disk_bytes = (uint64_t)o.cache_mb << 20;
	mdo.collection = o.collection && *o.collection ? o.collection : NULL;
	mdo.replication = o.replication && *o.replication ? o.replication : NULL;
	mdo.ttl = o.ttl && *o.ttl ? o.ttl : NULL;
	/* chunks go straight to the volume servers: sealed when the filer seals its own */
	err = filer_rpc_configuration(rpc, &mdo.cipher);
	if (err) {
		log_error("filer %s: its configuration: %s", o.filer, wfs_strerror(err));
		goto out;
	}
	if (mdo.cipher)
		log_info("the filer encrypts volume data: chunks written here are sealed");
	/* the data path starts threads: in the background, only after the fork */
	if (o.foreground) {
		md = mount_data_new(&mdo, &err);
		if (!md) {
			log_error("could not set up the data path: %s", wfs_strerror(err));
			goto out;
		}
	}
	/* the root must be a directory in the filer */
	{
		struct filer_entry *e = NULL;
		err = filer_meta_lookup(rpc, root, &e);
		if (!err && !S_ISDIR(e->attr.mode))
			err = WFS_ENOTDIR;
		if (err) {
			filer_entry_free(e);
			log_error("filer %s: %s: %s", o.filer, root, wfs_strerror(err));
			goto out;
		}
		filer_entry_free(e);
	}
	it = itable_new(root);

	m.rpc = rpc;
	m.md = md;
	m.it = it;
	m.root = root;
	m.entry_timeout = o.entry_timeout;
	m.attr_timeout = o.attr_timeout;
	m.attr_cache_ns = (uint64_t)(o.attr_timeout * 1e9);
	/* while the follower is connected, the mount's entries stay until an event */
	m.follow_cache_ns = m.attr_cache_ns > 300000000000ull ? m.attr_cache_ns : 300000000000ull;
	atomic_init(&m.following, false);
	m.writeback_cache = o.writeback;
	m.commit_age_ns = (uint64_t)o.commit_seconds * 1000000000ull;
	pthread_mutex_init(&m.trash_mu, NULL);
	pthread_mutex_init(&m.fh_mu, NULL);

	fsname = xasprintf("weedfs:%s%s", o.filer, root);
	fuse_opt_add_arg(&args, "weedfs-mount");
	buf_printf(&opt, "default_permissions,fsname=%s,subtype=weedfs", fsname);
	if (o.allow_other)
		buf_append_str(&opt, ",allow_other");
	if (o.read_only)
		buf_append_str(&opt, ",ro");
	if (o.noatime) {
		buf_append_str(&opt, ",noatime");
		m.noatime = true;
	}
	for (int i = 0; i < o.o.n; i++) {
		/* mount(8) passes these; the kernel and libfuse would refuse some */
		if (!strcmp(o.o.v[i], "rw") || !strcmp(o.o.v[i], "dev") ||
		    !strcmp(o.o.v[i], "suid") || !strcmp(o.o.v[i], "exec") ||
		    !strcmp(o.o.v[i], "auto") || !strcmp(o.o.v[i], "noauto") ||
		    !strcmp(o.o.v[i], "_netdev") || !strcmp(o.o.v[i], "user") ||
		    !strcmp(o.o.v[i], "nouser") || !strcmp(o.o.v[i], "defaults") ||
		    !strcmp(o.o.v[i], "relatime"))
			continue;
		/* also the kernel's mount flag (MS_NOATIME), so mount(8) shows it */
		if (!strcmp(o.o.v[i], "noatime"))
			m.noatime = true;
		buf_printf(&opt, ",%s", o.o.v[i]);
	}
	buf_append_byte(&opt, '\0');
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opt.data);

	se = fuse_session_new(&args, fuse_ops_table(), sizeof(*fuse_ops_table()), &m);
	if (!se) {
		log_error("bad FUSE options \"%s\"", opt.data);
		goto out;
	}
	m.se = se;
	stop_signals_install(se);
	if (fuse_session_mount(se, mountpoint)) {
		log_error("could not mount on %s", mountpoint);
		goto out_signals;
	}
	log_info("mounted %s%s on %s (filer requests signed %d)", o.filer, root, mountpoint,
		 (int)m.signature);
	if (!o.foreground) {
		/* its connection reaper is a thread, which would not survive the fork */
		filer_rpc_free(rpc);
		rpc = m.rpc = NULL;
	}
	if (fuse_daemonize(o.foreground)) {
		log_error("could not go to the background");
		goto out_unmount;
	}
	if (!rpc)
		rpc = m.rpc = new_rpc(&o, &m);
	if (!md) {
		md = mount_data_new(&mdo, &err);
		if (!md) {
			log_error("could not set up the data path: %s", wfs_strerror(err));
			goto out_unmount;
		}
		m.md = md;
	}
	mm.md = md;
	mm.filer = o.filer;
	mm.root = root;
	mm.mountpoint = mountpoint;
	if (o.metrics_port) {
		ms = metrics_server_start("127.0.0.1", o.metrics_port, mount_page, &mm, &err);
		if (!ms)
			goto out_unmount;
		collector = metrics_collector_add(mount_collect, &mm);
	}
	mf = meta_follower_start(&m, o.filer);
	fuse_ops_start(&m);
	fuse_locks_start(&m, (unsigned)o.lock_lease_seconds);

	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(lc, o.threads > 0 ? (unsigned)o.threads : 16);
	fuse_loop_cfg_set_clone_fd(lc, 0);
	rc = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);

	/* the loop has stopped (signal or fusermount3 -u): commit what is dirty */
	meta_follower_stop(mf);
	mf = NULL;
	fuse_ops_stop(&m);
	status = fuse_ops_flush_all(&m) ? 1 : (rc < 0 ? 1 : 0);
	/* gives this mount's locks back at once; the filer deletes what it still hides */
	fuse_locks_stop(&m);
	log_info("unmounting %s", mountpoint);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	stop_signals_install(NULL);
out:
	metrics_server_stop(ms);
	metrics_collector_remove(collector);
	meta_follower_stop(mf);
	if (se)
		fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	if (it) {
		fuse_ops_drop_all(&m);
		pthread_mutex_destroy(&m.trash_mu);
		pthread_mutex_destroy(&m.fh_mu);
	}
	itable_free(it);
	mount_data_free(md);
	filer_rpc_free(rpc);
	flag_list_free(&o.o);
	buf_free(&opt);
	free(fsname);
	free(root);
	return status;
}
