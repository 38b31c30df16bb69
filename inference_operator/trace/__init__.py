"""The flight recorder: the Tracer seam, sinks, redaction, wrappers of the ports, and the viewer page."""
