"""Flow parameters: a month's settings and download options, carried as their own records.

Prefect stores and sends flow parameters as JSON: `BuildOptions` holds the settings
dataclasses themselves, written as their records (`MonthSettings.record()` with the
processes and whether an empty result is accepted, `DownloadOptions.record()`) and read back
by their `from_record`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, WithJsonSchema

from pipelines.monthly.settings import MonthSettings
from pipelines.sources.options import DownloadOptions


def _month_settings(value: object) -> MonthSettings:
    if isinstance(value, MonthSettings):
        return value
    if isinstance(value, Mapping):
        settings = MonthSettings.from_record(value, value.get("workers"))
        return replace(settings, allow_empty=bool(value.get("allow_empty", False)))
    raise ValueError(f"month settings must be MonthSettings or their record, not {value!r}")


def _month_record(settings: MonthSettings) -> dict[str, Any]:
    return {**settings.record(), "workers": settings.workers, "allow_empty": settings.allow_empty}


def _download_options(value: object) -> DownloadOptions:
    if isinstance(value, DownloadOptions):
        return value
    if isinstance(value, Mapping):
        return DownloadOptions.from_record(value)
    raise ValueError(f"download options must be DownloadOptions or their record, not {value!r}")


_RECORD = WithJsonSchema({"type": "object"})

#: The month's settings, as a parameter: their record in JSON (with the processes).
RecordedSettings = Annotated[
    MonthSettings, PlainValidator(_month_settings), PlainSerializer(_month_record), _RECORD
]
#: How sources are downloaded, as a parameter: their record in JSON.
RecordedDownload = Annotated[
    DownloadOptions,
    PlainValidator(_download_options),
    PlainSerializer(DownloadOptions.record),
    _RECORD,
]


class BuildOptions(BaseModel):
    """How a month is built (its settings) and how its source is downloaded."""

    model_config = ConfigDict(frozen=True)

    settings: RecordedSettings = Field(default_factory=MonthSettings)
    download: RecordedDownload = Field(default_factory=DownloadOptions)
    #: Seconds between progress lines in the flow's log.
    log_every: float = 30.0

    def record(self) -> dict[str, Any]:
        """Return the options as the JSON object a deployment stores for its runs."""
        return self.model_dump(mode="json")
