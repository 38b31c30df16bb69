"""``python -m inference_operator`` is the ``inference-operator`` command."""

from .cli import entrypoint

entrypoint()
