"""Every Quarry setting at once, typed: a pydantic-settings `Settings` built from the catalogue.

Its fields are the catalogue's variables (`stores.settings.VARIABLES`, field = the name without
`QUARRY_`, lower case), each parsed by that variable's own reader, so a value means here what it
means to the code that reads it, and a bad one raises the same error. Kept apart from the
catalogue because importing pydantic-settings is slow (see `stores.settings`): import it where
every setting is wanted together (a report of the settings in force, a check of them all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, get_type_hints

from pydantic import BeforeValidator, Field, create_model
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from stores.settings import READERS, VARIABLES, Environ, Var


class _Base(BaseSettings):
    """Reads the environment when built; only the catalogue's names (QUARRY_HOME, not quarry_home)."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)


def _parser(var: Var, reader: Callable[[Environ | None], object]) -> Callable[[Any], object]:
    def parse(raw: Any) -> object:
        return reader({var.name: raw}) if isinstance(raw, str) else raw

    return parse


def _field(var: Var) -> tuple[Any, Any]:
    reader = READERS[var]
    kind = get_type_hints(reader)["return"]
    # NoDecode: the value is the variable's string as set (pydantic-settings would read a list as JSON)
    typed = Annotated[kind, NoDecode, BeforeValidator(_parser(var, reader))]  # type: ignore[valid-type]  # built at run time
    return typed, Field(default=reader({}), validation_alias=var.name, description=var.doc)


Settings: type[BaseSettings] = create_model(  # type: ignore[call-overload]
    "Settings", __base__=_Base, __doc__=__doc__, **{var.field: _field(var) for var in VARIABLES}
)


def current() -> Any:
    """The settings in force now (read from the environment at this call)."""
    return Settings()
