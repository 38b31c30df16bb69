"""Write a one-layer OCI image archive (``FROM scratch`` + one static binary) without any tool.

Why this exists: the real node of the local cluster must never pull an image (this machine
has no registry access), so its sandbox (pause) image is built here from ``images/pause/``.
An image whose Containerfile is ``FROM scratch``, ``COPY <binary>``, ``ENTRYPOINT`` is just a
tar with one file plus three JSON documents; writing them directly needs no buildah storage,
no user namespaces and no root, is byte-for-byte reproducible (fixed mtimes, sorted keys),
and takes milliseconds. ``ctr -n k8s.io images import ARCHIVE`` reads the result; the name it
registers comes from the ``io.containerd.image.name`` annotation.

    python3 hack/oci_archive.py --binary pause --name localhost/inference-operator/pause:3.10 \
        --entrypoint /pause --user 65535:65535 --out pause.oci.tar

Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"


def _json(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _descriptor(media_type: str, blob: bytes) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(blob).hexdigest(), "size": len(blob)}


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.uid, info.gid = len(data), mode, 0, 0, 0
    archive.addfile(info, io.BytesIO(data))


def layer_of(binary: Path, path_in_image: str) -> bytes:
    """An uncompressed layer tar holding `binary` at `path_in_image`, mode 0755, owned by root."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as layer:
        _add(layer, path_in_image.lstrip("/"), binary.read_bytes(), 0o755)
    return buffer.getvalue()


def write_oci_archive(*, binary: Path, name: str, entrypoint: str, user: str, out: Path) -> str:
    """Write the archive to `out` (atomically) and return the manifest digest."""
    layer = layer_of(binary, entrypoint)
    config = _json(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": [entrypoint], "User": user},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
            "history": [{"created_by": f"COPY {binary.name} {entrypoint} (hack/oci_archive.py)"}],
        }
    )
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": _descriptor(OCI_CONFIG, config),
            "layers": [_descriptor(OCI_LAYER, layer)],
        }
    )
    manifest_descriptor = _descriptor(OCI_MANIFEST, manifest) | {
        "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]},
        "platform": {"architecture": "amd64", "os": "linux"},
    }
    index = _json(
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [manifest_descriptor]}
    )
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as archive:
        _add(archive, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
        _add(archive, "index.json", index)
        for blob in (layer, config, manifest):
            _add(archive, "blobs/sha256/" + hashlib.sha256(blob).hexdigest(), blob)
    partial.replace(out)
    return str(manifest_descriptor["digest"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a FROM-scratch, one-binary OCI image archive.")
    parser.add_argument("--binary", type=Path, required=True, help="the static binary to put in the image")
    parser.add_argument("--name", required=True, help="image reference, e.g. localhost/inference-operator/pause:3.10")
    parser.add_argument("--entrypoint", required=True, help="its path inside the image, e.g. /pause")
    parser.add_argument("--user", default="0:0", help="the image's USER (default 0:0)")
    parser.add_argument("--out", type=Path, required=True, help="the archive to write")
    args = parser.parse_args(argv)
    if not args.binary.is_file():
        print(f"error: {args.binary} is not a file; build it first", file=sys.stderr)
        return 1
    digest = write_oci_archive(
        binary=args.binary, name=args.name, entrypoint=args.entrypoint, user=args.user, out=args.out
    )
    print(f"wrote {args.out}: {args.name} {digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
