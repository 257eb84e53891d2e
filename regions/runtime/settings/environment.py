"""Reading the settings from the environment: unknown ``LB_*`` variables are refused, and a refusal
is described without the values given."""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping
from typing import get_origin

from pydantic import BaseModel, ValidationError

from regions.runtime.logs import protect_logs
from regions.runtime.settings.production import UnsafeSettingsError
from regions.runtime.settings.root import Mode, Settings


class UnknownSettingsError(ValueError):
    """The environment holds ``LB_*`` variables that name no setting."""


OPS_PREFIX = "LB_OPS_"


def _variables(model: type[BaseModel], prefix: str) -> tuple[set[str], set[str]]:
    """The variable names of a model's fields, and the prefixes of fields that take named entries
    (a mapping, or a section set field by field)."""
    names: set[str] = set()
    open_prefixes: set[str] = set()
    for name, info in model.model_fields.items():
        full = f"{prefix}{name.upper()}"
        names.add(full)
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            inner_names, inner_prefixes = _variables(kind, full + "__")
            names |= inner_names
            open_prefixes |= inner_prefixes
        elif get_origin(kind) is dict:
            open_prefixes.add(full + "__")
    return names, open_prefixes


def check_environment(environ: Mapping[str, str]) -> None:
    """Refuse ``LB_*`` variables that name no setting (names are case-insensitive, like the
    settings themselves); ``LB_OPS_*`` belong to the ops scripts and are let through."""
    names, open_prefixes = _variables(Settings, "LB_")
    unknown = sorted(
        variable
        for variable in (n.upper() for n in environ)
        if variable.startswith("LB_")
        and not variable.startswith(OPS_PREFIX)
        and variable not in names
        and not variable.startswith(tuple(open_prefixes))
    )
    if not unknown:
        return
    described = []
    for variable in unknown:
        close = difflib.get_close_matches(variable, names, n=1)
        described.append(f"{variable} (did you mean {close[0]}?)" if close else variable)
    raise UnknownSettingsError(
        f"unknown LB_* environment variables: {', '.join(described)}. Every LB_* variable is a setting "
        f"(see README, Settings); only {OPS_PREFIX}* variables, read by the ops scripts, are not. "
        f"Known settings: {', '.join(sorted(names))}"
    )


def describe_refusal(exc: Exception) -> str:
    """Why settings were refused, for a message: what was wrong with which setting, never the value
    given (pydantic's own text repeats every input, secrets included)."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    return "; ".join(
        f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"].removeprefix("Value error, ")
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    )


def load_settings(service: str | None = None) -> Settings:
    """Read the settings from the environment; call once per process, in ``__main__``. Raises
    ``UnknownSettingsError`` for an ``LB_*`` variable that names no setting, and
    ``UnsafeSettingsError`` when production mode gives ``service`` none of a secret it works with.
    From then on the process's logs mask every secret the settings hold, and the private-network
    opt-outs in use are logged as warnings."""
    check_environment(os.environ)
    settings = Settings()
    protect_logs(settings.secret_values())
    missing = settings.missing_secrets(service) if service and settings.mode is Mode.PRODUCTION else []
    if missing:
        raise UnsafeSettingsError(
            f"production mode: the {service} needs {', '.join(missing)}, which is not set"
        )
    for warning in settings.private_network_warnings():
        logging.getLogger("regions.runtime.settings").warning("UNSAFE IN PRODUCTION: %s", warning)
    return settings
