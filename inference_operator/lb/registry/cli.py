"""The registry's command line: ``serve`` and ``list``, also mounted under ``inference-operator lb-registry``.

Kept apart from the server so that running, signals and table printing do not crowd the code
that tests and the e2e suite drive directly. ``python -m inference_operator.lb.registry`` ends here.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import re
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

from inference_operator.core.bounds import argument
from inference_operator.core.files import InputFileError, check_regular_file, read_text_file
from inference_operator.core.ports import LoadBalancerError
from inference_operator.core.text import one_line
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry.server import DEFAULT_ADDRESS_TEMPLATE, RegistryServer, check_address_template
from inference_operator.lb.registry.state import RegistryStateError


def configure_parser(
    parser: argparse.ArgumentParser, *, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> None:
    """Add the ``serve`` and ``list`` subcommands to ``parser``; each sets ``func(args) -> int``."""
    sub = parser.add_subparsers(
        dest="registry_command", metavar="{serve,list}", required=True, parser_class=parser_class
    )
    serve = sub.add_parser("serve", help="run the registry until SIGINT or SIGTERM")
    serve.add_argument("--host", type=_host, default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=9090, help="port to bind, 0 for any free one (default 9090)")
    serve.add_argument("--state", type=_state_file, metavar="FILE", help="file keeping registrations across restarts")
    serve.add_argument("--fail-registers", type=_count, default=0, metavar="N", help="answer the next N PUTs with 503")
    serve.add_argument(
        "--fail-releases", type=_count, default=0, metavar="N", help="answer the next N DELETEs with 503"
    )
    serve.add_argument(
        "--address-template",
        type=_template,
        default=DEFAULT_ADDRESS_TEMPLATE,
        metavar="TEMPLATE",
        help="address given to new registrations (default %(default)s)",
    )
    serve.add_argument(
        "--token-file", type=_small_file, metavar="FILE", help="require 'Authorization: Bearer <the file's content>'"
    )
    serve.add_argument("--tls-cert", type=_small_file, metavar="PEM", help="serve https with this certificate (chain)")
    serve.add_argument("--tls-key", type=_small_file, metavar="PEM", help="the certificate's private key")
    serve.set_defaults(func=_cmd_serve)
    listing = sub.add_parser("list", help="print the registrations of a running registry")
    listing.add_argument("--url", type=_url, default="http://127.0.0.1:9090", help="registry URL (default %(default)s)")
    listing.add_argument(
        "--timeout",
        type=argument(low=0, high=600, above=True, unit="seconds"),
        default=5.0,
        help="seconds to wait for the answer, up to 600 (default 5)",
    )
    listing.add_argument("--token-file", type=_small_file, metavar="FILE", help="bearer token to send, from a file")
    listing.add_argument("--ca-file", type=_small_file, metavar="PEM", help="CA bundle for an https registry")
    listing.set_defaults(func=_cmd_list)


def _cmd_serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        server = RegistryServer(
            args.host,
            args.port,
            args.state,
            address_template=args.address_template,
            fail_registers=args.fail_registers,
            fail_releases=args.fail_releases,
            token=_read_token(args.token_file),
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
        )
        server.start()
        if not server.fault_endpoint:
            logging.getLogger(__name__).info(
                "Fault injection endpoint off: host=%s is not loopback and no --token-file was given", args.host
            )
    except (RegistryStateError, OSError, ValueError) as err:
        print(f"error: cannot start the registry on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 1
    stopping = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stopping.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stopping.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    try:
        client = HttpLoadBalancer(
            args.url, timeout=args.timeout, token=_read_token(args.token_file), ca_file=args.ca_file
        )
        registrations = client.list_registrations()
    except (LoadBalancerError, ValueError, OSError) as err:
        print(f"error: {one_line(str(err))}", file=sys.stderr)
        return 1
    rows = [("KEY", "ID", "ADDRESS", "TARGET")]
    # Escaped, whatever the client already checked: a terminal must never get a registry's control bytes.
    rows += [
        (one_line(key), one_line(reg.id), one_line(reg.address), one_line(reg.target))
        for key, reg in sorted(registrations.items())
    ]
    w0, w1, w2 = (max(len(row[i]) for row in rows) for i in range(3))
    for key, reg_id, address, target in rows:
        print(f"{key:<{w0}}   {reg_id:<{w1}}   {address:<{w2}}   {target}")
    return 0


def _read_token(path: Path | None) -> str | None:
    """The token in ``path`` (one line, surrounding whitespace dropped), None without a path."""
    if path is None:
        return None
    try:
        token = read_text_file(str(path), limit=MAX_SMALL_FILE_BYTES).strip()
    except InputFileError as err:
        raise ValueError(str(err)) from None
    if not token or "\n" in token:
        raise ValueError(f"the token file {path} must hold one non-empty line")
    return token


MAX_SMALL_FILE_BYTES = 1 << 20
"""Tokens, certificates, keys and CA bundles: a few KiB each."""


def _small_file(text: str) -> Path:
    """A file the command reads whole (token, PEM): regular (a FIFO would block the read,
    /dev/zero never end) and at most 1 MiB; checked when the arguments are parsed."""
    try:
        check_regular_file(text, limit=MAX_SMALL_FILE_BYTES)
    except InputFileError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return Path(text)


def _state_file(text: str) -> Path:
    """The state file: a regular file if it exists, else one its directory lets us create."""
    path = Path(text)
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"{text}: not a regular file")
    elif not path.absolute().parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: directory {path.absolute().parent} does not exist")
    return path


_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$"
)


def _host(text: str) -> str:
    """An address to bind: an IP address or a host name."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        if not _HOSTNAME.match(text):
            raise argparse.ArgumentTypeError(f"{text!r} is neither an IP address nor a host name") from None
    return text


def _url(text: str) -> str:
    """The registry's http(s) URL, its port (if any) in range."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError when out of range
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"{text!r}: must be an http:// or https:// URL with a host")
    return text


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return int(text)


def _template(text: str) -> str:
    try:
        return check_address_template(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit code 2 (argparse prints the usage too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _OneLineParser(
        prog="python -m inference_operator.lb.registry", description="The reference load balancer registry."
    )
    configure_parser(parser, parser_class=_OneLineParser)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
