# First on a server's PYTHONPATH (bench/tracing.py's `none` server): the OpenTelemetry SDK and exporters cannot
# be imported, as if only the API (which FastAPI itself imports) were installed.
raise ImportError("the OpenTelemetry SDK is not installed (bench/tracing.py's 'none' server)")
