"""The fake API server: an in-process stand-in for kube-apiserver and everything it does to a request
(decoding, defaults, validation, server-side apply, the store, watches, namespaces, garbage collection,
custom resources with their schema and CEL rules)."""
