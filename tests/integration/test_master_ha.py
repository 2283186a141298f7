"""Several masters on one PostgreSQL (docs/master-ha.md): one leader chosen through
the lease row, followers that proxy to it, volume servers that follow it, and a
failover that never hands out a file id twice: after kill -9 of the leader, and
after a leader paused (SIGSTOP) past its lease comes back (SIGCONT) believing
nothing happened. Real masters, a real volume server, a private PostgreSQL."""

import os
import subprocess
import threading
import time

import requests

from conftest import WEEDFS, Daemon, free_port, wait_until
from filer_fixtures import start_filer
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)

LEASE = 1.5  # seconds; renewed every 0.5 s


def dsn(pg):  # noqa: F811
    return "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port


def start_masters(cluster, pg, n=3, lease=LEASE, ports=None):  # noqa: F811
    ports = ports or [free_port() for _ in range(n)]
    peers = ",".join("127.0.0.1:%d" % p for p in ports)
    ms = [cluster.master(port=p, extra=["-peers=" + peers, "-postgres.dsn=" + dsn(pg),
                                        "-leaseSeconds=%g" % lease]) for p in ports]
    return ms, peers


def status(m, timeout=2):
    r = requests.get("http://%s/cluster/status" % m.url, timeout=timeout)
    assert r.status_code == 200, r.text
    return r.json()


def agreed_leader(ms):
    """The master every one of ms calls the leader, when exactly one says it is."""
    sts = [status(m) for m in ms]
    leaders = [m for m, s in zip(ms, sts) if s["IsLeader"]]
    if len(leaders) != 1 or any(s["Leader"] != leaders[0].url for s in sts):
        return None
    return leaders[0]


def ha_cluster(cluster, pg):  # noqa: F811
    ms, peers = start_masters(cluster, pg)
    lead = wait_until(lambda: agreed_leader(ms), 20, "one agreed leader")
    v = cluster.volume(lead, extra=["-mserver=" + peers])
    return ms, peers, lead, v


def assign(m, timeout=5):
    return requests.get("http://%s/dir/assign" % m.url, timeout=timeout)


def fid_key(fid):
    """The key of a file id: unique across the cluster whatever the volume."""
    return int(fid.split(",", 1)[1][:-8], 16)


class Writer(threading.Thread):
    """Assigns and writes in a loop through any master, moving on when one fails."""

    def __init__(self, masters):
        super().__init__(daemon=True)
        self.masters = list(masters)
        self.skip = set()  # masters not to ask (paused: a request would just wait)
        self.acked = []    # (fid, url, body) of each write the volume server acknowledged
        self.fids = []     # every fid any master handed out
        self.stop = threading.Event()
        self.errors = 0
        self.lock = threading.Lock()

    def run(self):
        i, n = 0, 0
        while not self.stop.is_set():
            ms = [m for m in self.masters if m not in self.skip and m.alive()]
            m = ms[i % len(ms)]
            try:
                r = assign(m, timeout=3)
                if r.status_code != 200:
                    raise RuntimeError(r.text)
                a = r.json()
                with self.lock:
                    self.fids.append(a["fid"])
                body = b"ha-%d-%s" % (n, a["fid"].encode())
                w = requests.post("http://%s/%s" % (a["url"], a["fid"]),
                                  files={"file": ("f", body)}, timeout=5)
                if w.status_code in (200, 201):
                    with self.lock:
                        self.acked.append((a["fid"], a["url"], body))
                n += 1
            except Exception:  # noqa: BLE001 - a master going away mid-request
                self.errors += 1
                i += 1
                time.sleep(0.02)

    def count(self):
        with self.lock:
            return len(self.acked)

    def more(self, n, what):
        """Waits for n more acknowledged writes."""
        target = self.count() + n
        wait_until(lambda: self.count() >= target, 30, "%d writes %s" % (n, what))


def writing(ms, n):
    """A Writer over ms, started, once it has n acknowledged writes."""
    w = Writer(ms)
    w.start()
    w.more(n, "to begin with")
    return w


def check_no_duplicates_and_readable(w):
    keys = [fid_key(f) for f in w.fids]
    assert len(keys) == len(set(keys)), "a file key was handed out twice"
    for fid, url, body in w.acked:
        r = requests.get("http://%s/%s" % (url, fid), timeout=5)
        assert r.status_code == 200 and r.content == body, (fid, r.status_code)


def test_three_masters_elect_one_leader(cluster, pg):  # noqa: F811
    ms, peers = start_masters(cluster, pg)
    lead = wait_until(lambda: agreed_leader(ms), 20, "one agreed leader")
    for m in ms:
        st = status(m)
        assert st["Leader"] == lead.url
        assert sorted(st["Peers"]) == sorted(x.url for x in ms if x is not m)
        metrics = requests.get("http://%s/metrics" % m.url, timeout=2).text
        assert "weedfs_master_is_leader %d" % (m is lead) in metrics
    # a follower stays one: the lease is renewed, not re-elected
    t_end = time.monotonic() + 3 * LEASE
    while time.monotonic() < t_end:
        assert agreed_leader(ms) is lead
        time.sleep(0.1)


def test_follower_proxies_assign_and_refuses_heartbeats(cluster, pg):  # noqa: F811
    ms, peers, lead, v = ha_cluster(cluster, pg)
    follower = next(m for m in ms if m is not lead)
    keys = set()
    for m in (follower, lead, follower):
        r = assign(m)
        assert r.status_code == 200, r.text
        a = r.json()
        assert a["url"] == v.url
        keys.add(fid_key(a["fid"]))
    assert len(keys) == 3
    vid = a["fid"].split(",")[0]
    r = requests.get("http://%s/dir/lookup?volumeId=%s" % (follower.url, vid), timeout=5)
    assert r.status_code == 200 and r.json()["locations"][0]["url"] == v.url
    # a heartbeat to a follower is refused, naming the leader
    r = requests.post("http://%s/heartbeat" % follower.url, data=b"{}", timeout=5)
    assert r.status_code == 503 and r.json()["leader"] == lead.url
    # the topology is the leader's, also when asked through a follower
    assert v.url in requests.get("http://%s/dir/status" % follower.url, timeout=5).text
    assert "connected to master %s" % lead.url in v.log_text()


def test_kill9_leader_during_assigns(cluster, pg):  # noqa: F811
    ms, peers, lead, v = ha_cluster(cluster, pg)
    w = writing(ms, 50)
    try:
        before = w.count()
        t0 = time.monotonic()
        lead.kill9()
        w.skip.add(lead)
        rest = [m for m in ms if m is not lead]
        new = wait_until(lambda: agreed_leader(rest), 20, "a new leader")
        t_leader = time.monotonic() - t0
        wait_until(lambda: w.count() > before + 1, 30, "a write after the kill")
        t_write = time.monotonic() - t0
        w.more(50, "after the kill")
        print("\nnew leader %s %.2f s after kill -9 of %s, first write %.2f s after; %d writes "
              "before, %d after, %d failed tries" % (new.url, t_leader, lead.url, t_write, before,
                                                     w.count() - before, w.errors))
        assert new is not lead and t_leader < 10 * LEASE
        # the fresh leader waited for the heartbeats instead of growing on an empty topology
        assert "grew volume" not in new.log_text()
    finally:
        w.stop.set()
        w.join(10)
    check_no_duplicates_and_readable(w)


def test_paused_leader_never_acts_again(cluster, pg):  # noqa: F811
    ms, peers, lead, v = ha_cluster(cluster, pg)
    w = writing(ms, 30)
    try:
        w.skip.add(lead)
        lead.pause()
        rest = [m for m in ms if m is not lead]
        new = wait_until(lambda: agreed_leader(rest), 20, "a new leader while the old is paused")
        wait_until(lambda: "connected to master %s" % new.url in v.log_text(), 20,
                   "the volume server following the new leader")
        w.more(30, "through the new leader")
        lead.resume()
        # the first thing it says after waking: not the leader
        st = status(lead, timeout=5)
        assert st["IsLeader"] is False, st
        # assigns sent straight to it are proxied to the new leader or refused, never
        # answered from its old batch of keys
        served = 0
        for _ in range(20):
            r = assign(lead, timeout=10)
            assert r.status_code in (200, 503), r.text
            if r.status_code == 200:
                served += 1
                with w.lock:
                    w.fids.append(r.json()["fid"])
        st = wait_until(lambda: (lambda s: s if s["Leader"] == new.url else None)(status(lead)),
                        10, "the old leader naming the new one")
        assert st["IsLeader"] is False
        assert agreed_leader(ms) is new
        print("\nafter SIGCONT the old leader proxied %d of 20 assigns" % served)
        w.skip.discard(lead)
        w.more(20, "through all three masters")
    finally:
        lead.resume()
        w.stop.set()
        w.join(10)
    check_no_duplicates_and_readable(w)


def test_filer_fails_over_to_the_next_master(cluster, pg):  # noqa: F811
    ms, peers, lead, v = ha_cluster(cluster, pg)
    # the leader first, so that its death is the filer's master failing under it
    order = [lead] + [m for m in ms if m is not lead]
    f = start_filer(cluster, lead, extra=["-master=" + ",".join(m.url for m in order)])
    data = {}
    for i in range(5):
        data["/ha/before-%d" % i] = os.urandom(5000 + i)
    for path, body in data.items():
        assert f.put(path, body).status_code in (200, 201)
    lead.kill9()
    rest = order[1:]
    wait_until(lambda: agreed_leader(rest), 20, "a new leader")
    for i in range(5):
        path, body = "/ha/after-%d" % i, os.urandom(7000 + i)
        # the filer asks the next master when the first is gone; a write may still meet
        # the moment before the volume server found the new leader
        wait_until(lambda: f.put(path, body).status_code in (200, 201), 20, "a write " + path)
        data[path] = body
    for path, body in data.items():
        r = f.get(path)
        assert r.status_code == 200 and r.content == body, path
    # the filer's own call to the master (its capacity) fails over too; the new leader
    # counts the files from the volume server's heartbeats
    wait_until(lambda: f.api("statfs", {})["files"] >= len(data), 20, "statfs of every file")


def test_benchmark_and_shell_take_the_list(cluster, pg):  # noqa: F811
    ms, peers, lead, v = ha_cluster(cluster, pg)
    # a dead master first in the list: both move on to the next
    dead = "127.0.0.1:%d" % free_port()
    p = subprocess.run([WEEDFS, "benchmark", "-master=%s,%s" % (dead, peers), "-n=300", "-c=4"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "master=%s" % lead.url in p.stdout
    p = subprocess.run([WEEDFS, "shell", "-master=%s,%s" % (dead, peers), "-c", "cluster.ps"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and v.url in p.stdout, p.stdout + p.stderr


def psql(pg, q):  # noqa: F811
    return pg.run([os.path.join(pg.bindir, "psql"), "-h", "127.0.0.1", "-p", str(pg.port), "-U",
                   "weedfs", "-d", "weedfs_test", "-v", "ON_ERROR_STOP=1", "-Atc", q]).stdout.strip()


def test_the_database_decides_who_leads(cluster, pg):  # noqa: F811
    """The lease row is the authority: taken away in the database, the leader stops at its
    next renewal and nobody assigns; given back, a master takes it in a new epoch."""
    ms, peers, lead, v = ha_cluster(cluster, pg)
    keys = [fid_key(assign(lead).json()["fid"]) for _ in range(5)]
    epoch = int(psql(pg, "SELECT epoch FROM weedfs_master_lease"))
    psql(pg, "UPDATE weedfs_master_lease SET holder = '127.0.0.1:1', epoch = epoch + 1, "
             "expires = now() + interval '1 hour'")
    wait_until(lambda: all(not status(m)["IsLeader"] and status(m)["Leader"] == "127.0.0.1:1"
                           for m in ms), 10, "every master following the holder in the database")
    for m in ms:
        assert assign(m, timeout=10).status_code >= 500  # proxied to a holder that is not there
    assert "is no longer the leader" in lead.log_text()
    # every key handed out lies below the next unreserved one
    assert int(psql(pg, "SELECT next_key FROM weedfs_master_sequence")) > max(keys)
    psql(pg, "UPDATE weedfs_master_lease SET expires = now()")
    again = wait_until(lambda: agreed_leader(ms), 10, "a leader again")
    assert int(psql(pg, "SELECT epoch FROM weedfs_master_lease")) == epoch + 2
    r = wait_until(lambda: (lambda r: r if r.status_code == 200 else None)(assign(again)), 20,
                   "an assignment in the new epoch")
    assert fid_key(r.json()["fid"]) > max(keys)


def test_switch_from_a_single_master(cluster, pg):  # noqa: F811
    """A single master's cluster moved to three masters: no key is handed out again."""
    ports = [free_port() for _ in range(3)]
    peers = ",".join("127.0.0.1:%d" % p for p in ports)
    single = cluster.master(port=ports[0])
    v = cluster.volume(single, extra=["-mserver=" + peers])
    old = []
    for _ in range(20):
        a = assign(single).json()
        assert requests.post("http://%s/%s" % (a["url"], a["fid"]), files={"file": ("f", b"x")},
                             timeout=5).status_code in (200, 201)
        old.append(fid_key(a["fid"]))
    single.stop()
    ms, _ = start_masters(cluster, pg, ports=ports)
    lead = wait_until(lambda: agreed_leader(ms), 20, "one agreed leader")
    r = wait_until(lambda: (lambda r: r if r.status_code == 200 else None)(assign(lead)), 20,
                   "an assignment from the new leader")
    assert fid_key(r.json()["fid"]) > max(old)
    assert "grew volume" not in lead.log_text()


def failing_master(cluster, extra):
    port = free_port()
    d = cluster.base / ("bad-master-%d" % port)
    d.mkdir()
    m = Daemon("master-%d" % port, ["master", "-ip=127.0.0.1", "-port=%d" % port,
                                    "-mdir=%s" % d] + extra, d, "127.0.0.1:%d" % port)
    cluster.daemons.append(m)
    m.start(wait=False)
    m.proc.wait(30)
    assert m.proc.returncode != 0
    return m.log_text()


def test_postgres_unreachable_at_start(cluster):
    dead = free_port()  # nothing listens there
    log = failing_master(cluster, ["-peers=127.0.0.1:1,127.0.0.1:2",
                                   "-postgres.dsn=host=127.0.0.1 port=%d user=x dbname=x" % dead])
    assert "could not connect to PostgreSQL" in log, log


def test_bad_peers(cluster):
    log = failing_master(cluster, ["-peers=127.0.0.1:1,nonsense", "-postgres.dsn=dbname=x"])
    assert 'invalid -peers: invalid master address "nonsense"' in log, log
    log = failing_master(cluster, ["-peers=127.0.0.1:1,127.0.0.1:2"])
    assert "-peers needs -postgres.dsn" in log, log
    log = failing_master(cluster, ["-postgres.dsn=dbname=x"])
    assert "-postgres.dsn needs -peers" in log, log


def test_bad_mserver_list(cluster):
    port = free_port()
    d = cluster.base / "bad-volume"
    d.mkdir()
    v = Daemon("volume-%d" % port, ["volume", "-ip=127.0.0.1", "-port=%d" % port,
                                    "-dir=%s" % d, "-mserver=127.0.0.1:1,:99"], d,
               "127.0.0.1:%d" % port)
    cluster.daemons.append(v)
    v.start(wait=False)
    v.proc.wait(30)
    assert v.proc.returncode != 0
    assert "invalid -mserver" in v.log_text()


def test_single_master_unchanged(cluster):
    m = cluster.master()
    st = status(m)
    assert st == {"IsLeader": True, "Leader": m.url, "Peers": []}
    assert os.path.exists(os.path.join(str(m.dir), "weedfs_master.seq"))
