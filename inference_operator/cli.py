"""The ``inference-operator`` command line: ``demo``, ``crd``, ``trace view`` (and, on a cluster, ``run``).

Bad input of any kind (an option, a number out of range or not finite, a path that cannot be
read or written, a manifest that is malformed, oversized, an alias bomb or invalid) prints one
line on stderr naming the input and the problem, and exits with code 2, before any work starts
where it can be checked then. Exit code 1 is an outcome, not an input error: ``demo`` whose
objects did not become Ready, ``run`` that found no API server within --connect-timeout.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

from inference_operator.cliargs import (
    DEMO_SCENARIOS,
    OutputPathError,
    check_output,
    horizon,
    liveness_url,
    port,
    ready_after,
)
from inference_operator.core.process import limit_malloc_arenas, tune_gc
from inference_operator.core.text import one_line
from inference_operator.kube.config import LB_PROVIDERS, LOG_FORMATS, OperatorConfig
from inference_operator.manifests import Manifest


class UsageError(Exception):
    """A problem with what the user typed or pointed us at; exit code 2."""


class ClusterGone(Exception):
    """``run`` found no API server to talk to; exit code 1 (nothing the user typed was wrong)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help)")


def _check_output(path: str | None, flag: str) -> None:
    """An output path must be writable: say so before running anything."""
    if path is not None:
        try:
            check_output(path, flag)
        except OutputPathError as err:
            raise UsageError(str(err)) from None


def _cmd_demo(args: argparse.Namespace) -> int:
    from inference_operator.demo import ManifestRefused, run_manifest, run_scenarios, trace_paths
    from inference_operator.manifests import ManifestError, read_manifests

    tune_gc()  # the simulator holds every object several times over; see runtime.py
    # The simulated operator's account of its actions and events is the timeline's; left to
    # Python's last-resort handler, its warnings would land on stderr in the middle of the report.
    # The control loop's own (a pass that failed) still reach stderr.
    told = logging.getLogger("inference_operator.reconcile")
    if not any(isinstance(h, logging.NullHandler) for h in told.handlers):
        told.addHandler(logging.NullHandler())
    if args.trace is not None:
        names = [args.file] if args.file else list(args.scenario or DEMO_SCENARIOS)
        for path in trace_paths(args.trace, names).values():
            _check_output(path, "--trace")
    if args.cluster is not None and not args.file:
        raise UsageError("--cluster SNAPSHOT needs -f CHANGE: the change to simulate on that cluster")
    for flag, value in (("--horizon", args.horizon), ("--stop-after", args.stop_after)):
        if value is not None and args.cluster is None:
            raise UsageError(f"{flag} is for what-if runs: give it with -f CHANGE --cluster SNAPSHOT")
    if args.file:
        try:
            manifest = read_manifests(args.file)
            if args.cluster is not None:
                code = _what_if(args, manifest)
            else:
                code = run_manifest(manifest, sys.stdout, ready_after=args.ready_after, trace=args.trace)
        except (ManifestError, ManifestRefused) as err:
            raise UsageError(str(err)) from None
        if args.trace is not None:
            print(f"trace written to {args.trace}", file=sys.stderr)
        return code
    traced: dict[str, str] = {}
    failed = run_scenarios(args.scenario, sys.stdout, trace=args.trace, traced=traced)
    for name, path in traced.items():
        print(f"trace of {name} written to {path}", file=sys.stderr)
    if failed:
        print(f"{failed} scenario(s) failed their checks", file=sys.stderr)
    return 1 if failed else 0


def _what_if(args: argparse.Namespace, change: Manifest) -> int:
    """``demo -f CHANGE --cluster SNAPSHOT`` (see whatif/run.py); errors as ``demo -f``'s."""
    from inference_operator.whatif import DEFAULT_HORIZON, read_snapshot, run_whatif

    return run_whatif(
        change,
        read_snapshot(args.cluster),
        sys.stdout,
        ready_after=args.ready_after,
        stop_after=args.stop_after,
        horizon=DEFAULT_HORIZON if args.horizon is None else args.horizon,
        trace=args.trace,
    )


def _cmd_trace_view(args: argparse.Namespace) -> int:
    """Write (or with --serve, serve on 127.0.0.1) the trace viewer's page; see traceview.py."""
    from inference_operator.trace.view import ViewError, load_records, render_page, serve_page, write_page

    _check_output(args.output if args.output is not None else f"{args.file}.html", "-o")
    try:
        if args.serve:
            html = render_page(load_records(args.file), title=Path(args.file).name)
            if args.output is not None:
                Path(args.output).write_text(html, encoding="utf-8")
            try:
                serve_page(
                    html, port=args.port, ready=lambda url: print(f"serving {args.file} at {url} (Ctrl-C stops)")
                )
            except OSError as err:  # the port is taken, or not ours to bind
                raise UsageError(f"--port {args.port}: cannot listen on 127.0.0.1: {err.strerror or err}") from None
            return 0
        out = write_page(args.file, args.output)
    except ViewError as err:
        raise UsageError(str(err)) from None
    except OSError as err:  # the output not writable after all
        raise UsageError(f"{args.file}: {err.strerror or err}") from None
    print(f"viewer written to {out}", file=sys.stderr)
    return 0


def _cmd_crd(args: argparse.Namespace) -> int:
    from inference_operator.api.crd import crd_yaml

    _check_output(args.output, "-o")
    text = crd_yaml()
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as err:
            raise UsageError(f"-o {args.output}: cannot write: {err.strerror or err}") from None
    else:
        sys.stdout.write(text)
    return 0


RUN_FLAGS = {  # flag dest -> environment variable read by OperatorConfig
    "workers": "WORKERS",
    "resync_period": "RESYNC_SECONDS",
    "requeue_period": "REQUEUE_SECONDS",
    "lb_provider": "LB_PROVIDER",
    "lb_url": "LB_URL",
    "lb_timeout": "LB_TIMEOUT",
    "lb_ca_file": "LB_CA_FILE",
    "leader_election": "LEADER_ELECTION",
    "lease_namespace": "LEASE_NAMESPACE",
    "identity": "IDENTITY",
    "log_format": "LOG_FORMAT",
    "metrics_address": "METRICS_ADDRESS",
    "trace": "TRACE",
    "trace_max_bytes": "TRACE_MAX_BYTES",
    "trace_files": "TRACE_FILES",
    "connect_timeout": "CONNECT_TIMEOUT",
}


def flag_error(message: str, given: dict[str, str]) -> str:
    """A configuration error, naming the ``run`` flag when the bad value came from one
    (``given``: flag dest → the variable it set)."""
    for dest, env in given.items():
        if message.startswith(f"INFERENCE_OPERATOR_{env}="):
            return f"--{dest.replace('_', '-')}: {message}"
    return message


def _cmd_run(args: argparse.Namespace) -> int:
    import os

    from inference_operator.kube.config import ENV_PREFIX, ConfigError, OperatorConfig

    given: dict[str, str] = {}
    for dest, env in RUN_FLAGS.items():
        value = getattr(args, dest)
        if value is not None:
            os.environ[ENV_PREFIX + env] = str(value)
            given[dest] = env
    if args.namespace:
        os.environ[ENV_PREFIX + "NAMESPACES"] = ",".join(args.namespace)
    try:
        config = OperatorConfig.from_env()
    except ConfigError as err:
        raise UsageError(flag_error(str(err), given)) from None
    _find_cluster(config)

    import kopf

    from inference_operator import operator  # noqa: F401 - registers the handlers

    limit_malloc_arenas()
    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat[config.log_format.upper()], log_prefix=True)
    kopf.run(
        clusterwide=not config.namespaces,
        namespaces=list(config.namespaces),
        liveness_endpoint=args.liveness,
        standalone=True,
    )
    return 0


def _find_cluster(config: OperatorConfig) -> None:
    """Reach the API server before Kopf starts (see kube/preflight.py): a bad kubeconfig is a
    usage error (2), a server that does not answer within --connect-timeout exits 1."""
    from inference_operator.kube.client import USER_AGENT
    from inference_operator.kube.kubeconfig import KubeconfigError, load_credentials
    from inference_operator.kube.preflight import ClusterUnreachable, one_attempt, version_probe, wait_for_cluster
    from inference_operator.kube.transport import Transport

    try:
        transport = Transport(load_credentials(), user_agent=USER_AGENT, retries=one_attempt())
    except KubeconfigError as err:
        raise UsageError(str(err)) from None
    try:
        found = wait_for_cluster(
            transport.server,
            version_probe(transport),
            connect_timeout=config.connect_timeout,
            say=lambda line: print(line, file=sys.stderr),
        )
    except ClusterUnreachable as err:
        raise ClusterGone(str(err)) from None
    except KubeconfigError as err:  # the token file or the exec plugin failed
        raise UsageError(str(err)) from None
    finally:
        transport.close()
    print(f"found the API server at {found.host} {found.version}".rstrip(), file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:

    parser = _Parser(prog="inference-operator", description="Run GPU inference servers from InferenceService objects.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = sub.add_parser(
        "demo",
        help="run the control loop on the bundled simulator and print a timeline",
        description="Run the control loop on the bundled simulator and print a timeline. The simulator is a "
        "cluster of its own: Nodes, a scheduler, ReplicaSets and Pods, a Deployment controller with the real "
        "rollout arithmetic, kubelets. Its nodes, unless a manifest brings Nodes: two (sim-node-1, sim-node-2) "
        "with 8 nvidia.com/gpu each (96 cpu, 1Ti memory, 110 pods). Pods that fit nowhere stay Pending.",
    )
    demo.add_argument(
        "--scenario",
        action="append",
        choices=DEMO_SCENARIOS,
        help="run only this scenario (repeatable); default: all four",
    )
    demo.add_argument(
        "-f",
        "--file",
        help="simulate your own manifest instead ('-' for stdin): InferenceServices and what they need "
        "(Namespaces, ConfigMaps, Secrets), on the default nodes, or with Nodes beside them on those nodes; "
        "prints each pod on its node or Pending with the scheduler's words",
    )
    demo.add_argument(
        "--cluster",
        metavar="SNAPSHOT",
        help="what-if: simulate -f CHANGE on this cluster, the output of kubectl get nodes,pods,deployments,"
        "replicasets,inferenceservices -A -o yaml; prints the rollout it would do",
    )
    demo.add_argument(
        "--ready-after", type=ready_after, default=5.0, help="seconds pods take to become ready, 0-86400 (default 5)"
    )
    demo.add_argument(
        "--stop-after",
        type=ready_after,
        help="what-if: seconds a deleted pod takes to stop, 0-86400 (default: its whole grace period)",
    )
    demo.add_argument(
        "--horizon",
        type=horizon,
        help="what-if: simulated seconds to wait for the change to finish, 1-604800 (default 3600)",
    )
    demo.add_argument(
        "--trace",
        metavar="FILE",
        help="record what the control loop saw, decided and wrote to FILE (JSON lines, docs/trace-format.md); "
        "with several scenarios, one file each: FILE with the scenario's name before the suffix",
    )
    demo.set_defaults(func=_cmd_demo)

    run = sub.add_parser("run", help="run the operator against the cluster in KUBECONFIG (or in-cluster)")
    run.add_argument("-n", "--namespace", action="append", help="watch only this namespace (repeatable); default all")
    run.add_argument("--workers", type=int, help="reconcile worker threads (default 8)")
    run.add_argument("--resync-period", type=float, help="seconds between full resyncs, 0 to disable (default 300)")
    run.add_argument(
        "--requeue-period", type=float, help="seconds between checks while a rollout progresses (default 5)"
    )
    run.add_argument("--lb-provider", choices=LB_PROVIDERS, help="load balancer provider (default memory)")
    run.add_argument("--lb-url", help="base URL of the HTTP load balancer registry (with --lb-provider http)")
    run.add_argument("--lb-timeout", type=float, help="seconds per load balancer request (default 5)")
    run.add_argument(
        "--leader-election",
        choices=("true", "false"),
        help="only the holder of a Lease writes, other replicas wait warm (default true)",
    )
    run.add_argument("--lease-namespace", help="namespace of the leader Lease (default: POD_NAMESPACE, or default)")
    run.add_argument("--identity", help="this replica's name in the Lease, logs and user agent (default: POD_NAME)")
    run.add_argument(
        "--lb-ca-file",
        metavar="PEM",
        help="CA bundle for an https load balancer (default: the system's); the bearer token has no flag, "
        "since flags show in the process list: set INFERENCE_OPERATOR_LB_TOKEN",
    )
    run.add_argument("--log-format", choices=LOG_FORMATS, help="log format (default plain)")
    run.add_argument(
        "--metrics-address",
        help="serve Prometheus /metrics here, HOST:PORT (:PORT: 127.0.0.1 only), e.g. 0.0.0.0:9090 in a pod "
        "(default off)",
    )
    run.add_argument(
        "--trace",
        metavar="FILE",
        help="record the control loop into a ring of JSON-lines files FILE, FILE.1 … (docs/trace-format.md; "
        "env values redacted); default off",
    )
    run.add_argument("--trace-max-bytes", metavar="SIZE", help="bytes per trace file, e.g. 16Mi (default 16Mi)")
    run.add_argument("--trace-files", metavar="N", help="trace files kept, the newest first (default 4)")
    run.add_argument("--liveness", type=liveness_url, help="liveness endpoint, e.g. http://0.0.0.0:8080/healthz")
    run.add_argument(
        "--connect-timeout",
        metavar="SECONDS",
        help="wait this long for the API server at start, one line per failed attempt, then exit 1 "
        "(default 30; 0: one attempt)",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    run.set_defaults(func=_cmd_run)

    trace = sub.add_parser("trace", help="look at a recorded trace (docs/trace-format.md)")
    trace_sub = trace.add_subparsers(dest="trace_command", required=True, parser_class=_Parser)
    view = trace_sub.add_parser(
        "view", help="write the trace as one self-contained HTML page (a ring FILE, FILE.1 … is read whole)"
    )
    view.add_argument("file", metavar="FILE", help="a trace from demo --trace or run --trace")
    view.add_argument("-o", "--output", metavar="OUT.html", help="where to write the page (default: FILE.html)")
    view.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 until Ctrl-C, print its URL")
    view.add_argument("--port", type=port, default=0, help="port for --serve, 0-65535 (default 0: any free one)")
    view.set_defaults(func=_cmd_trace_view)

    crd = sub.add_parser("crd", help="print the CustomResourceDefinition generated from the API models")
    crd.add_argument("-o", "--output", help="write to this file instead of stdout")
    crd.set_defaults(func=_cmd_crd)

    from inference_operator.lb.registry import configure_parser as configure_registry_parser

    registry = sub.add_parser("lb-registry", help="run or inspect the reference load balancer registry")
    configure_registry_parser(registry, parser_class=_Parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code: int = args.func(args)
        return code
    except UsageError as err:  # one line, whatever the input it quotes holds
        print(f"error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except ClusterGone as err:
        print(f"error: {one_line(str(err))}", file=sys.stderr)
        return 1


def entrypoint() -> NoReturn:
    try:
        code = main()
        sys.stdout.flush()
    except KeyboardInterrupt:
        code = 130  # Ctrl-C: the shell's code for SIGINT, without a traceback
    except BrokenPipeError:  # `… | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    entrypoint()
