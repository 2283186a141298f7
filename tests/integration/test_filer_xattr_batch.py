"""setXattrs (docs/api-filer-json.md): several attribute changes over several entries
in one filer transaction, all or nothing, each with an optional ifEtag; how the Iceberg
catalog commits several tables at once. On SQLite and PostgreSQL, one filer and two
filers sharing PostgreSQL, under 16 racing clients, with its events and its bad input."""

import base64
import random
import threading

import pytest
import requests

from filer_fixtures import mini_filer, start_filer  # noqa: F401 - pytest fixture
from test_filer_events import kind
from test_filer_json_api import (b64, call, err, events_of, mkdir, mkfile, ok,  # noqa: F401
                                 store_filer)
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)


def xattr(f, path, name):
    """The value of attribute name at path (None when absent) and the entry's etag."""
    e = ok(f, "lookup", {"path": path})
    v = (e.get("xattrs") or {}).get(name)
    return (None if v is None else v), e["etag"]


def op(path, name, value=None, if_etag=None, flags=None):
    o = {"path": path, "name": name}
    if value is not None:
        o["value"] = b64(value)
    if if_etag:
        o["ifEtag"] = if_etag
    if flags is not None:
        o["flags"] = flags
    return o


def tables(f, base, n):
    """n table directories under base, each with a metadata pointer; their etags."""
    mkdir(f, base)
    out = []
    for i in range(n):
        mkdir(f, "%s/t%d" % (base, i))
        e = ok(f, "setXattr", {"path": "%s/t%d" % (base, i), "name": "user.meta",
                               "value": b64(b"v0")})
        out.append(e["etag"])
    return out


def refusals(f, etags):
    """Batches that must change nothing, each refused naming its op."""
    stale = etags[:]
    stale[1] = "0123456789abcdef"
    body = {"ops": [op("/cat/t%d" % i, "user.meta", b"v1", stale[i]) for i in range(3)]}
    assert err(f, "setXattrs", body, 412, "EPRECOND")["index"] == 1
    for i in range(3):
        assert xattr(f, "/cat/t%d" % i, "user.meta") == (b64(b"v0"), etags[i])
    # a missing path: 404 with its index
    body = {"ops": [op("/cat/t0", "user.meta", b"v1", etags[0]),
                    op("/cat/t1", "user.meta", b"v1", etags[1]),
                    op("/cat/none", "user.meta", b"v1")]}
    assert err(f, "setXattrs", body, 404, "ENOENT")["index"] == 2
    # a refusal of an op itself (create of an existing name; remove of a missing one)
    body = {"ops": [op("/cat/t0", "user.meta", b"v1", etags[0]),
                    op("/cat/t2", "user.meta", b"v1", flags="create")]}
    assert err(f, "setXattrs", body, 409, "EEXIST")["index"] == 1
    body = {"ops": [op("/cat/t1", "user.meta", b"v1"), op("/cat/t2", "user.nope")]}
    assert err(f, "setXattrs", body, 404, "ENODATA")["index"] == 1
    for i in range(3):
        assert xattr(f, "/cat/t%d" % i, "user.meta") == (b64(b"v0"), etags[i])


def test_all_or_nothing(store_filer):
    """One stale etag of three: 412 naming its op, nothing changes and no event is
    logged; with the right etags all three swap at once, one event each."""
    f = store_filer
    etags = tables(f, "/cat", 3)
    got = {}

    def action():
        refusals(f, etags)
        # all three, plus a second attribute of t0 and a remove: each entry once
        body = {"ops": [op("/cat/t2", "user.meta", b"v1", etags[2]),
                        op("/cat/t0", "user.meta", b"v1", etags[0]),
                        op("/cat/t1", "user.next", b"v1", etags[1]),
                        op("/cat/t0", "user.prev", b"v0", etags[0], flags="create"),
                        op("/cat/t1", "user.meta")]}
        got["etags"] = ok(f, "setXattrs", body)["etags"]

    # the refused batches logged nothing: the first events are the batch's
    evs = events_of(f, "/cat/", action, 3)
    assert [kind(e) for e in evs] == [("update", "/cat/t%d" % i) for i in range(3)]
    assert [(e["newEntry"].get("xattrs") or {}).get("user.meta") for e in evs] == [
        b64(b"v1"), None, b64(b"v1")]
    now = [xattr(f, "/cat/t%d" % i, "user.meta") for i in range(3)]
    assert now[0][0] == now[2][0] == b64(b"v1") and now[1][0] is None
    assert xattr(f, "/cat/t0", "user.prev")[0] == b64(b"v0")
    assert xattr(f, "/cat/t1", "user.next")[0] == b64(b"v1")
    assert got["etags"] == [now[2][1], now[0][1], now[1][1], now[0][1], now[1][1]]
    assert len(set(got["etags"])) == 3 and not set(got["etags"]) & set(etags)
    # the old etags are stale now
    body = {"ops": [op("/cat/t0", "user.meta", b"v2", etags[0])]}
    assert err(f, "setXattrs", body, 412, "EPRECOND")["index"] == 0


def commit_rounds(f, paths, me, rounds, log, rng):
    """A client's rounds: read the counters of a few of paths, then bump each by one
    in one batch conditional on the etags read. Logs (paths, status) per batch."""
    for _ in range(rounds):
        mine = rng.sample(paths, rng.randint(2, 4))  # its own order
        ops = []
        for p in mine:
            v, etag = xattr(f, p, "user.n")
            n = int(base64.b64decode(v))
            ops.append(op(p, "user.n", b"%d" % (n + 1), etag))
            ops.append(op(p, "user.last", b"%d" % me))
        r = call(f, "setXattrs", {"ops": ops})
        log.append((tuple(mine), r.status_code, r.text))


def race(filers, base, clients=16, rounds=6):
    """clients threads (spread over filers) commit overlapping batches in different
    orders; every batch is applied whole or refused whole (412), none deadlocks, and
    each counter ends as the number of applied batches that named it."""
    f0 = filers[0]
    mkdir(f0, base)
    paths = ["%s/t%d" % (base, i) for i in range(6)]
    for p in paths:
        mkdir(f0, p)
        ok(f0, "setXattr", {"path": p, "name": "user.n", "value": b64(b"0")})
    log = []
    barrier = threading.Barrier(clients)

    def worker(i):
        barrier.wait()
        commit_rounds(filers[i % len(filers)], paths, i, rounds, log, random.Random(i))

    ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    [t.start() for t in ts]
    for t in ts:
        t.join(timeout=120)
        assert not t.is_alive(), "a batch hangs"
    assert len(log) == clients * rounds
    assert all(s in (200, 412) for _, s, _ in log), [x for x in log if x[1] not in (200, 412)]
    applied = [p for p, s, _ in log if s == 200]
    assert applied and len(applied) < len(log)  # they did race
    for p in paths:
        v, _ = xattr(f0, p, "user.n")
        assert int(base64.b64decode(v)) == sum(p in a for a in applied), p
    return log


def test_race_16(store_filer):
    race([store_filer], "/race")


def test_race_two_filers_on_postgres(cluster, pg):  # noqa: F811
    """Two filers on one PostgreSQL database: the conditions hold across them too
    (the store locks the rows it reads, in one order)."""
    m = cluster.master()
    assert cluster.volume(m)
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    fa = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    fb = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    race([fa, fb], "/race2")


def test_limits(mini_filer):
    """The limits of setXattr: 4096 attributes per entry (the batch that would pass it
    is refused whole), a value of 1 MiB, the body's 8 MiB."""
    f = mini_filer
    mkdir(f, "/lim")
    full = {"user.%04d" % i: b64(b"x") for i in range(4095)}
    e = ok(f, "create", {"entry": {"path": "/lim/f", "mode": 0o100644, "xattrs": full}})
    mkfile(f, "/lim/g")
    body = {"ops": [op("/lim/g", "user.a", b"1"), op("/lim/f", "user.a", b"1"),
                    op("/lim/f", "user.b", b"1")]}
    j = err(f, "setXattrs", body, 507, "ENOSPC")
    assert j["index"] == 2, j
    assert xattr(f, "/lim/g", "user.a")[0] is None
    assert xattr(f, "/lim/f", "user.a") == (None, e["etag"])
    body["ops"].pop()
    ok(f, "setXattrs", body)
    mib = b"\xa5" * (1 << 20)
    got = ok(f, "setXattrs", {"ops": [op("/lim/g", "user.big", mib)]})["etags"]
    assert xattr(f, "/lim/g", "user.big") == (b64(mib), got[0])
    err(f, "setXattrs", {"ops": [op("/lim/g", "user.big", mib + b"x")]}, 400, "EINVAL")
    # nine values of 1 MiB: over the body's 8 MiB
    r = call(f, "setXattrs", {"ops": [op("/lim/g", "user.b%d" % i, mib) for i in range(9)]})
    assert r.status_code == 413, (r.status_code, r.text[:200])
    assert xattr(f, "/lim/g", "user.b0")[0] is None


BAD = [
    "{}",
    '{"ops": []}',
    '{"ops": {}}',
    '{"ops": [5]}',
    '{"ops": [{"path": "/bad/f", "name": "k", "value": "djE="}], "path": "/bad/f"}',
    '{"ops": [{"path": "/bad/f", "name": "k", "value": "djE=", "color": 1}]}',
    '{"ops": [{"path": "/bad/f", "name": "k", "value": "!!"}]}',
    '{"ops": [{"path": "/bad/f", "name": "k", "value": "djE="}, '
    '{"path": "/bad/f", "name": "k"}]}',
    '{"ops": [{"path": "/bad/f", "name": "", "value": "djE="}]}',
    '{"ops": [{"path": "/bad/f", "value": "djE="}]}',
    '{"ops": [{"path": "/bad/../f", "name": "k", "value": "djE="}]}',
    '{"ops": [{"path": "/bad/f", "name": "k", "value": "djE=", "ifEtag": "xyz"}]}',
    '{"ops": [{"path": "/bad/f", "name": "k", "value": "djE=", "flags": "both"}]}',
    '{"ops": [{"path": "/bad/f", "name": "k", "flags": "create"}]}',
    '{"ops": [{"path": "/bad/f", "name": "%s", "value": "djE="}]}' % ("n" * 256),
    '{"ops": [%s]}' % ",".join(['{"path": "/bad/f", "name": "k%d", "value": "djE="}' % i
                                for i in range(65)]),
    '{"ops": [{"path": "/bad/f", "name": "k", "value": "djE="}',
]


@pytest.fixture(scope="module")
def bad_file(mini_filer):
    mkdir(mini_filer, "/bad")
    mkfile(mini_filer, "/bad/f")
    return xattr(mini_filer, "/bad/f", "k")[1]


@pytest.mark.parametrize("body", BAD)
def test_bad_input_400(mini_filer, bad_file, body):
    r = call(mini_filer, "setXattrs", None, raw=body.encode())
    assert r.status_code == 400, (body[:200], r.status_code, r.text)
    assert r.json()["code"] == "EINVAL" and r.json()["error"]
    assert xattr(mini_filer, "/bad/f", "k") == (None, bad_file)


def test_64_ops_and_bytes_paths(mini_filer):
    """64 ops, the most one batch takes, over paths that are not UTF-8 (pathB64)."""
    f = mini_filer
    mkdir(f, "/many")
    paths = [b"/many/f\xff%02d" % i for i in range(8)]
    for p in paths:
        ok(f, "create", {"entry": {"pathB64": b64(p), "mode": 0o100644}})
    ops = [{"pathB64": b64(paths[i % 8]), "name": "user.k%d" % i, "value": b64(b"%d" % i)}
           for i in range(64)]
    got = ok(f, "setXattrs", {"ops": ops})["etags"]
    assert len(got) == 64 and len(set(got)) == 8
    for i, p in enumerate(paths):
        e = ok(f, "lookup", {"pathB64": b64(p)})
        assert e["etag"] == got[i] and len(e["xattrs"]) == 8
    assert requests.post(f.u("/.api/v1/setXattrs"), data=b"{}", timeout=10).status_code == 400
