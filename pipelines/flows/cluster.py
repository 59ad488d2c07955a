"""An existing Dask cluster, asked before any work: does it answer, and can its workers reach
the Prefect server the runs report to?

Without PREFECT_API_URL a command starts its own Prefect server on 127.0.0.1 and hands that
URL to the workers: it works when every worker runs on this machine, and nowhere else.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from pipelines.errors import ChesspipeError

#: Seconds to wait for the scheduler before saying it does not answer.
SCHEDULER_TIMEOUT = 10.0


@cache
def _own_addresses() -> frozenset[str]:
    """The addresses of this machine's network interfaces."""
    import psutil  # a dependency of distributed

    return frozenset(
        address.address.split("%", 1)[0]
        for addresses in psutil.net_if_addrs().values()
        for address in addresses
        if address.family in (socket.AF_INET, socket.AF_INET6)
    )


def is_this_machine(host: str) -> bool:
    """Tell whether a host name or address names this machine (loopback or one of its own)."""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return all(
        ipaddress.ip_address(str(address).split("%", 1)[0]).is_loopback
        or str(address) in _own_addresses()
        for address in found
    )


def worker_hosts(address: str, *, timeout: float = SCHEDULER_TIMEOUT) -> set[str]:
    """Return the hosts of a running cluster's scheduler and workers, failing in one line if
    the scheduler does not answer within `timeout` seconds."""
    with connected(address, timeout=timeout) as client:
        workers = client.scheduler_info(n_workers=-1)["workers"]
    return {urlsplit(found).hostname or found for found in [address, *workers]}


def check_cluster(address: str, *, local_server: str | None) -> None:
    """Ask the cluster at `address` once, before any work; with a Prefect server on this
    machine's loopback (`local_server`, None for a configured one), fail in one line if any of
    its workers runs elsewhere."""
    hosts = worker_hosts(address)
    if local_server is None:
        return
    elsewhere = sorted(host for host in hosts if not is_this_machine(host))
    if elsewhere:
        raise ChesspipeError(
            f"the Dask cluster at {address} runs on {', '.join(elsewhere)}, which cannot "
            f"reach this command's Prefect server ({local_server} on this machine's loopback): "
            "set PREFECT_API_URL to a Prefect server every worker reaches "
            "(prefect server start --host 0.0.0.0)"
        )


#: How many times a cluster's task is run again after its worker failed or died.
TASK_RETRIES = 2


@contextmanager
def cluster_executor(
    address: str | None, *, timeout: float = SCHEDULER_TIMEOUT
) -> Iterator[Executor | None]:
    """An executor of a running cluster's tasks (None without an address): a task whose
    worker fails or dies is run again (TASK_RETRIES times). A scheduler that does not answer
    fails in one line before any work."""
    if address is None:
        yield None
        return
    with connected(address, timeout=timeout) as client:
        yield client.get_executor(retries=TASK_RETRIES, pure=False)


@contextmanager
def connected(address: str, *, timeout: float = SCHEDULER_TIMEOUT) -> Iterator[Any]:
    """A distributed Client of the cluster at `address`, closed with the block; one line if
    the scheduler does not answer within `timeout` seconds."""
    try:
        from distributed import Client
    except ImportError:
        raise ChesspipeError(
            "--dask-address needs the dask extra: pip install 'chesspipe[dask]'"
        ) from None
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ChesspipeError(f"the Dask scheduler at {address} does not answer: {reason}") from None
    with client:
        yield client


@contextmanager
def cluster_of_this_task() -> Iterator[Executor]:
    """An executor of the Dask cluster this task runs on (a worker's client, the task seceded
    from the worker's threads while it waits): the units it submits run on every worker."""
    from distributed import worker_client

    try:
        client_block = worker_client()
        client = client_block.__enter__()
    except ValueError:
        raise ChesspipeError(
            "--split needs a Dask cluster: --dask-address or --dask-workers"
        ) from None
    try:
        yield client.get_executor(retries=TASK_RETRIES, pure=False)
    finally:
        client_block.__exit__(None, None, None)
