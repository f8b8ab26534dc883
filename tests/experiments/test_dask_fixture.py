"""The cluster of the dask fixtures is real: two worker processes, the ones the fixture started, on loopback only."""

from __future__ import annotations

import os
from urllib.parse import urlsplit


def test_two_workers_in_the_processes_the_fixture_started(dask_client, dask_processes):
    pids_by_address = dask_client.run(os.getpid)  # runs in each worker process
    workers = dask_client.scheduler_info()["workers"]

    assert len(pids_by_address) == len(workers) == 2
    assert os.getpid() not in pids_by_address.values()
    assert {info["name"]: pids_by_address[address] for address, info in workers.items()} == {
        name: pid for name, pid in dask_processes.items() if name.startswith("worker-")
    }
    assert {urlsplit(address).hostname for address in [*workers, dask_client.scheduler.address]} == {"127.0.0.1"}


def test_every_process_listens_on_loopback_only(dask_processes):
    import psutil  # a dependency of distributed: imported here, so that without it the fixture's message shows

    for name, pid in dask_processes.items():
        listening = {c.laddr.ip for c in psutil.Process(pid).net_connections("inet") if c.status == psutil.CONN_LISTEN}
        assert listening == {"127.0.0.1"}, name
