"""The fake API server: an in-process stand-in for kube-apiserver and everything it does to a request
(decoding, defaults, validation, server-side apply, the store, watches, namespaces, garbage collection,
custom resources with their schema and CEL rules).

``server`` is what requests do, ``writepath`` the path they share to the store (field
management, admission, commit), ``storedwrites`` the commit itself; where objects live, reads
and the request log are ``store``.
What a request turns into before it is stored is ``strategy`` (with ``defaults``,
``validation`` and ``podvalidation``), who owns which field is ``managedfields``, the garbage
collector is ``garbage``, watches are ``watch``, selectors ``selectors``; a request's URL
against its body is ``target``, with ``decoding``; namespaces (admission, deletion) are
``namespaces``; what a stored CRD's schema does to writes of its kind (pruning, defaults,
validation, CEL) is ``customresources``.
"""
