"""Controller-runtime in miniature, knowing no InferenceService: the controller loop, the workqueue
and its waiting room and rate limits, queue hooks, metrics, Events, and the event handler."""
