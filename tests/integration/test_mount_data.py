"""The mount's data path (mount/filer_rpc.c, mount/file_data.c) against real daemons.

Runs the C drivers tests/unit/test_mount_filer_rpc and tests/unit/test_mount_file_data
(built next to WEEDFS_BIN, or named by WEEDFS_MOUNT_RPC_TEST / WEEDFS_MOUNT_DATA_TEST)
with WEEDFS_TEST_FILER pointing at a live filer. The file_data driver also gets the PID
of the volume server, which it kills to check that a failed upload is an EIO from flush
with the data kept dirty.
"""

import os
import subprocess
from pathlib import Path

import pytest

from conftest import WEEDFS
from filer_fixtures import start_filer, start_mini_with_filer


def unit_binary(name, env_var):
    env = os.environ.get(env_var)
    if env:
        return env
    if not WEEDFS:
        return None
    p = Path(WEEDFS).parent / "tests" / "unit" / name
    return str(p) if p.is_file() else None


def run_tap(binary, env, timeout=600):
    r = subprocess.run([binary], env=dict(os.environ, **env), capture_output=True, text=True,
                       timeout=timeout)
    out = r.stdout + r.stderr
    failed = [line for line in out.splitlines() if line.startswith("not ok")]
    passed = [line for line in out.splitlines() if line.startswith("ok ")]
    for line in out.splitlines():
        if line.startswith("# file_data"):
            print(line)
    assert r.returncode == 0 and not failed, out
    return passed, out


def test_filer_rpc_against_a_filer(cluster):
    binary = unit_binary("test_mount_filer_rpc", "WEEDFS_MOUNT_RPC_TEST")
    if not binary:
        pytest.skip("tests/unit/test_mount_filer_rpc not built next to WEEDFS_BIN")
    _, f = start_mini_with_filer(cluster)
    passed, out = run_tap(binary, {"WEEDFS_TEST_FILER": f.url})
    # the real-filer part ran, not only the scripted-server part
    assert any("lookup / succeeds" in p for p in passed), out
    assert any("exclusive create again is EEXIST" in p for p in passed), out
    assert len(passed) >= 35, out


def test_file_data_against_a_cluster(cluster):
    binary = unit_binary("test_mount_file_data", "WEEDFS_MOUNT_DATA_TEST")
    if not binary:
        pytest.skip("tests/unit/test_mount_file_data not built next to WEEDFS_BIN")
    master = cluster.master()
    vol = cluster.volume(master)
    f = start_filer(cluster, master)
    env = {
        "WEEDFS_TEST_FILER": f.url,
        "WEEDFS_TEST_VOLUME_PID": str(vol.proc.pid),
        "WEEDFS_TEST_SPEED": "1",
    }
    passed, out = run_tap(binary, env)
    for name in ("model: a fresh file_data reads the model",
                 "model: the filer's GET serves the model",
                 "truncate: shrink then growth commits the whole list",
                 "inline: filer GET agrees",
                 "sparse: re-looked-up entry reads the tail",
                 "budget: every file reads back its model",
                 "reads: it fetched only its 4 KiB",
                 "failure: flush returns EIO",
                 "failure: and readable"):
        assert any(name in p for p in passed), "%s missing:\n%s" % (name, out)
    vol.proc.wait(timeout=10)
