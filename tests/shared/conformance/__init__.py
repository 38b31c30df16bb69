"""The differential conformance suite: the same API operations on the FakeApiServer and on a real
kube-apiserver, outcomes compared after normalising what each server picks freely.

A check (:mod:`.registry`) is a small function that drives an :class:`~.recorder.Api`; every call
appends its outcome (status code, reason, the normalised object) to a trace. The test runs each
check on both backends (:mod:`.transports`) and asserts the traces are equal. The real server is
the referee; what the fake deliberately does not model is listed, with the reason, in
:mod:`.not_modelled` (and a listed check that starts agreeing fails, so the list cannot rot).
"""
