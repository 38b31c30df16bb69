"""The e2e harness's ports never come from the kernel's ephemeral range.

A port the harness picks for an operator's probe or metrics endpoint is bound by that operator
seconds later; a port from the ephemeral range can meanwhile be given to one of the suite's
outgoing connections, and the operator then never serves on it.
"""

from __future__ import annotations

import socket

from tests.e2e.harness import _LOW_PORTS, _ephemeral_ports, free_port


def test_free_ports_are_outside_the_ephemeral_range_distinct_and_bindable() -> None:
    ephemeral = _ephemeral_ports()
    ports = [free_port() for _ in range(50)]
    assert not [p for p in ports if p in ephemeral]
    assert len(set(ports)) == len(ports)
    for port in ports[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_port_in_use_is_skipped() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", free_port()))
        taken = held.getsockname()[1]
        once_round = [free_port() for _ in range(len(_LOW_PORTS) + 1)]  # the cycle comes back past it
        assert taken not in once_round
