"""Prefect flows: they orchestrate the plain functions of `pipelines` and hold no logic."""

import os

# Prefect's temporary server would otherwise try to send usage analytics at start-up (and, on a
# machine without network, log a failed write about it). Users can still turn them on.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Nor does Prefect's client, on the command's own server (no PREFECT_API_URL): no usage events,
# and no first-run telemetry notice on the terminal, for a server nobody else sees. DO_NOT_TRACK
# is the client's switch; a user who sets it (to 0, say) keeps their choice.
if "PREFECT_API_URL" not in os.environ:
    os.environ.setdefault("DO_NOT_TRACK", "1")
