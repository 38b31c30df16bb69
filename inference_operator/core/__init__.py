"""The ports and plain helpers every layer stands on: Backend, LoadBalancerProvider, Result, errors,
object helpers, clock, conditions, JSON copies, process tuning. Imports only api."""
