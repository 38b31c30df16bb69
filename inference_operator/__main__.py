"""``python -m inference_operator`` is the ``inference-operator`` command."""

from inference_operator.cli import entrypoint

entrypoint()
