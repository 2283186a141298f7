"""Filer daemons for the integration tests: a mini with its filer, or a separate
`weedfs filer` next to a master and a volume server (see conftest.py)."""

import itertools

import pytest
import requests

from conftest import Daemon, free_port, wait_until


class Filer:
    """Client helpers bound to one filer's host:port."""

    def __init__(self, daemon, url):
        self.daemon = daemon
        self.url = url

    def u(self, path):
        return "http://%s%s" % (self.url, path)

    def put(self, path, data, params=None, headers=None):
        return requests.put(self.u(path), data=data, params=params, headers=headers, timeout=120)

    def get(self, path, params=None, headers=None, stream=False):
        return requests.get(self.u(path), params=params, headers=headers, timeout=120,
                            stream=stream)

    def post(self, path, params=None, **kw):
        return requests.post(self.u(path), params=params, timeout=120, **kw)

    def delete(self, path, params=None):
        return requests.delete(self.u(path), params=params, timeout=120)

    def meta(self, path):
        r = self.get(path, params={"metadata": "true"})
        assert r.status_code == 200, "%s: %s %s" % (path, r.status_code, r.text)
        return r.json()

    def names(self, path, **params):
        r = self.get(path, params=params, headers={"Accept": "application/json"})
        assert r.status_code == 200, r.text
        return [e["FullPath"].rsplit("/", 1)[1] for e in (r.json()["Entries"] or [])]

    def gc_pass(self, timeout=30):
        """Returns once the filer's garbage worker has tried to delete every chunk id
        that was due when this was called, so a chunk that still answers 200 afterwards
        survived a pass rather than waited for one. Returns the number of blob deletes
        it caused (2), for tests that count a volume server's deletes.

        Each canary is a file of its own with one chunk, deleted at once; its blob
        answering 404 means the worker took a batch after the canary was queued. One
        canary is not enough: the ids of one batch are deleted in no particular order,
        so the canary may go before an id of the same batch. The second canary is queued
        only after the first is gone, so the batch that takes it comes after the first
        one's batch has run to the end (one worker, batches in turn). Sound while fewer
        than a batch (256) of ids are due and one filer's worker serves the queue."""
        for _ in range(2):
            a = self.api("assign", {})["fids"][0]
            blob = "http://%s/%s" % (a["url"], a["fid"])
            r = requests.post(blob, files={"file": ("canary", b"gc canary")}, timeout=30)
            assert r.status_code in (200, 201), "canary upload: %s %s" % (r.status_code, r.text)
            path = "/.gc-canary-%d" % next(_canaries)
            self.api("create", {"entry": {"path": path, "mode": 0o100644, "chunks": [
                {"fileId": a["fid"], "offset": 0, "size": 9, "mtimeNs": 1}]}})
            self.api("delete", {"path": path})
            wait_until(lambda: requests.get(blob, timeout=10).status_code == 404, timeout,
                       "the garbage worker to delete canary %s" % a["fid"])
        return 2

    def api(self, op, body):
        """POST /.api/v1/<op> with a JSON body; asserts success and returns the answer."""
        r = self.post("/.api/v1/" + op, json=body)
        assert r.status_code in (200, 201), "%s %s: %s %s" % (op, body, r.status_code, r.text)
        return r.json()


_canaries = itertools.count()


def start_mini_with_filer(cluster, extra=()):
    m = cluster.mini(extra=["-pulseSeconds=1"] + list(extra))
    return m, Filer(m, "127.0.0.1:%d" % m.filer_port)


def start_filer(cluster, master, extra=(), port=None, fdir=None):
    port = port or free_port()
    d = fdir or cluster._dir("filer")
    args = ["filer", "-ip=127.0.0.1", "-port=%d" % port, "-master=%s" % master.url,
            "-dir=%s" % d] + list(extra)
    f = Daemon("filer-%d" % port, args, d, "127.0.0.1:%d" % port)
    f.port, f.dir = port, d
    cluster.daemons.append(f)
    f.start()
    return Filer(f, f.url)


@pytest.fixture(scope="module")
def mini_filer(module_cluster):
    """One mini (master, volume server, filer with -filer.maxMB=1) shared by a module."""
    _, f = start_mini_with_filer(module_cluster, extra=["-filer.maxMB=1"])
    return f
