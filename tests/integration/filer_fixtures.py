"""Filer daemons for the integration tests: a mini with its filer, or a separate
`weedfs filer` next to a master and a volume server (see conftest.py)."""

import pytest
import requests

from conftest import Daemon, free_port


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
