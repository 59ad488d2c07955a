"""Prefect flows: they orchestrate the plain functions of `pipelines` and hold no logic."""

import os

# Prefect's temporary server would otherwise try to send usage analytics at start-up (and, on a
# machine without network, log a failed write about it). Users can still turn them on.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
